"""PSDBoost's re-selection of impostor triplets (``impostors="active"``): the rounds of
row generation around problem (3) of Shen, Welsh & Wang (2008)."""

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.psdboost import estimator
from psdlearn.psdboost._bounds import primal_value
from psdlearn.psdboost._outer import (
    first_working_set,
    impostor_triplets,
    solve_rounds,
    target_pairs,
)
from psdlearn.psdboost.ipm import solve_ipm


def _data(n=60, d=5, seed=0):
    X, y = pl.datasets.make_triplet_synthetic(n, d, random_state=seed)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def _margins(X, M, T):
    dk, dj = X[T[:, 0]] - X[T[:, 2]], X[T[:, 0]] - X[T[:, 1]]
    return np.einsum("ij,jk,ik->i", dk, M, dk) - np.einsum("ij,jk,ik->i", dj, M, dj)


def _all_impostor_triplets(X, y, n_neighbors):
    """Every (i, j, l): j a target neighbour of i (brute force), l of another class."""
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    rows = []
    for i in range(len(X)):
        same = np.flatnonzero((y == y[i]) & (np.arange(len(X)) != i))
        targets = same[np.argsort(D2[i, same], kind="stable")[:n_neighbors]]
        for j in targets:
            rows += [(i, j, o) for o in np.flatnonzero(y != y[i])]
    return np.array(rows)


def test_final_metric_meets_the_kkt_conditions_of_3_on_its_working_set():
    """Primal and dual feasibility and the three complementarity terms of (3), whose sum
    is the certified gap, on the final working set; and no row of the full impostor set
    lies below the margin, so the optimum is that of every impostor triplet."""
    X, y = _data()
    m = pl.PSDBoost(tol=1e-7, impostors="active", random_state=0).fit(X, y)
    assert m.converged_ and m.n_rounds_ >= 2
    W, M, C = m.side_info_.triplets, m.metric_, m.C_
    w, xi, rho = m.dual_weights_, m.slacks_, m.rho_
    eps = m.eps_
    # primal feasibility: M PSD, trace one; margins + slacks >= rho, slacks >= 0
    assert np.linalg.eigvalsh(M).min() >= -1e-10 and np.trace(M) == pytest.approx(1.0)
    mr = _margins(X, M, W)
    assert np.all(xi >= 0) and np.all(mr + xi >= rho - 1e-9)
    # dual feasibility: w in the capped simplex, lambda I - H(w) PSD at lambda = upper
    assert np.all(w >= 0) and np.all(w <= C * (1 + 1e-12)) and w.sum() == pytest.approx(1.0)
    dk, dj = X[W[:, 0]] - X[W[:, 2]], X[W[:, 0]] - X[W[:, 1]]
    H = dk.T @ (w[:, None] * dk) - dj.T @ (w[:, None] * dj)
    lam = np.linalg.eigvalsh(H)[-1]
    assert m.upper_bound_ == pytest.approx(lam, abs=1e-9)
    # complementarity: <lambda I - H, M> = 0, w_r (m_r + xi_r - rho) = 0,
    # xi_r (C - w_r) = 0; each term is nonnegative and they add up to the gap
    terms = [lam - np.sum(H * M), w @ (mr + xi - rho), xi @ (C - w)]
    assert min(terms) >= -1e-9
    assert sum(terms) == pytest.approx(m.upper_bound_ - m.objective_, abs=1e-9)
    assert sum(terms) <= eps
    # no impostor triplet outside the working set is below rho - eps
    T = _all_impostor_triplets(X, y, m.n_neighbors_)
    outside = ~(T[:, None, :] == W[None]).all(-1).any(1)
    assert outside.sum() == len(T) - len(W)
    assert _margins(X, M, T[outside]).min() >= rho - eps - 1e-12
    assert primal_value(_margins(X, M, T), C)[0] == pytest.approx(m.objective_, abs=eps)


