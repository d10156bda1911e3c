"""NPKL.partial_fit: new pairs over the same points, warm-started, same optimum as a refit."""

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.constraints import ConstraintConflictWarning
from psdlearn.graph import NeighborIndex


def _split(C, first, seed=0):
    perm = np.random.default_rng(seed).permutation(C.n_pairs)
    part = [np.sort(perm[:first]), np.sort(perm[first:])]
    return [pl.PairwiseConstraints(C.pairs[p], C.signs[p], C.n_samples) for p in part]


@pytest.fixture(scope="module")
def iris():
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    return X, C, *_split(C, 150)


@pytest.mark.parametrize("loss,solver", [("square", "bcd"), ("hinge", "bcd"),
                                         ("square", "admm"), ("pcp", "admm")])
def test_partial_fit_reaches_the_optimum_of_a_fresh_fit_on_the_union(iris, loss, solver):
    X, C, A, B = iris
    kw = dict(loss=loss, solver=solver, tol=1e-8, max_iter=20000, random_state=0)
    model = pl.NPKL(**kw).fit(X, A)
    first_rank = model.rank_
    model.partial_fit(X, B)
    assert model.side_info_.to_array().tolist() == C.to_array().tolist()
    # gamma="auto" and rank="auto" are chosen from the union, as a fresh fit chooses them
    fresh = pl.NPKL(**kw).fit(X, C)
    assert model.gamma_ == fresh.gamma_
    assert model.rank_ == fresh.rank_ > first_rank
    # both are certified optima of the same convex problem
    assert model.certificate_.certified
    assert fresh.certificate_.certified
    assert model.objective() == pytest.approx(fresh.objective(), rel=1e-6)
    # and the partial fit's problem really has the new pairs: the old optimum is worse there
    before = pl.NPKL(**{**kw, "rank": model.rank_}).fit(X, A)
    assert model.objective(before.embedding_) > model.objective() * (1 + 1e-3)


def test_partial_fit_keeps_a_given_gamma_and_rank(iris):
    X, C, A, B = iris
    kw = dict(loss="square", gamma=0.3, rank=6, tol=1e-8, max_iter=20000, random_state=0)
    model = pl.NPKL(**kw).fit(X, A).partial_fit(X, B)
    assert model.gamma_ == 0.3 and model.rank_ == 6
    fresh = pl.NPKL(**kw).fit(X, C)
    assert model.objective() == pytest.approx(fresh.objective(), rel=1e-6)


def test_partial_fit_after_labels_counts_the_rank_from_their_smallest_pair_set():
    X, y = pl.datasets.load("iris")
    labels = np.full(len(y), -1)
    labels[::5] = y[::5]  # 30 labelled points: rank from (30 - 3) + 3 pairs, not 435
    model = pl.NPKL(loss="square", random_state=0).fit(X, labels)
    rank = model.rank_
    new = pl.PairwiseConstraints([[1, 2], [3, 120]], [1, -1], len(X))
    model.partial_fit(X, new)
    assert model.rank_ == max(rank, pl.npkl.problem.auto_rank(30 + 2))


def test_partial_fit_keeps_the_graph_and_the_index(iris, monkeypatch):
    X, C, A, B = iris
    model = pl.NPKL(loss="square", random_state=0).fit(X, A)
    L, index = model.laplacian_, model.neighbor_index_

    def forbidden(*args, **kwargs):
        raise AssertionError("the neighbour search ran again")

    monkeypatch.setattr(NeighborIndex, "fit", forbidden)
    monkeypatch.setattr(NeighborIndex, "kneighbors", forbidden)
    monkeypatch.setattr("psdlearn.npkl.estimator.build_laplacian", forbidden)
    model.partial_fit(X, B)
    assert model.laplacian_ is L and model.neighbor_index_ is index
    assert model.side_info_.n_pairs == C.n_pairs


def test_partial_fit_on_an_unfitted_estimator_is_fit(iris):
    X, C, A, _ = iris
    a = pl.NPKL(loss="square", random_state=0).partial_fit(X, A)
    b = pl.NPKL(loss="square", random_state=0).fit(X, A)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)


def test_partial_fit_checks_x_and_the_new_pairs(iris):
    X, C, A, B = iris
    model = pl.NPKL(loss="square", random_state=0).fit(X, A)
    with pytest.raises(ValueError, match="X must be the X passed to fit"):
        model.partial_fit(X[:-1], B)
    with pytest.raises(ValueError, match="X must be the X passed to fit"):
        model.partial_fit(X + 1.0, B)
    i, j = A.pairs[0]
    with pytest.raises(ValueError, match=rf"both must-link and cannot-link: \({i}, {j}\)"):
        model.partial_fit(X, [[i, j, -A.signs[0]]])
    assert model.side_info_.n_pairs == A.n_pairs  # a refused call changes nothing
    with pytest.warns(UserWarning, match=rf"merged: \({i}, {j}\)"):
        model.partial_fit(X, [[j, i, A.signs[0]]])
    assert model.side_info_.n_pairs == A.n_pairs
    # new pairs that close a must-link chain a - b - k with a cannot-link a - k are named
    a, b = A.must_link[0]
    k = next(k for k in range(len(X)) if k not in set(A.pairs.ravel().tolist()))
    with pytest.warns(ConstraintConflictWarning, match=rf"\({min(a, k)}, {max(a, k)}\)"):
        model.partial_fit(X, [[b, k, 1], [a, k, -1]])


