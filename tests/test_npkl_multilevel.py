"""The multilevel start of BCD (coarsening, prolongation, same optimum) and the stopping
rule of a stalled run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from psdlearn._solver import SolveOptions
from psdlearn.constraints import PairwiseConstraints
from psdlearn.datasets import make_two_gaussians
from psdlearn.graph import knn_laplacian
from psdlearn.npkl import _multilevel as ML
from psdlearn.npkl.bcd import STALL_WINDOW, initial_embedding, solve_bcd, stalled
from psdlearn.npkl.estimator import NPKL
from psdlearn.npkl.problem import NPKLProblem


def _graph(n, seed=0, k=8):
    X, y = make_two_gaussians(n, n_features=3, random_state=seed)
    return X, y, knn_laplacian(X, n_neighbors=k).tocsr()


def test_prolongation_has_one_unit_per_row_and_covers_every_aggregate():
    _, _, L = _graph(600)
    labels, n_c = ML.aggregate(L)
    P = ML.prolongation(labels, n_c)
    assert P.shape == (600, n_c)
    assert 1 < n_c < 300  # it coarsens
    np.testing.assert_array_equal(np.diff(P.indptr), np.ones(600))
    np.testing.assert_array_equal(P.data, np.ones(600))
    assert np.all(np.asarray(P.sum(axis=0)).ravel() >= 1)  # no empty aggregate
    # aggregates are connected through edges: each sample has a neighbour in its aggregate
    # or is alone in it
    A = (L != 0).astype(int) - sp.eye(600, dtype=int)
    same = np.asarray((A.multiply(labels[:, None] == labels[None, :])).sum(axis=1)).ravel()
    sizes = np.bincount(labels)
    assert np.all((same > 0) | (sizes[labels] == 1))


def test_coarse_laplacian_of_a_laplacian_is_a_laplacian():
    _, _, L = _graph(500, seed=1)
    W = -(L - sp.diags(L.diagonal()))  # the weights of the normalized graph
    Lcomb = (sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W).tocsr()  # D - W
    labels, n_c = ML.aggregate(L)
    P = ML.prolongation(labels, n_c)
    Lc = (P.T @ Lcomb @ P).toarray()
    np.testing.assert_allclose(Lc, Lc.T, atol=1e-12)
    np.testing.assert_allclose(Lc.sum(axis=1), 0.0, atol=1e-10)
    assert np.all(Lc - np.diag(np.diag(Lc)) <= 1e-12)  # nonnegative coarse weights
    assert np.linalg.eigvalsh(Lc).min() > -1e-9
    # and the coarse problem of the normalized Laplacian stays positive definite
    coarse = ML.coarse_problem(NPKLProblem(L, np.zeros((0, 2), np.int64), np.zeros(0),
                                           "square", 1.0), labels, n_c)
    assert np.linalg.eigvalsh(coarse.laplacian.toarray()).min() > 0


def test_coarse_objective_is_the_fine_objective_at_the_prolonged_point():
    _, y, L = _graph(400, seed=2)
    labels, n_c = ML.aggregate(L)
    rng = np.random.default_rng(0)
    pairs = np.sort(rng.choice(400, size=(60, 2)), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    signs = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1.0, -1.0)
    inside = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    for loss in ("square", "hinge", "squared_hinge", "linear"):
        fine = NPKLProblem(L, pairs, signs, loss, 2.0)
        coarse = ML.coarse_problem(fine, labels, n_c)
        assert coarse.n_constraints == np.count_nonzero(~inside)
        Ec = rng.standard_normal((n_c, 4)) * 0.3
        E = ML.prolong(labels, Ec)
        dropped = NPKLProblem(sp.csr_matrix((400, 400)), pairs[inside], signs[inside],
                              loss, 2.0).objective(E)
        np.testing.assert_allclose(coarse.objective(Ec) + dropped, fine.objective(E),
                                   rtol=1e-12)


def test_hierarchy_stops_at_the_coarsest_size():
    _, y, L = _graph(3000, seed=3)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    # a gamma far above every level's critical gamma_0: no level is left out for a zero
    # optimum (test_hierarchy_ends_before_a_level_whose_optimum_is_zero)
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), "square", 1e6)
    levels = ML.hierarchy(problem, rank=4, coarsest=100)
    sizes = [3000] + [lv.problem.n_samples for lv in levels]
    assert len(levels) >= 2
    assert all(b <= ML.MIN_REDUCTION * a for a, b in zip(sizes, sizes[1:], strict=False))
    assert all(s > 100 for s in sizes[:-1])  # no level coarsened past 100
    assert ML.hierarchy(problem, rank=4, coarsest=5000) == []
    assert ML.use_multilevel("auto", ML.MULTILEVEL_MIN_SAMPLES)
    assert not ML.use_multilevel("auto", ML.MULTILEVEL_MIN_SAMPLES - 1)
    assert ML.use_multilevel(True, 10) and not ML.use_multilevel(False, 10**9)


@pytest.mark.parametrize("loss", ["square", "hinge"])
def test_a_level_whose_optimum_is_zero_is_solved_at_the_ratio_of_the_level_above(loss):
    """Restricted to coarser piecewise-constant embeddings, the pairs buy less against the
    graph: the critical gamma_0 grows level by level. With gamma between two levels'
    gamma_0 the coarser level's solution at gamma is K = 0 (BCD empties it), a stationary
    start for the level above. That level is solved at a gamma raised above its gamma_0,
    to at most the ratio gamma / gamma_0 of the level above; a first coarse level at or
    below its gamma_0 ends the hierarchy."""
    from psdlearn.npkl.gamma import critical_gamma

    _, y, L = _graph(3000, seed=3)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    full = ML.hierarchy(NPKLProblem(L, C.pairs, C.signs.astype(float), loss, 1e6), 4,
                        coarsest=100)
    assert len(full) >= 2
    g0 = [critical_gamma(lv.problem.laplacian, lv.problem.pairs, lv.problem.signs, loss)
          for lv in full]
    assert g0[0] < g0[1]
    gamma = float(np.sqrt(g0[0] * g0[1]))
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), loss, gamma)
    levels = ML.hierarchy(problem, 4, coarsest=100)
    sizes = [lv.problem.n_samples for lv in levels]
    assert sizes[:2] == [full[0].problem.n_samples, full[1].problem.n_samples]
    assert levels[0].problem.gamma == gamma
    raised = levels[1].problem.gamma
    assert 1.0 < raised / g0[1] <= gamma / g0[0] * (1 + 1e-9)
    smoothing = 0.01 if loss == "hinge" else 0.0
    for weight, empty in ((gamma, True), (raised, False)):
        coarse = full[1].problem
        coarse = NPKLProblem(coarse.laplacian, coarse.pairs, coarse.signs, loss, weight)
        res = solve_bcd(coarse, initial_embedding(coarse.n_samples, 4, 0), max_iter=2000,
                        tol=1e-8, smoothing=smoothing)
        assert (np.mean(np.sum(res.embedding ** 2, axis=1)) < 1e-10) == empty
    below = NPKLProblem(L, C.pairs, C.signs.astype(float), loss, 0.9 * g0[0])
    assert ML.hierarchy(below, 4, coarsest=100) == []


def test_multilevel_start_through_a_raised_level_reaches_the_plain_optimum():
    from psdlearn.npkl.bcd import fit_bcd
    from psdlearn.npkl.gamma import critical_gamma
    from psdlearn.npkl.solvers import BCD_OPTIONS

    _, y, L = _graph(3000, seed=3)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    full = ML.hierarchy(NPKLProblem(L, C.pairs, C.signs.astype(float), "square", 1e6), 6,
                        coarsest=100)
    g0 = [critical_gamma(lv.problem.laplacian, lv.problem.pairs, lv.problem.signs,
                         "square") for lv in full[:2]]
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), "square",
                          float(np.sqrt(g0[0] * g0[1])))
    assert ML.hierarchy(problem, 6, coarsest=100)[1].problem.gamma > problem.gamma
    params = {**{key: default for key, (default, _) in BCD_OPTIONS.items()},
              "certificate_tol": None, "extrapolation": False}
    values = []
    for multilevel in (False, True):
        options = SolveOptions(max_iter=5000, tol=1e-9, random_state=np.random.RandomState(0),
                               params={**params, "multilevel": multilevel})
        with pytest.MonkeyPatch.context() as m:
            m.setattr(ML, "COARSEST", 100)
            res = fit_bcd(problem, initial_embedding(3000, 6, 0), options)
        assert res.converged
        assert (len(res.info["multilevel_levels"]) >= 2) == multilevel
        values.append(problem.objective(res.embedding))
    np.testing.assert_allclose(values[1], values[0], rtol=1e-6)


@pytest.mark.parametrize("loss", ["square", "hinge", "squared_hinge", "linear", "pcp"])
def test_pair_bound_is_at_most_lambda_max(loss):
    """Each pair's two-point vector is a feasible point of the Rayleigh quotient of
    (G, L), so the bound never exceeds lambda_max (dense generalized eigenvalues)."""
    from scipy.linalg import eigh

    from psdlearn.npkl.gamma import loss_gradient_matrix, pair_lambda_bound

    for seed in range(4):
        _, y, L = _graph(80, seed=seed, k=6)
        rng = np.random.default_rng(seed)
        pairs = np.unique(np.sort(rng.choice(80, size=(25, 2)), axis=1), axis=0)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        signs = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1.0, -1.0)
        G = loss_gradient_matrix(80, pairs, signs, loss)
        lam = eigh(G.toarray(), L.toarray(), eigvals_only=True)[-1]
        bound = pair_lambda_bound(L, G)
        assert 0 < bound <= lam * (1 + 1e-12)


def test_pair_bound_is_lambda_max_for_one_pair_of_equal_degrees():
    """L = 2 I, one pair: G's top eigenvector is e_i + sign e_j itself."""
    from psdlearn.npkl.gamma import critical_gamma, loss_gradient_matrix, pair_lambda_bound

    L = sp.identity(5, format="csr") * 2.0
    for sign in (1.0, -1.0):
        G = loss_gradient_matrix(5, np.array([[1, 3]]), np.array([sign]), "square")
        bound = pair_lambda_bound(L, G)
        np.testing.assert_allclose(bound, 1.0 / critical_gamma(L, [[1, 3]], [sign], "square"),
                                   rtol=1e-12)
    assert pair_lambda_bound(L, sp.csr_matrix((5, 5))) == 0.0


