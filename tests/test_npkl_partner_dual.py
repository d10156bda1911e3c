"""Rows with many partners (a labelled point among many): the ``O(d r)`` paths of
``npkl._partner_dual`` against the dense dual QP of Hu & Kwok's eqs. (22) and (25).

Each row is checked by mathematics: the duals returned satisfy the KKT conditions of the
dense box QP ``min 1/2 a^T (A^T A + delta I) a - q^T a`` over ``0 <= a <= h``, the row is
``(A alpha - s_i) / L_ii`` (21), and it equals the row of the plain-NumPy reference
active set, from cold, saturated, random and stale warm starts. A small fit with labels
reaches the exact SDP's value.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _npkl_reference import box_qp_reference

from psdlearn.npkl import _kernels as K
from psdlearn.npkl._partner_dual import (
    MANY_PARTNERS,
    WORKING_SET_CAPACITY,
    _line_minimum,
    partner_dual,
    partner_newton,
)
from psdlearn.npkl._qp import kkt_residual
from psdlearn.npkl.problem import NPKLProblem

#: kernel loss code and smoothing ``mu`` of each row problem
KINDS = {
    "hinge": (K.HINGE, 1.0),
    "squared_hinge": (K.SQUARED_HINGE, 1.0),
    "smoothed 0.05": (K.SMOOTH_HINGE, 0.05),
    "smoothed 1e-3": (K.SMOOTH_HINGE, 1e-3),
}
STARTS = ("zeros", "upper", "random", "stale")


def _instance(d, r, seed):
    """Sample 0 with ``d`` partners, a random Laplacian row and a random embedding."""
    rng = np.random.default_rng(seed)
    n = d + 5
    E = rng.normal(size=(n, r)) * rng.uniform(0.5, 1.5) / np.sqrt(r) * 1.5
    dense = np.eye(n)
    dense[0, 0] = rng.uniform(0.5, 2.0)
    nbrs = rng.choice(np.arange(1, n), size=4, replace=False)
    dense[0, nbrs] = dense[nbrs, 0] = -rng.uniform(0.05, 0.5, size=4)
    L = sp.csr_matrix(dense)
    L.sort_indices()
    pairs = np.stack([np.zeros(d, dtype=np.int64), np.arange(1, d + 1)], axis=1)
    signs = rng.choice([-1.0, 1.0], size=d)
    gamma = float(rng.choice([0.5, 2.0, 10.0]))
    Tp, Ti, Ts = NPKLProblem(L, pairs, signs, "hinge", gamma).neighbors()
    assert Tp[0] == 0 and Tp[1] == d
    return E, L, Tp, Ti, Ts, gamma


def _dense_dual(E, L, Ti, Ts, d, code, gamma, mu):
    """``H``, ``q``, ``h`` of the dense dual of row 0 (slots ``0 .. d``), with ``A``,
    ``s_0`` and ``L_00``."""
    lii = float(L[0, 0])
    s = np.asarray(L.getrow(0) @ E).ravel() - lii * E[0]
    A = E[Ti[:d]].T * Ts[:d]
    delta = {K.HINGE: 0.0, K.SQUARED_HINGE: lii / gamma, K.SMOOTH_HINGE: 2 * mu * lii / gamma}
    H = A.T @ A + delta[code] * np.eye(d)
    hi = np.inf if code == K.SQUARED_HINGE else gamma / 2
    return H, lii + A.T @ s, hi, A, s, lii


def _start(kind, E, L, Ti, Ts, d, code, gamma, mu, rng):
    """A warm start: cold (zeros), saturated, random in the box, or stale (the exact duals
    of the row at a perturbed embedding, as a later sweep sees them)."""
    hi = np.inf if code == K.SQUARED_HINGE else gamma / 2
    top = 5.0 if hi == np.inf else hi
    if kind == "zeros":
        return np.zeros(d)
    if kind == "upper":
        return np.full(d, top)
    if kind == "random":
        return rng.uniform(0, top, size=d)
    H, q, hi, *_ = _dense_dual(E + 0.05 * rng.normal(size=E.shape), L, Ti, Ts, d, code,
                               gamma, mu)
    return box_qp_reference(H, q, 0.0, hi)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("d,rank", [(MANY_PARTNERS, 3), (80, 12), (200, 5), (40, 60)])
def test_row_with_many_partners_is_the_dense_duals_minimizer(kind, d, rank):
    """The compiled update of a row with ``d >= MANY_PARTNERS`` partners: KKT of the dense
    dual (1e-9 relative), ``v = (A alpha - s) / L_ii``, and the same row as the NumPy
    active set, from every kind of warm start."""
    code, mu = KINDS[kind]
    rng = np.random.default_rng(d * 100 + rank)
    for trial, start in enumerate(STARTS):
        E, L, Tp, Ti, Ts, gamma = _instance(d, rank, 1000 * d + 10 * rank + trial)
        H, q, hi, A, s, lii = _dense_dual(E, L, Ti, Ts, d, code, gamma, mu)
        alpha = np.zeros(len(Ti))  # both directions of every pair; row 0 holds 0 .. d
        alpha[:d] = _start(start, E, L, Ti, Ts, d, code, gamma, mu, rng)
        Ek = E.copy()
        work = K.workspaces(rank, d, True)
        K.update_sample(0, Ek, L.indptr.astype(np.int64), L.indices.astype(np.int64), L.data,
                        L.diagonal(), Tp, Ti, Ts, code, gamma, mu, alpha, K.SQUARE_AUTO,
                        *work, np.zeros(3), 1.0)
        assert np.array_equal(Ek[1:], E[1:])
        alpha = alpha[:d]
        assert np.all(alpha >= 0.0) and np.all(alpha <= hi)
        res, scale = kkt_residual(H, q, d, 0.0, hi, alpha, np.empty(d))
        assert res <= 1e-9 * scale, (start, res / scale)
        v = Ek[0]
        np.testing.assert_allclose(lii * v, A @ alpha - s, rtol=0,
                                   atol=1e-12 * (1 + np.abs(A @ alpha - s).max()))
        ref = box_qp_reference(H, q, 0.0, hi)
        v_ref = (A @ ref - s) / lii
        np.testing.assert_allclose(v, v_ref, rtol=0, atol=1e-8 * (1 + np.abs(v_ref).max()))


def test_both_phases_of_the_dual_path_are_exercised():
    """``partner_dual`` ends at its start (returns 0) on some of the hinge's cold starts
    (the vertex of the row itself) and in its working set, with a dual added after the
    first restricted QP (returns >= 2), on others; the squared hinge's rows (after its
    coordinate passes) reach the working set's later rounds too. Each end is a KKT point
    of the dense QP."""
    ends = {K.HINGE: [], K.SQUARED_HINGE: []}
    cold = {K.HINGE: [], K.SQUARED_HINGE: []}
    rng = np.random.default_rng(5)
    for seed in range(40):
        d, rank = int(rng.integers(MANY_PARTNERS, 120)), int(rng.integers(2, 30))
        E, L, Tp, Ti, Ts, gamma = _instance(d, rank, seed)
        for code in ends:
            H, q, hi, A, s, lii = _dense_dual(E, L, Ti, Ts, d, code, gamma, 1.0)
            delta = H[0, 0] - A[:, 0] @ A[:, 0]
            for start in STARTS:
                x = _start(start, E, L, Ti, Ts, d, code, gamma, 1.0, rng)
                dvec, dmat, ivec = K.workspaces(rank, d, False)[1:4]
                u = np.empty(rank)
                ends[code].append(partner_dual(0, E, Ti, Ts, 0, d, s, lii, delta, hi, x, u,
                                               dvec, dmat, ivec))
                if start == "zeros":
                    cold[code].append(ends[code][-1])
                res, scale = kkt_residual(H, q, d, 0.0, hi, x, np.empty(d))
                assert res <= 1e-9 * scale
                np.testing.assert_allclose(u, A @ x - s, rtol=0,
                                           atol=1e-10 * (1 + np.abs(u).max()))
    assert 0 in cold[K.HINGE] and max(cold[K.HINGE]) >= 2
    assert max(ends[K.SQUARED_HINGE]) >= 2


def test_hinge_cold_start_is_the_vertex_of_the_row():
    """From duals all zero, a hinge row whose margins its own row already decides (every
    pair violated by ``e_0`` at the bound is optimal, no pair at the kink) returns at its
    start: the vertex ``alpha_j = h [T_0j e_0^T e_j < 1]`` is the minimizer."""
    for seed in range(10):
        d, rank = 60, 4
        E, L, Tp, Ti, Ts, gamma = _instance(d, rank, 100 + seed)
        H, q, hi, A, s, lii = _dense_dual(E, L, Ti, Ts, d, K.HINGE, gamma, 1.0)
        # e_0 at the row minimizer of a tiny bound: every pair violated, duals all at h
        hi = 1e-3 * lii
        E[0] = (A @ np.full(d, hi) - s) / lii
        vertex = np.where(Ts[:d] * (E[Ti[:d]] @ E[0]) < 1.0, hi, 0.0)
        res, scale = kkt_residual(H, q, d, 0.0, hi, vertex, np.empty(d))
        if res > 1e-9 * scale:  # this draw's minimizer is not that vertex
            continue
        x = np.zeros(d)
        dvec, dmat, ivec = K.workspaces(rank, d, False)[1:4]
        u = np.empty(rank)
        assert partner_dual(0, E, Ti, Ts, 0, d, s, lii, 0.0, hi, x, u, dvec, dmat, ivec) == 0
        np.testing.assert_array_equal(x, vertex)
        break
    else:
        pytest.fail("no draw had the vertex as its minimizer")


def test_newton_path_ends_by_newton_steps():
    """The smoothed and squared hinges' rows end by Newton steps (no hand-over to the
    dual method) on random rows, at a KKT point of the dense dual."""
    rng = np.random.default_rng(6)
    steps = []
    for seed in range(30):
        d, rank = int(rng.integers(MANY_PARTNERS, 150)), int(rng.integers(2, 40))
        E, L, Tp, Ti, Ts, gamma = _instance(d, rank, seed)
        code, mu = (K.SQUARED_HINGE, 1.0) if seed % 2 else (K.SMOOTH_HINGE, 10.0 ** -(seed % 4))
        H, q, hi, A, s, lii = _dense_dual(E, L, Ti, Ts, d, code, gamma, mu)
        c = gamma if code == K.SQUARED_HINGE else gamma / (2 * mu)
        x = _start(STARTS[seed % 4], E, L, Ti, Ts, d, code, gamma, mu, rng)
        _, dvec, dmat, ivec, rmat = K.workspaces(rank, d, True)
        u = np.empty(rank)
        steps.append(partner_newton(0, E, Ti, Ts, 0, d, s, lii, c, hi, x, u, np.empty((3, rank)),
                                    rmat[0], rmat[1], dvec, dmat, ivec))
        res, scale = kkt_residual(H, q, d, 0.0, hi, x, np.empty(d))
        assert res <= 1e-9 * scale
        np.testing.assert_allclose(u, A @ x - s, rtol=0, atol=1e-9 * (1 + np.abs(u).max()))
    assert min(steps) >= 0 and max(steps) >= 2


def _row_phi(v, A, s, lii, c, hi):
    """``Phi(v) = 1/2 L_ii ||v||^2 + v^T s + sum_j psi(1 - a_j^T v)`` in NumPy."""
    z = 1.0 - A.T @ v
    quad = np.where(z <= 0, 0.0, 0.5 * c * z * z)
    if np.isfinite(hi):
        knee = hi / c
        quad = np.where(z > knee, hi * z - 0.5 * hi * hi / c, quad)
    return 0.5 * lii * v @ v + v @ s + quad.sum()


@pytest.mark.parametrize("code", [K.SMOOTH_HINGE, K.SQUARED_HINGE])
def test_line_search_finds_the_minimum_along_the_step(code):
    """``_line_minimum`` returns the minimizer of the piecewise-quadratic ``Phi`` along a
    descent direction: ``Phi`` there is no larger than on a fine grid of steps, and its
    central difference quotient vanishes."""
    rng = np.random.default_rng(7)
    for seed in range(20):
        d, rank = int(rng.integers(MANY_PARTNERS, 100)), int(rng.integers(2, 20))
        E, L, Tp, Ti, Ts, gamma = _instance(d, rank, 500 + seed)
        mu = 10.0 ** -int(rng.integers(1, 5))
        H, q, hi, A, s, lii = _dense_dual(E, L, Ti, Ts, d, code, gamma, mu)
        c = gamma if code == K.SQUARED_HINGE else gamma / (2 * mu)
        v = rng.normal(size=rank) / np.sqrt(rank)
        z = 1.0 - A.T @ v
        grad = lii * v + s - A @ np.clip(c * z, 0.0, hi)
        p = -grad * rng.uniform(0.1, 10.0)  # a descent direction of any length
        t = _line_minimum(E, Ti, Ts, 0, d, s, lii, c, hi, v, p, z, np.empty(d))
        assert t > 0
        phi = _row_phi(v + t * p, A, s, lii, c, hi)
        grid = np.linspace(0.0, 3.0 * t, 301)
        assert phi <= min(_row_phi(v + g * p, A, s, lii, c, hi) for g in grid) + 1e-12 * (
            1.0 + abs(phi))
        h = 1e-6 * t
        slope = (_row_phi(v + (t + h) * p, A, s, lii, c, hi)
                 - _row_phi(v + (t - h) * p, A, s, lii, c, hi)) / (2 * h)
        scale = abs(_row_phi(v + 2 * t * p, A, s, lii, c, hi) - phi) / t + 1e-12
        assert abs(slope) <= 1e-5 * scale


@pytest.mark.sdp
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_fit_with_labels_reaches_the_sdp_value(loss):
    """A fit on 60 points with 40 labels (39 partners per labelled row, every one on the
    new path) reaches the exact SDP's objective."""
    pytest.importorskip("cvxpy")
    from psdlearn.npkl import NPKL
    from psdlearn.npkl.sdp import solve_sdp

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + 3.0])
    y = np.repeat([0, 1], 30)
    y_partial = np.full(60, -1)
    labelled = rng.choice(60, 40, replace=False)
    y_partial[labelled] = y[labelled]
    model = NPKL(loss=loss, gamma=2.0, rank=60, n_neighbors=5, tol=1e-10, max_iter=20_000,
                 random_state=0).fit(X, y_partial)
    problem = NPKLProblem(model.laplacian_, model.side_info_.pairs, model.side_info_.signs,
                          loss, model.gamma_)
    assert np.diff(problem.neighbors()[0]).max() >= MANY_PARTNERS
    f_sdp = solve_sdp(problem).objective
    f_bcd = problem.objective(model.embedding_)
    assert f_bcd == pytest.approx(f_sdp, rel=1e-5)


