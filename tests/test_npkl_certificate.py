"""The duality certificate and the adaptive rank of NPKL, checked against the exact SDP.

The gap bound must be valid (never below the true gap to the cvxpy optimum) at any
feasible point, tight after a converged fit, and must flag a rank-deficient fit; the
rank escalation must descend at the rate ``lambda_min(S)`` and the adaptive rank must
reach the SDP optimum from rank 1.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("cvxpy")

import psdlearn as pl  # noqa: E402
from psdlearn.graph import knn_laplacian  # noqa: E402
from psdlearn.npkl.certificate import (  # noqa: E402
    certify,
    dual_matrix,
    laplacian_lower_bound,
)
from psdlearn.npkl.escalation import escalate  # noqa: E402
from psdlearn.npkl.problem import LOSSES, NPKLProblem  # noqa: E402
from psdlearn.npkl.sdp import solve_sdp  # noqa: E402

pytestmark = pytest.mark.sdp

DELTA = 0.01
#: Relative gap that a converged fit must certify.
CONVERGED_GAP = 1e-4


def make_problem(loss, n=40, seed=2, gamma=1.0):
    """Three Gaussian blobs, their kNN Laplacian, 0.6 n must-link + 0.6 n cannot-link."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(scale=3.0, size=(3, 2))[y] + rng.normal(size=(n, 2))
    L = knn_laplacian(X, n_neighbors=5, delta=DELTA)
    iu, ju = np.triu_indices(n, k=1)
    same = y[iu] == y[ju]
    k = int(0.6 * n)
    must = rng.choice(np.flatnonzero(same), size=k, replace=False)
    cannot = rng.choice(np.flatnonzero(~same), size=k, replace=False)
    idx = np.sort(np.concatenate([must, cannot]))
    pairs = np.column_stack([iu[idx], ju[idx]]).astype(np.int64)
    signs = np.where(same[idx], 1.0, -1.0)
    return NPKLProblem(sp.csr_matrix(L), pairs, signs, loss, gamma, 1.0)


@pytest.fixture(scope="module")
def problems():
    """``{loss: (problem, f*)}`` with the SDP optimum from cvxpy."""
    out = {}
    for loss in LOSSES:
        problem = make_problem(loss)
        out[loss] = (problem, solve_sdp(problem).objective)
    return out