def test_hierarchy_keeps_a_level_by_the_pair_bound_without_an_eigen_solve(monkeypatch):
    """Far above every level's critical gamma the two-point vectors decide: no eigen-solve,
    and the same levels as the eigen-solve decides."""
    _, y, L = _graph(3000, seed=3)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), "hinge", 1e6)
    with monkeypatch.context() as m:
        m.setattr(ML, "pair_lambda_bound", lambda *a: 0.0)  # the eigen-solve decides
        exact = ML.hierarchy(problem, 4, coarsest=100)
    calls = []
    monkeypatch.setattr(ML, "critical_gamma", lambda *a, **k: calls.append(1))
    levels = ML.hierarchy(problem, 4, coarsest=100)
    assert calls == [] and len(levels) == len(exact) >= 2
    for a, b in zip(levels, exact, strict=True):
        np.testing.assert_array_equal(a.labels, b.labels)


@pytest.fixture(scope="module")
def two_gaussians():
    X, y = make_two_gaussians(2000, n_features=5, random_state=0)
    C = PairwiseConstraints.from_labels(y, n_must=60, n_cannot=60, random_state=0)
    return X, C


@pytest.mark.parametrize("loss", ["square", "squared_hinge", "linear", "hinge"])
def test_multilevel_start_reaches_the_plain_optimum(two_gaussians, loss, monkeypatch):
    X, C = two_gaussians
    monkeypatch.setattr(ML, "COARSEST", 150)
    hinge = loss == "hinge"
    fits = []
    for multilevel in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # certified, converged
            fits.append(NPKL(loss=loss, rank=8, n_neighbors=8, random_state=0, tol=1e-7,
                             max_iter=3000, certificate_tol=1e-3 if hinge else 1e-5,
                             solver_options={"multilevel": multilevel}).fit(X, C))
    plain, multi = fits
    assert plain.multilevel_levels_ == []
    assert len(multi.multilevel_levels_) >= 1
    assert all(n < 2000 for n, _ in multi.multilevel_levels_)
    assert multi.certificate_.certified and plain.certificate_.certified
    f0, f1 = plain.objective(), multi.objective()
    if hinge:  # a kinked loss: both within their certified gaps of the same optimum
        assert abs(f1 - f0) <= (plain.certificate_.gap_bound + multi.certificate_.gap_bound)
    else:
        assert abs(f1 - f0) <= 1e-6 * abs(f0)