def test_reselection_never_increases_the_optimum_and_ends_at_that_of_the_union():
    """With ``v_k`` the optimum of (3) on the round-k working set ``W_k`` and ``U`` the
    union of all working sets (``C`` fixed): ``v_{k+1} <= v_k`` for every round (dropped
    rows had zero weight, added rows can only lower a maximum), ``v_k >= OPT(U)`` and the
    last round attains ``OPT(U)``. Each ``v_k`` is computed again by an independent
    interior-point solve; the rounds' own certified bounds obey
    ``objective_{k+1} <= upper_k``."""
    X, y = _data(n=60, d=5, seed=1)
    codes = np.unique(y, return_inverse=True)[1]
    pairs = target_pairs(X, codes, 3)
    C = 1.0 / (0.1 * len(pairs))

    def solve(W):
        return solve_ipm(X, W, C, tol=1e-10, max_iter=200, max_triplets=10**5), None

    first = first_working_set(X, codes, pairs, C)
    res, _, W, rounds, status = solve_rounds(X, codes, pairs, first, C, 1e-9, solve,
                                             record=True)
    assert status == "optimal" and len(rounds) >= 3
    for a, b in zip(rounds[:-1], rounds[1:], strict=True):
        assert b["objective"] <= a["upper_bound"] + 1e-9
    v = [solve_ipm(X, r["triplets"], C, tol=1e-11, max_iter=200,
                   max_triplets=10**5).objective_history[-1] for r in rounds]
    assert np.all(np.diff(v) <= 1e-7)
    union = np.unique(np.concatenate([r["triplets"] for r in rounds]), axis=0)
    assert len(union) > len(W)  # rows were dropped and added along the way
    opt_union = solve_ipm(X, union, C, tol=1e-11, max_iter=200,
                          max_triplets=10**5).objective_history[-1]
    assert min(v) >= opt_union - 1e-7
    assert v[-1] == pytest.approx(opt_union, abs=1e-7)


def test_a_last_round_can_end_by_the_bound_on_every_impostor_triplet():
    """When the search finds every violated row (at most two per pair) and the metric's
    value on the working set and those rows is within ``eps`` of the round's dual bound,
    the rows join with zero weight and the fit ends without another solve. The metric is
    then ``eps``-optimal for (3) over every impostor triplet: checked here by brute force,
    the dual bound ``lambda_max(H(w))`` recomputed from the returned weights against the
    metric's value on all of them."""
    X, y = _data(n=60, d=5, seed=1)
    codes = np.unique(y, return_inverse=True)[1]
    pairs = target_pairs(X, codes, 3)
    C, eps = 1.0 / (0.1 * len(pairs)), 1e-3

    def solve(W):
        return solve_ipm(X, W, C, tol=1e-10, max_iter=200, max_triplets=10**5), None

    first = first_working_set(X, codes, pairs, C)
    res, _, W, rounds, status = solve_rounds(X, codes, pairs, first, C, eps, solve)
    assert status == "optimal" and rounds[-1]["appended"] >= 1
    assert rounds[-1]["n_triplets"] == len(W) and rounds[-1]["n_violated"] == 0
    w = res.info["dual_weights"]
    assert len(w) == len(W) and np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    dk, dj = X[W[:, 0]] - X[W[:, 2]], X[W[:, 0]] - X[W[:, 1]]
    upper = np.linalg.eigvalsh(dk.T @ (w[:, None] * dk) - dj.T @ (w[:, None] * dj))[-1]
    M = res.embedding @ res.embedding.T
    T = _all_impostor_triplets(X, y, 3)
    value = primal_value(_margins(X, M, T), C)[0]
    assert upper - value <= eps + 1e-12
    assert value == pytest.approx(rounds[-1]["objective"], abs=1e-10)
    rho, xi = res.info["rho"], res.info["slacks"]
    assert np.all(_margins(X, M, W) + xi >= rho - 1e-9)


