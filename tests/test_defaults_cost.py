"""What the cheaper defaults keep: the scaled dictionary solver reaches the optimum of (7),
the raced cross-validation chooses the exhaustive winner among the candidates it keeps,
and a certificate past its time budget is skipped with a note."""

import warnings

import numpy as np
import pytest

import psdlearn as pl
import psdlearn.npkl.certificate as certificate_module
from psdlearn.npkl import bcd
from psdlearn.nystroem import _cv as cv_module
from psdlearn.nystroem import estimator as estimator_module
from psdlearn.nystroem.dictionary import gradient, solve_dictionary
from tests._nystroem_problems import partial_labels, small_problem, two_blobs


@pytest.mark.parametrize("lam", [1e-5, 1e-2, 10.0])
def test_scaled_solver_meets_the_optimality_conditions_at_small_lambda(lam):
    """KKT of min_{S >= 0} J(S): S >= 0, G = grad J(S) >= 0 and <S, G> = 0. At lam = 1e-5
    the unscaled problem's condition number is about 1e9; the congruence-scaled iterations
    converge within the default max_iter."""
    _, _, prior, data = small_problem(m=12, n_lab=20, seed=3)
    res = solve_dictionary(prior, lam, data, max_iter=100, tol=1e-10)
    assert res.converged
    S = res.S
    G = gradient(S, prior, lam, data)
    # the gradient at S = 0 sets the scale: 2 (B + lam P)
    scale = 2.0 * np.linalg.norm(data.B + lam * prior)
    assert np.linalg.eigvalsh(S)[0] >= -1e-10 * np.abs(S).max()
    assert np.linalg.eigvalsh(0.5 * (G + G.T))[0] >= -1e-6 * scale
    assert abs(np.sum(S * G)) <= 1e-6 * scale * np.linalg.norm(S)


_SPLIT_SCORE = cv_module.split_score


def _cv_fit(monkeypatch, X, yp, lambdas, min_labelled):
    """A cv fit with racing from ``min_labelled`` labelled points; every split score, keyed
    by ``(lambda, split)``, recorded in call order."""
    monkeypatch.setattr(cv_module, "CV_RACE_MIN_LABELLED", min_labelled)
    calls = []

    def recording(prior, lam, fold, E_l, codes, rotated, f, **kwargs):
        value = _SPLIT_SCORE(prior, lam, fold, E_l, codes, rotated, f, **kwargs)
        calls.append(((lam, f), value))
        return value

    monkeypatch.setattr(cv_module, "split_score", recording)
    g = pl.GeneralizedNystroem(n_landmarks=20, lambdas=lambdas, lambda_selection="cv",
                               random_state=0).fit(X, yp)
    return g, calls


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_race_chooses_the_exhaustive_winner_among_the_candidates_it_keeps(monkeypatch,
                                                                                 seed):
    """The race's guarantee. Every split score depends on its candidate and split only, so
    the candidates kept after the first draw (the best CV_RACE_KEEP of its 3 splits, ties
    to the larger lambda) get the exhaustive search's scores exactly, the others NaN, and
    the chosen lambda is the exhaustive winner among the kept ones: the exhaustive
    winner itself whenever it is kept."""
    X, y = two_blobs(n=150, seed=seed)
    yp = partial_labels(y, per_class=12, seed=seed)
    lambdas = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 1e2]
    full, full_calls = _cv_fit(monkeypatch, X, yp, lambdas, min_labelled=10**9)
    raced, raced_calls = _cv_fit(monkeypatch, X, yp, lambdas, min_labelled=1)
    folds, keep = 3 * estimator_module.CV_REPEATS, cv_module.CV_RACE_KEEP
    assert len(full_calls) == folds * len(lambdas)
    assert len(raced_calls) == 3 * len(lambdas) + (folds - 3) * keep
    exhaustive = dict(full_calls)
    assert all(exhaustive[key] == value for key, value in raced_calls)
    first = {lam: np.mean([exhaustive[(lam, f)] for f in range(3)]) for lam in lambdas}
    kept = sorted(lambdas, key=lambda lam: (first[lam], lam), reverse=True)[:keep]
    scores = np.asarray(raced.lambda_scores_)
    np.testing.assert_array_equal(np.isfinite(scores), np.isin(lambdas, kept))
    for i, lam in enumerate(lambdas):
        if lam in kept:
            assert scores[i] == full.lambda_scores_[i]
    assert raced.lambda_ == max(kept, key=lambda lam: (full.lambda_scores_[lambdas.index(lam)],
                                                       lam))
    if full.lambda_ in kept:
        assert raced.lambda_ == full.lambda_
        np.testing.assert_array_equal(raced.dictionary_, full.dictionary_)