def test_auto_is_off_below_the_threshold(two_gaussians):
    X, C = two_gaussians
    m = NPKL(loss="square", rank=4, random_state=0, certificate_tol=None).fit(X, C)
    assert m.solver_options_["multilevel"] == "auto"
    assert m.multilevel_levels_ == []
    with pytest.raises(ValueError, match="multilevel"):
        NPKL(solver_options={"multilevel": "yes"}).fit(X, C)


@pytest.mark.parametrize("loss", ["square", "hinge", "linear"])
def test_sweep_work_counts_each_row_by_its_partners(loss):
    """Sample 0 has 3 partners, sample 6 has 40 (a hinge row without the dense Hessian
    at rank 2), the others 1 or none."""
    L = knn_laplacian(make_two_gaussians(60, n_features=3, random_state=0)[0],
                      n_neighbors=5).tocsr()
    hub = np.column_stack([np.full(40, 6), np.arange(7, 47)])
    pairs = np.vstack([[[0, 1], [0, 2], [0, 3], [4, 5]], hub])
    signs = np.where(np.arange(len(pairs)) % 2 == 0, 1.0, -1.0)
    problem = NPKLProblem(L, pairs, signs, loss, 1.0)
    d = np.array([3, 1, 1, 1, 1, 1, 40] + [1] * 40)  # partners of samples 0-46
    hinge = np.where(d >= ML.MANY_PARTNERS, d * 2, d * d)
    per_row = {"square": d * np.minimum(d, 2), "hinge": hinge, "linear": d}[loss]
    graph, work = ML.sweep_work(problem, 2)
    assert graph == 2 * L.nnz
    assert work == 2 * per_row.sum()