def _fit(problem, rank, seed=0, **kw):
    solver = "admm" if problem.loss == "pcp" else "bcd"
    y = np.column_stack([problem.pairs, problem.signs.astype(int)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pl.NPKL(loss=problem.loss, solver=solver, rank=rank, graph="precomputed",
                       tol=1e-8, max_iter=5000, random_state=seed,
                       **{"gamma": problem.gamma, **kw}).fit(problem.laplacian, y)


@pytest.mark.parametrize("loss", LOSSES)
def test_gap_bound_is_valid_at_random_points(problems, loss):
    problem, f_star = problems[loss]
    rng = np.random.default_rng(1)
    for rank in (1, 3, 10):
        for scale in (0.1, 1.0):
            E = scale * rng.standard_normal((problem.n_samples, rank)) / np.sqrt(rank)
            if loss == "linear":
                norms = np.linalg.norm(E, axis=1)
                E[norms > 1] /= norms[norms > 1, None]
            cert = certify(problem, E, laplacian_min_eig=DELTA)
            true_gap = problem.objective(E) - f_star
            assert cert.gap_bound >= true_gap - 1e-7 * abs(f_star)
            assert cert.lower_bound <= f_star + 1e-7 * abs(f_star)
            assert not cert.certified
            if loss == "hinge":  # weak duality holds for any alpha in the box
                alpha = rng.uniform(-0.5, 1.5, size=problem.n_constraints)  # clipped
                cert = certify(problem, E, [alpha, np.ones_like(alpha)],
                               laplacian_min_eig=DELTA)
                assert cert.lower_bound <= f_star + 1e-7 * abs(f_star)


@pytest.mark.parametrize("loss", LOSSES)
def test_converged_fit_is_certified_and_bound_valid(problems, loss):
    problem, f_star = problems[loss]
    model = _fit(problem, 8)
    cert = model.certificate_
    f = problem.objective(model.embedding_)
    assert cert.objective == pytest.approx(f, rel=1e-12)
    assert cert.gap_bound >= f - f_star - 1e-7 * abs(f_star)
    assert cert.relative_gap <= CONVERGED_GAP
    assert cert.certified
    assert cert.lambda_min >= -1e-4


@pytest.mark.parametrize("loss", LOSSES)
def test_rank_one_fit_is_not_certified(problems, loss):
    problem, f_star = problems[loss]
    model = _fit(problem, 1)
    cert = model.certificate_
    f = problem.objective(model.embedding_)
    assert f - f_star > 1e-2 * abs(f_star)  # the optimum has a higher rank here
    assert cert.lambda_min < 0
    assert not cert.certified
    assert cert.gap_bound >= f - f_star


@pytest.mark.parametrize("loss", LOSSES)
def test_adaptive_rank_reaches_sdp_optimum(problems, loss):
    problem, f_star = problems[loss]
    model = _fit(problem, "adaptive", rank_init=1)
    f = problem.objective(model.embedding_)
    assert (f - f_star) / abs(f_star) <= 1e-4
    ranks = [r for r, _ in model.rank_path_]
    assert ranks[0] == 1 and ranks == sorted(ranks) and ranks[-1] == model.rank_ > 1
    assert model.embedding_.shape[1] == model.rank_


def test_adaptive_with_admm_square(problems):
    problem, f_star = problems["square"]
    y = np.column_stack([problem.pairs, problem.signs.astype(int)])
    model = pl.NPKL(loss="square", solver="admm", rank="adaptive", rank_init=1,
                    graph="precomputed", gamma=1.0, tol=1e-8, max_iter=5000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(problem.laplacian, y)
    assert (problem.objective(model.embedding_) - f_star) / f_star <= 1e-4
    assert model.certificate_.certified


@pytest.mark.parametrize("loss", ["squared_hinge", "square", "linear", "pcp"])
def test_escalation_descends_at_rate_lambda_min(problems, loss):
    """``f([E, sqrt(s) u]) = f(E) + s u^T S u + O(s^2)``, and the chosen step descends."""
    problem, _ = problems[loss]
    E = _fit(problem, 1).embedding_
    cert, values, vectors = certify(problem, E, laplacian_min_eig=DELTA, n_eig=2,
                                    return_eigenvectors=True)
    assert values[0] < 0
    f0 = problem.objective(E)
    u = vectors[:, :1]
    S, _ = dual_matrix(problem, E)
    slope = float(u[:, 0] @ (S @ u[:, 0]))
    if loss != "linear":  # the ball of the linear loss may clip the new column
        s = 1e-6
        fd = (problem.objective(np.hstack([E, np.sqrt(s) * u])) - f0) / s
        assert fd == pytest.approx(slope, rel=1e-3, abs=1e-6)
    E_new, step = escalate(problem, E, values, vectors)
    assert step > 0 and E_new.shape[1] == 1 + int(np.sum(values < 0))
    assert problem.objective(E_new) < f0
    if loss == "linear":
        assert np.linalg.norm(E_new, axis=1).max() <= 1.0 + 1e-12


@pytest.mark.parametrize("loss", ["squared_hinge", "square", "pcp"])
def test_dual_matrix_is_the_gradient(problems, loss):
    """For the smooth losses ``S`` is ``grad f(K)``: check ``<S, H>`` by finite differences."""
    problem, _ = problems[loss]
    rng = np.random.default_rng(2)
    E = rng.standard_normal((problem.n_samples, 3)) / np.sqrt(3)
    S, _ = dual_matrix(problem, E)
    v = rng.standard_normal(problem.n_samples)
    eps = 1e-6
    # K + eps v v^T = [E, sqrt(eps) v] [E, sqrt(eps) v]^T
    fd = (problem.objective(np.column_stack([E, np.sqrt(eps) * v])) - problem.objective(E)) / eps
    assert fd == pytest.approx(float(v @ (S @ v)), rel=1e-4)


def test_laplacian_lower_bound_is_valid():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    L = knn_laplacian(X, n_neighbors=5, delta=DELTA)
    true = np.linalg.eigvalsh(L.toarray())[0]
    bound = laplacian_lower_bound(L)
    assert bound <= true + 1e-12
    assert bound >= 0.5 * DELTA  # positive: the Perron weights make it nearly tight
    # a Laplacian with a non-constant diagonal and positive off-diagonal entries
    A = sp.random(60, 60, density=0.1, random_state=0)
    M = (A + A.T + sp.diags(np.full(60, 3.0))).tocsr()
    assert laplacian_lower_bound(M) <= np.linalg.eigvalsh(M.toarray())[0] + 1e-12


def test_laplacian_lower_bound_is_tight_on_a_slowly_mixing_graph():
    # two blobs of different spread: 30 power steps leave the Gershgorin bound at 0.4 delta
    # (on the a9a graph they left it negative, the trace bound infinite and the gap NaN);
    # the Lanczos Perron vector makes it tight
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(250, 2)), 0.2 * rng.normal(size=(250, 2)) + [3.0, 0.0]])
    L = knn_laplacian(X, n_neighbors=5, delta=DELTA)
    bound = laplacian_lower_bound(L)
    assert bound <= np.linalg.eigvalsh(L.toarray())[0] + 1e-12
    assert bound >= 0.99 * DELTA


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "square"])
def test_certificate_without_trace_bound_is_not_nan(problems, loss):
    # lambda_min(L) <= 0 leaves no trace bound (tau = inf): the bound is -inf where S has a
    # negative part and finite where it has none, never NaN (inf * 0)
    problem, f_star = problems[loss]
    model = _fit(problem, 8)
    cert = certify(problem, model.embedding_, laplacian_min_eig=0.0)
    assert not np.isnan(cert.relative_gap)
    assert not np.isnan(cert.lower_bound)
    assert cert.lower_bound <= f_star + 1e-7 * abs(f_star)
    rng = np.random.default_rng(4)
    cert = certify(problem, rng.standard_normal((problem.n_samples, 2)),
                   laplacian_min_eig=0.0)
    assert not np.isnan(cert.relative_gap) and not cert.certified