@pytest.fixture(scope="module")
def gaussians():
    """1200 points of two Gaussians, 120 pairs, and 12 more between points far apart
    in the kNN graph (at least 3 edges between any two new endpoints, none in a pair)."""
    X, y = pl.datasets.make_two_gaussians(1200, random_state=0)
    A = pl.PairwiseConstraints.from_labels(y, 60, 60, random_state=0)
    graph = pl.NPKL(certificate_tol=None, random_state=0).fit(X, A).laplacian_.tocsr()
    near = (graph != 0).astype(float)
    near = ((near @ near) != 0).astype(float)  # within 2 edges
    taken = np.zeros(len(X), dtype=bool)
    taken[A.pairs.ravel()] = True
    ends = []
    for i in np.random.default_rng(1).permutation(len(X)):
        if not taken[i]:
            ends.append(i)
            taken[near[i].indices] = True
        if len(ends) == 24:
            break
    ends = np.array(ends).reshape(12, 2)
    B = pl.PairwiseConstraints(ends, np.where(y[ends[:, 0]] == y[ends[:, 1]], 1, -1), len(X))
    return X, A.union(B), A, B


@pytest.mark.parametrize("loss", ["square", "hinge"])
def test_partial_fit_with_far_apart_new_pairs_reaches_the_optimum(gaussians, loss,
                                                                  monkeypatch):
    from psdlearn.npkl import _partial
    from psdlearn.npkl.bcd import COARSE_SMOOTHING, HINGE_SMOOTHING_AUTO

    X, C, A, B = gaussians
    kw = dict(loss=loss, tol=1e-8, max_iter=20000, random_state=0)
    model = pl.NPKL(**kw).fit(X, A)
    ends = np.unique(B.pairs)
    calls = []

    def spy(problem, E, rows, **kwargs):
        calls.append((rows, kwargs["smoothing"]))
        return endpoint_sweeps(problem, E, rows, **kwargs)

    endpoint_sweeps = _partial.endpoint_sweeps
    monkeypatch.setattr(_partial, "endpoint_sweeps", spy)
    model.partial_fit(X, B)
    # the endpoint sweeps ran on the new pairs' rows: for the hinge at each smoothing the
    # continuation skips and at its first stage, the coarse smoothing
    assert all(r.tolist() == ends.tolist() for r, _ in calls)
    mus = ([mu for mu in HINGE_SMOOTHING_AUTO if mu >= COARSE_SMOOTHING] if loss == "hinge"
           else [0.0])
    assert [mu for _, mu in calls] == mus
    assert model.smoothing_stages_[0][0] == mus[-1]
    fresh = pl.NPKL(**{**kw, "gamma": model.gamma_, "rank": model.rank_}).fit(X, C)
    assert model.certificate_.certified and fresh.certificate_.certified
    assert model.objective() == pytest.approx(fresh.objective(), rel=1e-6)


def test_partial_fit_above_400_points_starts_gamma_0_from_the_last_vectors(gaussians,
                                                                         monkeypatch):
    # gamma_0 by LOBPCG: partial_fit's run starts from the vectors fit kept (one run, no
    # scale run) and gives a fresh fit's gamma and optimum
    from psdlearn.npkl import gamma as gamma_module

    X, C, A, B = gaussians
    kw = dict(loss="square", tol=1e-8, max_iter=20000, random_state=0)
    model = pl.NPKL(**kw).fit(X, A)
    assert model._gamma_vectors.shape == (len(X), 1)
    runs = []
    lobpcg = gamma_module.lobpcg
    monkeypatch.setattr(gamma_module, "lobpcg", lambda *a, **k: runs.append(k) or lobpcg(*a, **k))
    model.partial_fit(X, B)
    assert len(runs) == 1
    fresh = pl.NPKL(**kw).fit(X, C)
    assert len(runs) == 3  # a fresh fit: the scale run, then the run to the tolerance
    assert model.gamma_ == pytest.approx(fresh.gamma_, rel=1e-5)
    assert model.gamma_ != pytest.approx(pl.NPKL(**kw).fit(X, A).gamma_, rel=1e-3)
    assert model.objective() == pytest.approx(fresh.objective(), rel=1e-6)


