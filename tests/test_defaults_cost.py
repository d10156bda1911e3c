"""What the cheaper defaults keep: the scaled dictionary solver reaches the optimum of (7),
cross-validation fits each candidate once on all points, and a certificate past its time
budget is skipped with a note."""

import warnings

import numpy as np
import pytest

import psdlearn as pl
import psdlearn.npkl.certificate as certificate_module
from psdlearn.npkl import bcd
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


def test_cv_fits_each_candidate_on_the_folds_and_the_chosen_one_on_all_points(monkeypatch):
    X, y = two_blobs(n=90)
    yp = partial_labels(y, per_class=6)
    lambdas = [1e-2, 1.0, 1e2]
    calls = []
    solve = estimator_module.solve_dictionary

    def counting(prior, lam, data, **kwargs):
        calls.append((lam, kwargs.get("S_init") is not None))
        return solve(prior, lam, data, **kwargs)

    monkeypatch.setattr(estimator_module, "solve_dictionary", counting)
    g = pl.GeneralizedNystroem(n_landmarks=12, lambdas=lambdas, random_state=0).fit(X, yp)
    folds = 3 * estimator_module.CV_REPEATS
    assert g.lambda_selection_ == "cv" and np.all(np.isfinite(g.lambda_scores_))
    assert len(calls) == folds * len(lambdas) + 1
    # largest lambda first, cold; every later candidate's folds start from the last one's
    assert [lam for lam, _ in calls[:folds]] == [1e2] * folds
    assert not any(warm for _, warm in calls[:folds])
    assert all(warm for _, warm in calls[folds:-1])
    assert calls[-1] == (g.lambda_, False)
    assert g.lambda_scores_[lambdas.index(g.lambda_)] == g.lambda_scores_.max()


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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pl.NPKL(loss=loss, rank=4, random_state=0, tol=1e-7,
                           certificate_tol=None).fit(X, C)

    model = fit()
    plateau = bcd.FINAL_PLATEAU_FACTOR * bcd.DEFAULT_CERTIFICATE_TOL
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