def test_estimator_certificate_and_validation(problems):
    problem, _ = problems["square"]
    y = np.column_stack([problem.pairs, problem.signs.astype(int)])
    model = _fit(problem, 2)
    assert model.rank_path_ == [(2, model.certificate_.relative_gap)]
    d = model.certificate_.as_dict()
    assert set(d) >= {"lambda_min", "gap_bound", "relative_gap", "certified"}
    assert isinstance(d["certified"], bool)
    with pytest.raises(ValueError, match="adaptive"):
        pl.NPKL(loss="square", solver="sdp", rank="adaptive",
                graph="precomputed").fit(problem.laplacian, y)
    with pytest.raises(ValueError):
        pl.NPKL(rank_init=0, graph="precomputed").fit(problem.laplacian, y)


def test_certificate_can_be_skipped(problems):
    problem, _ = problems["square"]
    y = np.column_stack([problem.pairs, problem.signs.astype(int)])
    model = pl.NPKL(loss="square", rank=2, certificate_tol=None, graph="precomputed",
                    random_state=0).fit(problem.laplacian, y)
    assert model.certificate_ is None and model.rank_path_ == []
    with pytest.raises(ValueError, match="certificate_tol"):
        pl.NPKL(loss="square", rank="adaptive", certificate_tol=None,
                graph="precomputed").fit(problem.laplacian, y)


def test_protocol_records_certified_gap():
    """The reproductions' repetitions carry the certificate (the 'certified gap' column)."""
    from reproductions.experiments.protocol import certified_gap_cell, run_repetitions

    X, y = pl.datasets.load("soybean")
    recs = run_repetitions(X, y, n_neighbors=5, reps=2, loss="square", tol=1e-7)
    gaps = [r["certified_gap"] for r in recs]
    assert all(0 <= g <= 1e-4 for g in gaps)
    assert certified_gap_cell(recs) == f"{max(gaps):.1e} (2/2 <= 1e-4)"
    assert certified_gap_cell([{"certified_gap": None}]) == "-"


def test_ctrl_c_in_certificate_keeps_the_fit(problems, monkeypatch):
    from psdlearn._progress import FitInterruptedWarning
    from psdlearn.npkl import escalation

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # the certificate as each round of the fit calls it
    monkeypatch.setattr(escalation, "certify", interrupted)
    problem, _ = problems["square"]
    y = np.column_stack([problem.pairs, problem.signs.astype(int)])
    with pytest.warns(FitInterruptedWarning, match="certificate"):
        model = pl.NPKL(loss="square", rank="adaptive", graph="precomputed",
                        random_state=0).fit(problem.laplacian, y)
    assert model.certificate_ is None and model.converged_ is False
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)