@pytest.mark.parametrize("loss", ["square", "squared_hinge", "hinge"])
def test_endpoint_sweeps_move_only_their_rows_and_lower_the_objective(gaussians, loss):
    from psdlearn.npkl import _kernels as K
    from psdlearn.npkl._partial import endpoint_sweeps
    from psdlearn.npkl.losses import get_loss
    from psdlearn.npkl.problem import NPKLProblem

    X, C, A, B = gaussians
    model = pl.NPKL(loss=loss, certificate_tol=None, random_state=0).fit(X, A)
    problem = NPKLProblem(model.laplacian_, C.pairs, C.signs.astype(float), loss,
                          model.gamma_, 1.0)
    mu = 1e-2 if loss == "hinge" else 0.0
    code = K.SMOOTH_HINGE if mu else get_loss(loss).kernel
    L = model.laplacian_.tocsr()

    def objective(E):  # the objective the sweeps minimize (smoothed hinge at mu)
        return K.objective(E, L.indptr.astype(np.int64), L.indices.astype(np.int64), L.data,
                           C.pairs.astype(np.int64), C.signs.astype(float), code,
                           model.gamma_, mu)

    E0 = np.ascontiguousarray(model.embedding_)
    E = E0.copy()
    rows = np.unique(B.pairs)
    n_sweeps = endpoint_sweeps(problem, E, rows, omega=1.5, tol=1e-5, smoothing=mu,
                               random_state=np.random.RandomState(0))
    # the smooth losses' passes stop by their test; the smoothed hinge's may use them all
    assert 1 < n_sweeps < 100 if loss != "hinge" else 1 < n_sweeps <= 100
    others = np.setdiff1d(np.arange(len(E)), rows)
    np.testing.assert_array_equal(E[others], E0[others])
    assert not np.allclose(E[rows], E0[rows])
    # the new pairs' terms start far from their optimum: the sweeps lower the objective
    assert objective(E) < objective(E0) * (1 - 1e-4)
    if n_sweeps < 100:  # stopped where a pass changes the rows by < tol ||E||: one more does
        F = E.copy()
        endpoint_sweeps(problem, F, rows, omega=1.5, tol=1e-5, smoothing=mu,
                        random_state=np.random.RandomState(1), max_sweeps=1)
        assert np.sum((F - E) ** 2) < 1e-10 * np.sum(E ** 2)


def test_partial_schedule_starts_the_hinge_continuation_at_the_coarse_smoothing():
    from psdlearn.npkl.bcd import COARSE_SMOOTHING, partial_schedule, smoothing_schedule

    auto = smoothing_schedule("hinge", "auto")
    assert partial_schedule(auto) == [mu for mu in auto if mu <= COARSE_SMOOTHING]
    assert partial_schedule(auto)[0] == COARSE_SMOOTHING and partial_schedule(auto)[-1] == 0
    # a single smoothed stage is kept, whatever its mu; smooth losses have one stage
    assert partial_schedule([0.5, 0.0]) == [0.5, 0.0]
    assert partial_schedule([1e-3, 0.0]) == [1e-3, 0.0]
    assert partial_schedule(smoothing_schedule("square")) == [0.0]


def test_grown_seeds_the_new_columns_on_the_pair_rows_only():
    from psdlearn.npkl._partial import _grown

    E = np.random.default_rng(0).normal(size=(40, 3))
    rows = np.array([2, 5, 11, 30])
    G = _grown(E, 6, rows, 0)
    assert G.shape == (40, 6) and G.flags.c_contiguous
    assert np.array_equal(G[:, :3], E)
    assert not np.any(np.delete(G[:, 3:], rows, axis=0))
    # seeds of about a tenth of the mean row norm, on every pair row
    seeds = np.linalg.norm(G[rows, 3:], axis=1)
    assert np.all(seeds > 0)
    assert np.mean(seeds) == pytest.approx(0.1 * np.sqrt((E ** 2).sum() / 40), rel=0.5)
    assert np.array_equal(_grown(E, 3, rows, 0), E)


@pytest.mark.parametrize("loss", ["square", "hinge"])
def test_partial_fit_grows_needed_directions_from_seeds_on_the_pair_rows(loss):
    # three classes, a first fit on 4 pairs, then pairs that need more directions than
    # it has; most points are in no pair, so their new columns start at zero and are
    # filled from the pairs' rows through the graph
    from sklearn.datasets import make_blobs

    X, y = make_blobs(600, centers=3, cluster_std=1.5, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, 40, 40, random_state=0)
    A, B = _split(C, 4)
    assert len(np.unique(C.pairs)) < len(X) / 2
    kw = dict(loss=loss, tol=1e-8, max_iter=20000, random_state=0)
    model = pl.NPKL(**kw).fit(X, A)
    first_rank = model.rank_
    model.partial_fit(X, B)
    fresh = pl.NPKL(**{**kw, "gamma": model.gamma_, "rank": model.rank_}).fit(X, C)
    assert model.rank_ > first_rank
    assert model.objective() == pytest.approx(fresh.objective(), rel=1e-6)
    # the optimum uses more directions than the first fit had, and the partial fit has them
    s = np.linalg.svd(model.embedding_, compute_uv=False)
    assert s[first_rank] > 1e-2 * s[0]