def test_few_labelled_points_score_every_candidate_on_every_split(monkeypatch):
    X, y = two_blobs(n=90)
    yp = partial_labels(y, per_class=6)
    lambdas = [1e-3, 1e-1, 10.0, 1e3]
    assert 12 < cv_module.CV_RACE_MIN_LABELLED
    g, calls = _cv_fit(monkeypatch, X, yp, lambdas, min_labelled=cv_module.CV_RACE_MIN_LABELLED)
    assert len(calls) == 3 * estimator_module.CV_REPEATS * len(lambdas)
    assert np.all(np.isfinite(g.lambda_scores_))
    assert g.lambda_ == max(lambdas, key=lambda lam: (g.lambda_scores_[lambdas.index(lam)],
                                                      lam))


@pytest.mark.parametrize("lam", [1e5, 1e-3])
def test_a_psd_closed_form_is_returned_as_the_optimum(lam):
    """closed_form_exit: the unconstrained minimizer (13) is the optimum when it is PSD
    (at a large lambda, near the PSD prior); the solver then returns it with no
    iteration. At a small lambda it is not PSD and the iterations run."""
    from psdlearn.nystroem.dictionary import closed_form_start, objective

    _, _, prior, data = small_problem(m=10, n_lab=15, seed=1)
    closed = closed_form_start(prior, lam, data)
    psd = np.linalg.eigvalsh(closed)[0] > 0
    assert psd == (lam > 1)  # both branches are exercised
    res = solve_dictionary(prior, lam, data, tol=1e-10, closed_form_exit=True)
    ref = solve_dictionary(prior, lam, data, tol=1e-10)
    assert ref.n_iter >= 1 and res.converged
    if psd:
        assert res.n_iter == 0 and res.step is None
        np.testing.assert_allclose(res.S, closed, rtol=0, atol=1e-10 * np.abs(closed).max())
        np.testing.assert_allclose(res.factor @ res.factor.T, res.S, rtol=0,
                                   atol=1e-10 * np.abs(closed).max())
        # the gradient vanishes there: no constraint is active
        G = gradient(res.S, prior, lam, data)
        assert np.abs(G).max() <= 1e-8 * np.linalg.norm(data.B + lam * prior)
    else:
        assert res.n_iter >= 1
    J = [objective(r.S, prior, lam, data) for r in (res, ref)]
    assert J[0] == pytest.approx(J[1], rel=1e-8)


@pytest.mark.parametrize("lam", [1e-3, 1.0])
def test_single_precision_projections_stay_psd_and_reach_the_optimum(lam):
    """projection_dtype=float32 (the fold fits): every iterate is PSD (B = F F^T in
    float64), J never increases, and the objective reaches that of the float64 solve to
    single precision."""
    from psdlearn.nystroem.dictionary import objective

    _, _, prior, data = small_problem(m=12, n_lab=20, seed=3)
    ref = solve_dictionary(prior, lam, data, max_iter=500, tol=1e-12)
    res = solve_dictionary(prior, lam, data, max_iter=500, tol=1e-12,
                           projection_dtype=np.float32)
    assert np.all(np.diff(res.objective_history) <= 0)
    assert np.linalg.eigvalsh(res.S)[0] >= -1e-12 * np.abs(res.S).max()
    J, J_ref = objective(res.S, prior, lam, data), objective(ref.S, prior, lam, data)
    assert J == pytest.approx(J_ref, rel=1e-5)