def test_escalation_smoothing_is_the_huber_hinge():
    """The Moreau envelope of the kinked terms, built from the conjugate, is the Huber hinge
    ``gamma (u - mu / 2)`` for ``u = 1 - T K_ij > mu``, ``gamma u^2 / (2 mu)`` on
    ``[0, mu]``, 0 below."""
    from psdlearn.npkl.escalation import _smoothed_objective

    problem = make_problem("hinge")
    rng = np.random.default_rng(0)
    for scale in (0.05, 0.5, 3.0):
        E = scale * rng.standard_normal((problem.n_samples, 3))
        u = 1.0 - problem.signs * np.einsum("ij,ij->i", E[problem.pairs[:, 0]],
                                           E[problem.pairs[:, 1]])
        for mu in (1e-3, 0.3):
            huber = np.where(u > mu, u - 0.5 * mu, np.where(u > 0, u * u / (2 * mu), 0.0))
            expected = np.sum(E * (problem.laplacian @ E)) + problem.gamma * huber.sum()
            got = _smoothed_objective(problem, problem.terms(), E, mu)
            assert got == pytest.approx(expected, rel=1e-12)


def test_pcp_diagonal_trace_bound():
    """pcp's diagonal terms ``gamma / 2 (K_ii - 1)^2 <= f`` bound the trace by
    ``n + sqrt(2 n f / gamma)`` (Cauchy-Schwarz); the other losses have no such terms."""
    from psdlearn.npkl.certificate import _diagonal_trace_bound

    for gamma in (0.3, 2.0):
        terms = make_problem("pcp", gamma=gamma).terms()
        n, f = terms.n_samples, 7.5
        assert _diagonal_trace_bound(terms, f) == pytest.approx(
            n + np.sqrt(2.0 * n * f / gamma), rel=1e-14)
    for loss in ("hinge", "squared_hinge", "square", "linear"):
        assert _diagonal_trace_bound(make_problem(loss).terms(), 7.5) == np.inf


def test_block_without_fallback_is_all_or_nothing():
    """``fallback=False`` (the bound's block): the ``k`` smallest eigenvalues, each lowered
    by its residual, or nothing; never a partly converged block, which may have skipped an
    eigenvalue below its last value. A warm start changes only the speed."""
    from psdlearn.npkl.certificate import smallest_eigenpairs

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    L = knn_laplacian(X, n_neighbors=5, delta=DELTA)
    # a negative part of rank 6, as S has away from the optimum
    V = np.linalg.qr(rng.standard_normal((400, 6)))[0]
    S = sp.csr_matrix(L.toarray() - V @ np.diag(np.linspace(0.5, 0.05, 6)) @ V.T)
    true = np.linalg.eigvalsh(S.toarray())[:4]
    values, vectors = smallest_eigenpairs(S, 4, fallback=False)
    assert len(values) == 4 and vectors.shape == (400, 4)
    assert np.all(values <= true + 1e-12) and np.allclose(values, true, atol=1e-6)
    values, _ = smallest_eigenpairs(S, 4, fallback=False, maxiter=1, tol=1e-14)
    assert len(values) in (0, 4)
    assert np.all(values <= true[: len(values)] + 1e-12)
    warm, _ = smallest_eigenpairs(S, 1, v0=vectors[:, 0])
    assert warm[0] <= true[0] + 1e-12 and warm[0] == pytest.approx(true[0], abs=1e-6)


def test_uncertified_fit_warns_what_to_change():
    """A default fit whose certificate fails says which value to change, and the advice
    works: iris with the pairs of the design example is certified at the suggested tol."""
    from sklearn.exceptions import ConvergenceWarning

    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=0)
    # (seed 1: a start from which the default tol stops with a gap of about 1e-3)
    with pytest.warns(ConvergenceWarning, match=r"not certified: relative duality gap "
                      r"0\.00\d+ > certificate_tol=0\.0001 .* too loose for that gap: "
                      r"refit with tol=1e-07"):
        loose = pl.NPKL(random_state=1).fit(X, C)
        loose.certificate_  # noqa: B018 - where the fit defers it, the read warns
    assert loose.converged_ and not loose.certificate_.certified
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        tight = pl.NPKL(tol=1e-7, random_state=1).fit(X, C)
        assert tight.certificate_.certified
    rng = np.random.default_rng(0)
    yb = np.repeat(np.arange(3), 20)
    Xb = rng.normal(size=(60, 4)) * 0.6 + 3.0 * np.eye(3, 4)[yb]
    Cb = pl.PairwiseConstraints.from_labels(yb, n_must=15, n_cannot=15, random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"negative eigenvalue .* rank=1 is too "
                      r"small; refit with rank=9 or rank='adaptive'"):
        pl.NPKL(rank=1, random_state=0).fit(Xb, Cb).certificate_  # noqa: B018
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=5 before tol=1e-05: "
                      r"refit with max_iter=20"):
        pl.NPKL(max_iter=5, random_state=0).fit(Xb, Cb).certificate_  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert pl.NPKL(rank=1, certificate_tol=None, random_state=0).fit(
            Xb, Cb).certificate_ is None