def test_auto_leaves_the_coarse_levels_out_where_the_pairs_dominate(monkeypatch):
    """All the pairs of a few hundred labelled points cost more per sweep than the graph:
    every coarse level keeps them, so "auto" starts at the fine level; True still
    coarsens. With a few pairs "auto" coarsens."""
    from psdlearn.npkl.bcd import fit_bcd
    from psdlearn.npkl.solvers import BCD_OPTIONS

    monkeypatch.setattr(ML, "COARSEST", 150)
    monkeypatch.setattr(ML, "MULTILEVEL_MIN_SAMPLES", 1000)
    X, y, L = _graph(2000)
    params = {**{key: default for key, (default, _) in BCD_OPTIONS.items()},
              "certificate_tol": None, "extrapolation": False}
    labelled = np.flatnonzero(np.arange(2000) % 10 == 0)  # 200 points, 19,900 pairs
    iu, ju = np.triu_indices(len(labelled), 1)
    pairs = np.column_stack([labelled[iu], labelled[ju]])
    signs = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1.0, -1.0)
    few = PairwiseConstraints.from_labels(y, 20, 20, random_state=0)
    for (p, t), dominate in (((pairs, signs), True), ((few.pairs, few.signs), False)):
        problem = NPKLProblem(L, p, np.asarray(t, dtype=np.float64), "square", 1.0)
        assert ML.pairs_dominate(problem, 6) == dominate
        for setting, coarse in (("auto", not dominate), (True, True)):
            res = fit_bcd(problem, initial_embedding(2000, 6, 0),
                          SolveOptions(max_iter=3, tol=1e-4,
                                       random_state=np.random.RandomState(0),
                                       params={**params, "multilevel": setting}))
            assert bool(res.info["multilevel_levels"]) == coarse


def test_stalled_extrapolates_the_remaining_decrease():
    # a geometric run f_t = 1 + q^t: the tail after f3 is d2 q / (1 - q) = q^3
    q = 0.5
    f = [1 + q**t for t in range(4)]
    tail = (f[2] - f[3]) * q / (1 - q)
    np.testing.assert_allclose(tail, q**3)
    assert stalled(f, 100, 1.01 * tail / f[3])
    assert not stalled(f, 100, 0.99 * tail / f[3])
    # a fast first window does not make the tail look short: the larger ratio counts
    g = [1e6, 1 + q, 1 + q**2, 1 + q**3]
    assert not stalled(g, 100, 0.99 * tail / g[3])
    # not slowing down: the budget of windows bounds it
    assert stalled([4.0, 3.0, 2.0, 1.0], 2, 2.01) and not stalled([4.0, 3.0, 2.0, 1.0], 2, 1.99)
    assert stalled([2.0, 1.5, 1.0, 1.0], 100, 0.0)  # the last window lowered nothing