def test_numpy_order_keys_are_the_kernel_keys():
    """The NumPy keys of value_order add the same rounded products in the same order as
    the numba kernel: the same keys to the bit, ties (equal rows, signed zeros) included."""
    from psdlearn import _exact_knn as knn

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 17))
    ties = np.round(rng.normal(size=(300, 5)))  # many equal rows, and -0.0 products
    ties[::7] = -0.0
    for A in (X, ties, X[:, :1], rng.normal(size=(5000, 3)), np.empty((4, 0))):
        W = np.random.default_rng(knn._ORDER_SEED).standard_normal((A.shape[1],
                                                                     knn._ORDER_KEYS))
        np.testing.assert_array_equal(knn._numpy_keys(A, W), knn._project_dense(A, W))


def test_small_dense_fits_order_rows_without_numba(monkeypatch):
    """While its kernel is not loaded, value_order of a small dense matrix (the landmarks
    and folds of a small GeneralizedNystroem fit) is computed in NumPy: the numba kernel,
    whose first call in a process loads numba's compiler, is not called."""
    from psdlearn import _exact_knn as knn

    class Unloaded:
        signatures = []

    monkeypatch.setattr(knn, "_project_dense", Unloaded)
    X, y = two_blobs(n=90)
    model = pl.GeneralizedNystroem(n_landmarks=12, lambdas=[1e-2, 1.0], random_state=0)
    model.fit(X, partial_labels(y, per_class=6))
    assert np.isfinite(model.transform(X)).all()