@pytest.mark.parametrize("n_new", [1, 2, 3])
def test_impostor_search_returns_each_pairs_most_violated_rows_outside_the_working_set(
        n_new):
    """The nearest-neighbour search against brute force: for every target pair, the
    ``n_new`` smallest-margin rows below the threshold among those outside ``W`` (with
    their rank), and nothing for a pair all of whose violated rows are in ``W``; the
    result is empty exactly when no row outside ``W`` is below the threshold, and it says
    it is complete exactly when no pair has more than ``n_new`` such rows."""
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(80, 3))
    codes = rng.integers(0, 3, size=80)
    codes[:5] = -1  # unlabelled points are never impostors
    pairs = target_pairs(Z, codes, 2)
    D2 = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    labelled = np.flatnonzero(codes >= 0)
    every = np.array([(i, j, o) for i, j in pairs for o in labelled if codes[o] != codes[i]])
    for threshold in (-0.5, 0.3, 2.0):
        below = every[D2[every[:, 0], every[:, 2]] - D2[every[:, 0], every[:, 1]] < threshold]
        # W: some violated rows (whole pairs' worth for a few) and some satisfied ones
        W = np.concatenate([below[rng.random(len(below)) < 0.4], every[:: 97]])
        W = np.unique(W, axis=0)
        T, margins, rank, complete = impostor_triplets(Z, codes, pairs, threshold, W, n_new)
        held = set(map(tuple, W.tolist()))
        expect, most = {}, 0
        for i, j in pairs:
            rows = [(D2[i, o] - D2[i, j], o) for o in labelled
                    if codes[o] != codes[i] and (i, j, o) not in held]
            rows = sorted(r for r in rows if r[0] < threshold)
            most = max(most, len(rows))
            expect.update({(i, j, o): k for k, (_, o) in enumerate(rows[:n_new])})
        assert complete == (most <= n_new)
        got = dict(zip(map(tuple, T.tolist()), rank.tolist(), strict=True))
        assert got == expect
        assert np.allclose(margins, D2[T[:, 0], T[:, 2]] - D2[T[:, 0], T[:, 1]])
        outside = np.array([tuple(r) not in held for r in below.tolist()], dtype=bool)
        assert (len(T) == 0) == (not outside.any())


def test_active_and_nearest_rules():
    """The default, impostors="active", re-selects (C = 1 / (0.1 p) for p target pairs,
    rounds recorded); the paper's rule is impostors="nearest" with n_neighbors=1 (one
    round, fixed triplets)."""
    X, y = _data(n=60, d=4, seed=2)
    m = pl.PSDBoost(random_state=0).fit(X, y)
    explicit = pl.PSDBoost(impostors="active", random_state=0).fit(X, y)
    assert np.array_equal(m.metric_, explicit.metric_) and m.n_rounds_ >= 2
    codes = np.unique(y, return_inverse=True)[1]
    p = len(target_pairs(X, codes, 3))
    assert m.C_ == pytest.approx(1.0 / (0.1 * p))
    assert m.n_rounds_ == len(m.rounds_) and m.rounds_[-1]["n_violated"] == 0
    assert m.rounds_[-1]["n_triplets"] == len(m.side_info_.triplets)
    ups = [r["upper_bound"] for r in m.rounds_]
    assert all(b <= a + m.eps_ for a, b in zip(ups[:-1], ups[1:], strict=True))
    paper = pl.PSDBoost(n_neighbors=1, impostors="nearest", random_state=0).fit(X, y)
    assert paper.n_rounds_ == 1
    assert np.array_equal(paper.side_info_.triplets, pl.triplets_from_labels(X, y))
    with pytest.raises(ValueError, match="target pairs"):
        pl.PSDBoost(C=1e-6, impostors="active").fit(X, y)