def test_stall_rule_stops_a_stalled_run():
    _, y, L = _graph(800, seed=4)
    C = PairwiseConstraints.from_labels(y, n_must=30, n_cannot=30, random_state=0)
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), "square", 5.0)
    E0 = initial_embedding(800, 4, 0)
    done = solve_bcd(problem, E0, tol=1e-9, max_iter=3000, random_state=0)
    # from its own optimum with tol = 0 the change test never holds: without the rule it
    # runs to max_iter, with it it stops after the first three windows
    flat = solve_bcd(problem, done.embedding, tol=0.0, max_iter=300, random_state=0)
    assert flat.n_iter == 300 and not flat.converged
    stop = solve_bcd(problem, done.embedding, tol=0.0, max_iter=300, random_state=0,
                     stall_tol=1e-5)
    assert stop.converged and stop.n_iter == 3 * STALL_WINDOW
    np.testing.assert_allclose(stop.objective_history[-1], flat.objective_history[-1],
                               rtol=1e-9)
    # a run still descending fast is not stopped by it
    run = solve_bcd(problem, E0, tol=1e-9, max_iter=3000, random_state=0, stall_tol=1e-12)
    assert run.n_iter > 3 * STALL_WINDOW
    assert run.objective_history[-1] <= done.objective_history[-1] * (1 + 1e-9)


@pytest.mark.parametrize("stall_tol", [1e-6, 1e-8])
def test_stall_rule_stops_within_its_tolerance_of_the_optimum(stall_tol):
    # the rule stops where the extrapolated remaining decrease reaches stall_tol, so the
    # objective is within a small multiple of stall_tol of the optimum (relative), and no
    # earlier than needed
    _, y, L = _graph(1500, seed=6)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), "square", 5.0)
    E0 = initial_embedding(1500, 4, 0)
    ref = solve_bcd(problem, E0, tol=0.0, max_iter=2000, random_state=0)
    f_star = min(ref.objective_history)
    excess = (np.asarray(ref.objective_history) - f_star) / abs(f_star)
    stop = solve_bcd(problem, E0, tol=0.0, max_iter=2000, random_state=0, stall_tol=stall_tol)
    assert stop.converged and 3 * STALL_WINDOW <= stop.n_iter < 2000
    assert stop.objective_history[-1] <= f_star * (1 + 10 * stall_tol)
    # the same sweeps as the run without the rule, up to the stop
    np.testing.assert_allclose(stop.objective_history, ref.objective_history[:stop.n_iter + 1],
                               rtol=1e-12)
    # it did not stop long before the excess reached its tolerance
    assert stop.n_iter >= np.flatnonzero(excess > 100 * stall_tol)[-1]


def test_an_interrupted_level_ends_the_start_with_its_iterate_prolonged():
    _, y, L = _graph(3000, seed=5)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    # a gamma far above every level's critical gamma_0: no level is left out for a zero
    # optimum (test_hierarchy_ends_before_a_level_whose_optimum_is_zero)
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), "square", 1e6)
    calls = []

    def solve(coarse, E, level):
        calls.append(coarse.n_samples)
        assert level == (1, len(ML.hierarchy(problem, 4, coarsest=100)))
        return E + 1.0, 7, True  # the first (coarsest) level is interrupted

    E0 = initial_embedding(3000, 4, 0)
    E, levels, interrupted = ML.multilevel_start(problem, E0, solve, coarsest=100)
    assert interrupted and len(calls) == 1 and levels == [(calls[0], 7)]
    hierarchy = ML.hierarchy(problem, 4, coarsest=100)
    assert calls[0] == hierarchy[-1].problem.n_samples
    # the coarsest iterate prolonged through every level to the fine one
    assert len(hierarchy) >= 2 and E.shape == (3000, 4)
    Ec = E0[:calls[0]] + 1.0
    for level in reversed(hierarchy):
        Ec = ML.prolong(level.labels, Ec)
    np.testing.assert_array_equal(E, Ec)