def test_working_set_outgrowing_its_workspace_allocates_a_larger_one():
    """Started with every dual strictly inside the box, the working set of a row with 552
    partners holds more duals than the 8 x 8 workspace given: the row allocates a larger
    one and still ends at a KKT point."""
    rng = np.random.default_rng(11)
    d, rank = 2 * WORKING_SET_CAPACITY + 40, 40
    E, L, Tp, Ti, Ts, gamma = _instance(d, rank, 3)
    H, q, hi, A, s, lii = _dense_dual(E, L, Ti, Ts, d, K.HINGE, gamma, 1.0)
    x = rng.uniform(0.1 * hi, 0.9 * hi, size=d)
    _, dvec, _, ivec, _ = K.workspaces(rank, d, False)
    rounds = partner_dual(0, E, Ti, Ts, 0, d, s, lii, 0.0, hi, x, np.empty(rank), dvec,
                          np.empty((3, 8, 8)), ivec)
    assert rounds >= 1 and ivec[2][:d].sum() > 8
    res, scale = kkt_residual(H, q, d, 0.0, hi, x, np.empty(d))
    assert res <= 1e-9 * scale


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_sweep_over_a_row_with_forty_thousand_partners(loss):
    """A row with 40,000 partners: the sweep allocates no 3 d^2 dual workspace (38 GB
    here) and the row's duals meet the KKT conditions, checked through ``A^T u`` without
    forming ``P``."""
    n, rank, d = 40_001, 4, 40_000
    rng = np.random.default_rng(0)
    L = (1.01 * sp.identity(n, format="csr")).tocsr()
    pairs = np.column_stack([np.zeros(d, dtype=np.int64), np.arange(1, n)])
    signs = np.where(rng.random(d) < 0.5, 1.0, -1.0)
    gamma = 0.01
    Tp, Ti, Ts = NPKLProblem(L, pairs, signs, loss, gamma).neighbors()
    E = rng.standard_normal((n, rank)) / 4.0
    alpha = np.zeros(len(Ti))
    E_new = E.copy()
    K.sweep_constrained(np.array([0]), E_new, L.indptr.astype(np.int64),
                        L.indices.astype(np.int64), L.data, L.diagonal(), Tp, Ti, Ts,
                        K.LOSS_CODES[loss], gamma, 1.0, alpha, K.SQUARE_AUTO, np.zeros(3))
    assert np.array_equal(E_new[1:], E[1:])
    A = E[Ti[:d]] * Ts[:d, None]  # rows a_j
    x = alpha[:d]
    lii = 1.01
    u = A.T @ x  # s_0 = 0: no graph neighbours
    np.testing.assert_allclose(E_new[0], u / lii, rtol=0, atol=1e-12)
    delta, hi = (0.0, gamma / 2) if loss == "hinge" else (lii / gamma, np.inf)
    g = A @ u - lii + delta * x
    res = np.max(np.abs(x - np.clip(x - g, 0.0, hi)))
    scale = lii + (np.max(np.sum(A * A, axis=1)) + delta) * np.max(x)
    assert res <= 1e-9 * scale