def test_rows_only_join_once_the_optimum_stops_falling():
    """From the first round whose optimum is not below the previous one by more than
    ``eps`` (certified: ``upper_k >= objective_{k-1} - eps``), every working set contains
    the previous one: no row leaves, so degenerate optima cannot make the sets cycle.
    Before it, rows do leave."""
    X, y = _data(n=60, d=5, seed=0)
    codes = np.unique(y, return_inverse=True)[1]
    pairs = target_pairs(X, codes, 3)
    C, eps = 1.0 / (0.1 * len(pairs)), 0.03

    def solve(W):
        return solve_ipm(X, W, C, tol=1e-10, max_iter=200, max_triplets=10**5), None

    first = first_working_set(X, codes, pairs, C)
    _, _, _, rounds, status = solve_rounds(X, codes, pairs, first, C, eps, solve, record=True)
    assert status == "optimal"
    stalls = [k for k in range(1, len(rounds))
              if rounds[k]["upper_bound"] >= rounds[k - 1]["objective"] - eps]
    assert stalls and stalls[0] < len(rounds) - 1
    sets = [set(map(tuple, r["triplets"].tolist())) for r in rounds]
    assert not all(a <= b for a, b in zip(sets[:stalls[0]], sets[1:stalls[0] + 1],
                                          strict=True))
    assert all(sets[k] <= sets[k + 1] for k in range(stalls[0], len(sets) - 1))


def test_active_rounds_pick_the_solver_as_documented(monkeypatch):
    """With solver="auto", the rounds' working sets go to the interior-point method up to
    AUTO_ACTIVE_IPM_MAX_TRIPLETS rows, whatever the limit for fixed triplets, and beyond
    it through the low-rank Newton system."""
    doc = " ".join(pl.PSDBoost.__doc__.split())
    assert f"up to {estimator.AUTO_ACTIVE_IPM_MAX_TRIPLETS} rows" in doc
    X, y = _data(n=60, d=4, seed=2)
    monkeypatch.setattr(estimator, "AUTO_IPM_MAX_TRIPLETS", 5)
    m = pl.PSDBoost(impostors="active").fit(X, y)
    assert m.solver_ == "interior-point" and len(m.side_info_.triplets) > 5
    monkeypatch.setattr(estimator, "AUTO_ACTIVE_IPM_MAX_TRIPLETS", 5)
    # above it, the interior point still runs where its low-rank Newton system applies
    # (t >= 5 n_s, here n_s = 10) within the flop budget per step, else the working set
    assert pl.PSDBoost(impostors="active").fit(X, y).solver_ == "interior-point"
    monkeypatch.setattr(estimator, "AUTO_ACTIVE_IPM_FLOPS", 0)
    assert pl.PSDBoost(impostors="active").fit(X, y).solver_ == "working-set"


def test_auto_target_neighbours_are_three_then_one_beyond_the_labelled_limit(monkeypatch):
    """n_neighbors="auto": three target neighbours per point, one when more points than
    AUTO_NEIGHBORS_MAX_LABELLED carry a label (unlabelled points do not count), always
    three for the fixed triplets of impostors="nearest"; an integer is used as given."""
    X, y = _data(n=60, d=4, seed=2)
    codes = np.unique(y, return_inverse=True)[1]
    m = pl.PSDBoost(random_state=0).fit(X, y)
    assert m.get_params()["n_neighbors"] == "auto" and m.n_neighbors_ == 3
    monkeypatch.setattr(estimator, "AUTO_NEIGHBORS_MAX_LABELLED", 50)
    m = pl.PSDBoost(random_state=0).fit(X, y)
    assert m.n_neighbors_ == 1
    assert m.C_ == pytest.approx(1.0 / (0.1 * len(target_pairs(X, codes, 1))))
    partial = np.where(np.arange(60) < 45, y, -1)
    assert pl.PSDBoost(random_state=0).fit(X, partial).n_neighbors_ == 3
    assert pl.PSDBoost(impostors="nearest").fit(X, y).n_neighbors_ == 3
    assert pl.PSDBoost(n_neighbors=2).fit(X, y).n_neighbors_ == 2
    assert pl.PSDBoost().fit(X, pl.Triplets([[0, 1, 2]])).n_neighbors_ is None