def test_adaptive_rank_with_the_multilevel_start_is_certified(two_gaussians, monkeypatch):
    X, C = two_gaussians
    monkeypatch.setattr(ML, "COARSEST", 150)
    fits = [NPKL(loss="square", rank="adaptive", n_neighbors=8, random_state=0, tol=1e-7,
                 solver_options={"multilevel": multilevel}).fit(X, C)
            for multilevel in (False, True)]
    plain, multi = fits
    assert len(multi.multilevel_levels_) >= 1 and multi.certificate_.certified
    assert abs(multi.objective() - plain.objective()) <= (
        plain.certificate_.gap_bound + multi.certificate_.gap_bound)


def test_a_verbose_fit_shows_each_coarse_level(capsys):
    """The coarse levels' sweeps come before the fine solve's first sweep (minutes at 10^7
    points): each has a bar of its own, named by its place and size."""
    X, y = make_two_gaussians(6000, n_features=3, random_state=0)
    C = PairwiseConstraints.from_labels(y, n_must=50, n_cannot=50, random_state=0)
    model = NPKL(loss="square", rank=4, verbose=1, random_state=0, certificate_tol=None,
                 solver_options={"multilevel": True}).fit(X, C)
    err = capsys.readouterr().err
    assert len(model.multilevel_levels_) >= 1
    for i, (n_c, sweeps) in enumerate(model.multilevel_levels_, start=1):
        head = f"NPKL bcd, coarse level {i}/{len(model.multilevel_levels_)} ({n_c:,} samples)"
        assert head in err
        assert f"{sweeps}/1000" in err.split(head)[-1]


def test_coarse_laplacian_is_the_galerkin_product():
    _, _, L = _graph(700, seed=3)
    labels, n_c = ML.aggregate(L)
    P = ML.prolongation(labels, n_c)
    Lc = ML.galerkin(L, labels, n_c)
    expected = (P.T @ L @ P).tocsr()
    expected.sort_indices()
    assert Lc.has_sorted_indices and Lc.shape == (n_c, n_c)
    assert np.all(np.diff(Lc.indices[Lc.indptr[0]:Lc.indptr[1]]) > 0)  # no duplicates
    np.testing.assert_array_equal(Lc.indptr, expected.indptr)
    np.testing.assert_array_equal(Lc.indices, expected.indices)
    np.testing.assert_allclose(Lc.data, expected.data, rtol=1e-13, atol=1e-15)
    # a single aggregate sums every entry; singletons keep L itself
    one = ML.galerkin(L, np.zeros(700, dtype=np.int64), 1)
    np.testing.assert_allclose(one.toarray(), [[L.sum()]], rtol=1e-12)
    same = ML.galerkin(L, np.arange(700), 700)
    np.testing.assert_allclose(same.toarray(), L.toarray(), rtol=0, atol=0)


def test_owned_start_is_swept_in_place_and_a_given_one_is_not(two_gaussians, monkeypatch):
    from dataclasses import replace

    from psdlearn.npkl.bcd import fit_bcd

    monkeypatch.setattr(ML, "COARSEST", 150)
    X, C = two_gaussians
    L = knn_laplacian(X, n_neighbors=8).tocsr()
    problem = NPKLProblem(L, C.pairs, C.signs.astype(np.float64), "square", 5.0)
    from psdlearn.npkl.solvers import BCD_OPTIONS

    params = {**{key: default for key, (default, _) in BCD_OPTIONS.items()},
              "certificate_tol": None}
    for multilevel in (False, True):
        base = SolveOptions(max_iter=30, tol=1e-4, random_state=np.random.RandomState(0),
                            params={**params, "multilevel": multilevel,
                                    "extrapolation": False})
        E0 = initial_embedding(2000, 6, 0)
        given = fit_bcd(problem, E0.copy(), base)
        start = E0.copy()
        owned = fit_bcd(problem, start, replace(base, owns_start=True,
                                                random_state=np.random.RandomState(0)))
        # the same iterates, in the caller's array when it gave the start away
        assert owned.embedding is start
        np.testing.assert_array_equal(owned.embedding, given.embedding)
        assert bool(owned.info["multilevel_levels"]) == multilevel
        kept = E0.copy()
        fit_bcd(problem, kept, replace(base, random_state=np.random.RandomState(0)))
        np.testing.assert_array_equal(kept, E0)  # a start not given away is not written