@pytest.mark.parametrize("loss", ["hinge", "square"])
def test_rank_descent_is_the_decrease_along_the_ray(loss):
    """``rank_descent`` is the largest relative decrease of ``f(K + s u u^T)`` over
    ``s >= 0`` (against a brute-force search on a fine grid), and 0 along a direction that
    only raises ``f``."""
    from psdlearn.npkl.escalation import rank_descent
    from psdlearn.npkl.problem import NPKLProblem

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = np.repeat([0, 1, 2], 20)
    C = pl.PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    L = knn_laplacian(X, n_neighbors=5, delta=DELTA)
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), loss, 2.0)
    E = 0.3 * rng.normal(size=(60, 2))
    f0 = problem.objective(E)
    for u in (np.eye(3)[y] @ rng.normal(size=3), np.ones(60)):
        u = u / np.linalg.norm(u)
        got = rank_descent(problem, E, np.array([-1.0]), u[:, None])
        grid = np.linspace(0.0, 200.0, 20001)
        best = min(problem.objective(np.hstack([E, np.sqrt(s) * u[:, None]])) for s in grid)
        want = max(f0 - best, 0.0) / abs(f0)
        assert got >= 0.0 and got == pytest.approx(want, rel=1e-3, abs=1e-9)


def test_uncertified_hinge_fit_with_labels_advises_tol_not_rank():
    """glass with all its labels: the default hinge fit stops with a negative eigenvalue
    in its bound that lowers the objective by nothing along its direction (a residual of
    the solve; the same rank certifies at a smaller tol), so the warning advises tol, not
    rank."""
    from sklearn.exceptions import ConvergenceWarning

    X, y = pl.datasets.load("glass")
    with pytest.warns(ConvergenceWarning, match=r"negative eigenvalue .* lowers the "
                      r"objective by only .* a larger rank would not help\. .*refit with "
                      r"tol=") as record:
        model = pl.NPKL(random_state=0).fit(X, y)
    assert not any("too small" in str(w.message) for w in record)
    cert = model.certificate_
    assert cert.lambda_min < 0 and cert.rank_descent <= 1e-6


def test_screened_candidates_keep_the_best_bound(monkeypatch):
    """A hinge candidate is skipped only when a Rayleigh quotient shows that its
    single-eigenvalue bound cannot beat the best so far: the bound over all of BCD's
    stage multipliers equals the best of the candidates bounded one by one (the
    eigenvector block, which refines only the winner, is off in both)."""
    from psdlearn.npkl import certificate
    from psdlearn.npkl.bcd import initial_embedding, smoothing_schedule, solve_bcd

    monkeypatch.setattr(certificate, "N_BOUND_EIG", 1)
    problem = make_problem("hinge", n=300, seed=3)
    # the smoothing continuation at rank 3, each stage's multipliers a candidate: a low
    # rank leaves every candidate a gap
    E, candidates = initial_embedding(problem.n_samples, 3, 0), []
    for mu in smoothing_schedule("hinge"):
        res = solve_bcd(problem, E, smoothing=mu, random_state=0, max_iter=300)
        E = res.embedding
        candidates.append(res.multipliers)
    singles = [certify(problem, E, [a], laplacian_min_eig=DELTA) for a in candidates]
    best = max(c.lower_bound for c in singles)
    assert min(c.lower_bound for c in singles) < best - 1e-3 * abs(best)
    # equal up to the Lanczos accuracy, which certify keeps to 0.05 tol |f| (its starts
    # differ: each candidate's run starts from the last one's vector)
    slack = 0.05 * 1e-4 * abs(singles[0].objective)
    for order in (candidates, candidates[::-1]):  # the best first, then last
        together = certify(problem, E, order, laplacian_min_eig=DELTA)
        assert not together.certified
        assert best - slack <= together.lower_bound <= best + slack