def test_certificate_past_its_budget_is_skipped_with_a_note(monkeypatch):
    X, y = pl.datasets.make_two_gaussians(600, n_features=4, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    full = pl.NPKL(loss="square", rank=6, random_state=0).fit(X, C)
    assert full.certificate_.certified and full.certificate_.note == ""
    monkeypatch.setattr(certificate_module, "CERTIFICATE_MIN_SECONDS", 0.0)
    monkeypatch.setattr(certificate_module, "CERTIFICATE_SHARE", 1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a skipped bound does not warn "not certified"
        cut = pl.NPKL(loss="square", rank=6, random_state=0).fit(X, C)
    cert = cut.certificate_
    assert cert.note.startswith("skipped: the bound's eigen-solve passed its budget")
    assert not cert.certified and np.isnan(cert.relative_gap)
    assert cert.objective == pytest.approx(full.certificate_.objective, rel=1e-12)
    np.testing.assert_array_equal(cut.embedding_, full.embedding_)
    assert cert.as_dict()["note"] == cert.note


def test_fixed_rank_exact_hinge_stage_stops_on_a_plateau(monkeypatch):
    """At a fixed rank the exact hinge stage stops on the plateau of the final adaptive
    round (REFRESH sweeps lowering the objective by less than FINAL_PLATEAU_FACTOR *
    certificate_tol); the smoothed stages and the smooth losses keep the step test. On a
    run that crawls along the kinks it stops at the first flat window, where the
    objective is within that threshold of the run without the plateau."""
    X, y = pl.datasets.make_two_gaussians(300, n_features=5, random_state=1)
    C = pl.PairwiseConstraints.from_labels(y, n_must=100, n_cannot=100, random_state=1)
    calls = []
    solve = bcd.solve_bcd

    def recording(problem, E0, **kw):
        calls.append((problem.loss, kw["smoothing"], kw.get("plateau_tol")))
        return solve(problem, E0, **kw)

    monkeypatch.setattr(bcd, "solve_bcd", recording)

    def fit(loss="hinge"):
        # with a certificate: without one the five-sweep window stops the stage first
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pl.NPKL(loss=loss, rank=4, random_state=0, tol=1e-7,
                           certificate_tol=1e-4).fit(X, C)

    model = fit()
    plateau = bcd.FINAL_PLATEAU_FACTOR * 1e-4
    assert [c[2] for c in calls] == [None] * 4 + [plateau] and calls[-1][1] == 0.0
    calls.clear()
    fit("squared_hinge")
    assert calls and all(c[2] is None for c in calls)
    monkeypatch.setattr(bcd, "FINAL_PLATEAU_FACTOR", 0.0)  # no window decreases by < 0
    crawl = fit()
    stopped, full = model.smoothing_stages_[-1][1], crawl.smoothing_stages_[-1][1]
    assert model.smoothing_stages_[:-1] == crawl.smoothing_stages_[:-1]
    assert stopped % bcd.REFRESH == 0 and stopped < full
    f, f_full = model.objective(), crawl.objective()
    assert f_full <= f <= f_full * (1.0 + plateau)


def test_without_a_certificate_the_exact_hinge_stage_stops_on_a_five_sweep_window(
        monkeypatch):
    """Without a certificate the exact hinge stage also stops at the first sweep ``t``
    (from the fifth) where ``Phi_{t-5} - Phi_t < tol |Phi_t|``; the smoothed stages, the
    smooth losses and fits with a certificate do not get the window."""
    X, y = pl.datasets.make_two_gaussians(300, n_features=5, random_state=1)
    C = pl.PairwiseConstraints.from_labels(y, n_must=100, n_cannot=100, random_state=1)
    calls = []
    solve = bcd.solve_bcd

    def recording(problem, E0, **kw):
        calls.append((kw["smoothing"], kw.get("window_tol")))
        return solve(problem, E0, **kw)

    monkeypatch.setattr(bcd, "solve_bcd", recording)

    def fit(loss="hinge", certificate_tol=None, tol=1e-4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pl.NPKL(loss=loss, rank=4, random_state=0, tol=tol,
                           certificate_tol=certificate_tol).fit(X, C)

    model = fit()
    assert [c[1] for c in calls] == [None] * 4 + [1e-4] and calls[-1][0] == 0.0
    calls.clear()
    fit(certificate_tol=1e-4)
    assert all(c[1] is None for c in calls)
    calls.clear()
    fit("squared_hinge")
    assert calls and all(c[1] is None for c in calls)
    # the stage stopped where the window first fell below tol, before its change test
    n_exact = model.smoothing_stages_[-1][1]
    h = np.asarray(model.objective_history_[-(n_exact + 1):])  # the stage, from its start
    drop = h[:-5] - h[5:]  # drop[i]: the decrease over sweeps i + 1 .. i + 5
    assert n_exact >= 5 and drop[-1] < 1e-4 * abs(h[-1])
    assert np.all(drop[:-1] >= 1e-4 * np.abs(h[5:-1]))
    monkeypatch.setattr(bcd, "STALL_WINDOW", 10**6)  # no window: the step test alone
    assert fit().smoothing_stages_[-1][1] > n_exact


@pytest.mark.parametrize("stop_at", [2, 5])
def test_a_ctrl_c_in_the_search_keeps_the_best_candidate_with_a_complete_first_draw(
        monkeypatch, stop_at):
    """A Ctrl-C during the split fits: before any candidate has its first draw scored it
    propagates; after, lambda_ is the best of those candidates (the mean over their splits
    done), the others NaN, and the fit warns that it was interrupted."""
    from psdlearn._progress import FitInterruptedWarning

    X, y = two_blobs(n=90)
    yp = partial_labels(y, per_class=6)
    lambdas = [1e-2, 1.0, 1e2]
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == stop_at:
            raise KeyboardInterrupt
        return _SPLIT_SCORE(*args, **kwargs)

    monkeypatch.setattr(cv_module, "split_score", interrupted)
    g = pl.GeneralizedNystroem(n_landmarks=12, lambdas=lambdas, random_state=0)
    if stop_at <= 3:  # the largest candidate's first draw is not complete
        with pytest.raises(KeyboardInterrupt):
            g.fit(X, yp)
        return
    with pytest.warns(FitInterruptedWarning, match="interrupted"):
        g.fit(X, yp)
    # the first draw visits the largest lambda first: only 1e2 has its 3 splits
    assert g.lambda_ == 1e2 and g.converged_ is False
    assert np.isfinite(g.lambda_scores_[2]) and np.isnan(g.lambda_scores_[:2]).all()