def test_same_seed_gives_the_same_fit_with_the_multilevel_start(monkeypatch):
    # the coarse levels' relaxation factor comes from a Lanczos run (their Laplacian has
    # no constant diagonal): with ARPACK's own random start it changed from call to call
    monkeypatch.setattr(ML, "COARSEST", 150)
    X, y = make_two_gaussians(1500, n_features=4, random_state=1)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    fits = [NPKL(loss="square", rank=5, random_state=0, certificate_tol=None,
                 solver_options={"multilevel": True}).fit(X, C) for _ in range(2)]
    assert len(fits[0].multilevel_levels_) >= 1
    np.testing.assert_array_equal(fits[0].embedding_, fits[1].embedding_)


@pytest.mark.parametrize("loss", ["square", "hinge"])
def test_coarse_levels_stop_at_their_tolerance(loss, monkeypatch):
    # an unsmoothed coarse level is the restriction of the problem itself and is solved
    # to COARSE_TOL_FACTOR * tol; the hinge's smoothed one is a start for the
    # continuation, stopped like its smoothed stages; the fine level runs to tol
    import psdlearn.npkl.bcd as B

    X, y = make_two_gaussians(12_000, random_state=0)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    calls = []
    solve = B.solve_bcd

    def record(problem, E0, **kw):
        res = solve(problem, E0, **kw)
        calls.append((problem.n_samples, kw["tol"], kw["smoothing"], res.n_iter,
                      res.converged))
        return res

    monkeypatch.setattr(B, "solve_bcd", record)
    m = NPKL(loss=loss, rank=4, tol=1e-4, random_state=0, certificate_tol=None).fit(X, C)
    coarse = [c for c in calls if c[0] < 12_000]
    assert m.multilevel_levels_ and len(coarse) == len(m.multilevel_levels_)
    factor = B.COARSE_TOL_FACTOR if loss == "square" else B.SMOOTHING_TOL_FACTOR
    for _, tol, mu, n_iter, converged in coarse:
        assert (mu > 0) == (loss == "hinge")
        assert tol == pytest.approx(1e-4 * factor) and converged and n_iter < m.max_iter
    assert B.COARSE_TOL_FACTOR < B.SMOOTHING_TOL_FACTOR
    exact = [c for c in calls if c[0] == 12_000 and c[2] == 0.0]
    assert exact and exact[-1][1] == pytest.approx(1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_coarse_levels_sweep_in_single_precision_and_prolong_to_the_fit_type(
        two_gaussians, dtype, monkeypatch):
    from psdlearn.npkl import bcd
    from psdlearn.npkl.solvers import BCD_OPTIONS

    monkeypatch.setattr(ML, "COARSEST", 150)
    X, C = two_gaussians
    L = knn_laplacian(X, n_neighbors=8).tocsr()
    problem = NPKLProblem(L, C.pairs, C.signs.astype(np.float64), "square", 5.0)
    seen = []

    def solve(coarse, E, level):
        E, n_iter, interrupted = bcd._coarse_solve(
            coarse, E, level, options=SolveOptions(
                max_iter=20, tol=1e-4, random_state=np.random.RandomState(0),
                params={key: default for key, (default, _) in BCD_OPTIONS.items()}),
            schedule=[0.0], stall=1e-12)
        seen.append(E)
        return E, n_iter, interrupted

    E0 = initial_embedding(problem.n_samples, 5, 0).astype(dtype)
    E, levels, _ = ML.multilevel_start(problem, E0, solve)
    assert levels and all(Ec.dtype == bcd.COARSE_DTYPE for Ec in seen)
    assert E.dtype == dtype
    # the prolongation is P E_c exactly, cast once to the fit's type
    labels = ML.hierarchy(problem, 5)[0].labels
    np.testing.assert_array_equal(E, (ML.prolongation(labels, seen[-1].shape[0])
                                      @ seen[-1].astype(np.float64)).astype(dtype))
    into = np.empty_like(E0)
    assert ML.prolong(labels, seen[-1], out=into, block=7) is into
    np.testing.assert_array_equal(into, E)
