r"""Problem (3) of Shen, Welsh & Wang (2008) over all impostor triplets, by re-selection.

From labels, every triplet ``(i, j, l)`` with ``j`` a *target neighbour* of ``i`` (one of
its ``q`` nearest same-class points in the Euclidean metric, fixed, as in large-margin
nearest neighbours) and ``l`` any point of another class is a constraint
``d_M(i, l)^2 - d_M(i, j)^2 >= rho - xi``. Problem (3) over this set ``T`` (about
``q n^2`` rows) with a fixed slack price ``C`` is solved by row generation (a cutting-plane
method on the primal of (3)):

1. Solve (3) on a working set ``W_k`` of rows (any solver of :mod:`.solvers`): ``M_k``,
   ``rho_k`` and dual weights ``w_k`` with the certified pair
   ``objective_k <= OPT(W_k) <= upper_k``.
2. Search, under ``M_k``, every row of ``T`` whose margin is below ``rho_k - eps``: for
   each ``i`` the points ``l`` of other classes with
   ``d_k(i, l)^2 < max_j d_k(i, j)^2 + rho_k`` (the *active impostors*; an exact
   nearest-neighbour search in ``X L_k^T``, widened until it covers that radius).
3. If there is none, ``M_k`` is optimal for (3) over all of ``T``: a row outside ``W_k``
   with margin at least ``rho_k`` meets the optimality conditions with ``w_r = 0``, so
   ``(M_k, rho_k, xi_k)`` and ``w_k`` extended by zeros are optimal, with the same gap.
   Otherwise the most violated rows join ``W_{k+1}`` (at most ``ceil(1 / C)`` per round),
   and rows with ``w_r = 0`` and a margin above ``rho_k`` leave it.

Monotonicity. Dropping rows whose optimal dual weight is zero leaves the optimum of (3)
unchanged (the primal solution stays feasible with the same value, the dual solution stays
feasible with the same value), and adding rows can only lower it (the primal is a maximum
over a smaller set). Hence ``OPT(W_{k+1}) <= OPT(W_k)``: the round optima never increase,
and each is an upper bound on ``OPT(U)`` for ``U`` the union of all working sets, which the
last round attains. ``C`` stays fixed across rounds (``C |W_k| >= 1`` holds since at least
``1 / C`` rows carry weight).

The first working set: each target pair with its nearest other-class point (Euclidean),
the ``max(1.5 / C, 1 / C + 50)`` smallest margins of them at ``M = I / D``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from psdlearn.graph import NeighborIndex
from psdlearn.psdboost._bounds import primal_value

__all__ = ["MAX_ROUNDS", "first_working_set", "impostor_triplets", "solve_rounds",
           "target_pairs"]

#: Re-selection rounds before the fit stops unconverged.
MAX_ROUNDS = 50
#: Other-class neighbours searched first per point (doubled where the radius needs more).
_FIRST_IMPOSTORS = 8
#: The first working set, in units of ``1 / C``, and its extra rows.
_START = 1.5
_START_EXTRA = 50
#: Rows dropped: dual weight below this fraction of ``C`` and margin above ``rho``.
_ZERO = 1e-6


def target_pairs(X, codes, n_neighbors):
    """The target neighbours: for each labelled ``i``, its ``n_neighbors`` nearest points
    of the same class (Euclidean; fewer in a smaller class).

    Parameters
    ----------
    X : ndarray of shape (n_samples, D)
    codes : ndarray of shape (n_samples,)
        Class codes ``0..c-1``, ``-1`` for unlabelled points.
    n_neighbors : int

    Returns
    -------
    ndarray of shape (p, 2), int64
        Rows ``(i, j)``, ordered by ``i`` then by the rank of ``j``.
    """
    pairs = []
    for c in np.unique(codes[codes >= 0]):
        inside = np.flatnonzero(codes == c)
        k = min(n_neighbors, len(inside) - 1)
        if k < 1:
            continue
        _, idx = NeighborIndex("exact").fit(X[inside]).kneighbors(n_neighbors=k)
        pairs.append(np.column_stack([np.repeat(inside, k), inside[idx].ravel()]))
    if not pairs:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.concatenate(pairs).astype(np.int64)
    return pairs[np.argsort(pairs[:, 0], kind="stable")]


def impostor_triplets(Z, codes, pairs, threshold, n_first=_FIRST_IMPOSTORS):
    """Every triplet ``(i, j, l)`` with ``(i, j)`` a target pair, ``l`` of another class and
    margin ``||z_i - z_l||^2 - ||z_i - z_j||^2 < threshold``, with its margin.

    For each ``i`` the other-class points are searched nearest first (exact search), and
    the search is widened (the number of neighbours doubled) for the points whose last
    neighbour found still lies within the radius ``max_j ||z_i - z_j||^2 + threshold``:
    no qualifying ``l`` is missed.

    Parameters
    ----------
    Z : ndarray of shape (n_samples, r)
        The points in the learned metric (``X L^T``).
    codes : ndarray of shape (n_samples,)
    pairs : ndarray of shape (p, 2)
        Target pairs, as :func:`target_pairs` returns them.
    threshold : float
        ``rho - eps`` of the round.
    n_first : int
        Neighbours searched first per point.

    Returns
    -------
    triplets : ndarray of shape (m, 3), int64
    margins : ndarray of shape (m,)
    """
    dj = np.sum((Z[pairs[:, 0]] - Z[pairs[:, 1]]) ** 2, axis=1)
    radius = np.full(len(Z), -np.inf)
    np.maximum.at(radius, pairs[:, 0], dj)
    radius += threshold
    out_t, out_m = [], []
    for c in np.unique(codes[pairs[:, 0]]):
        queries = np.unique(pairs[codes[pairs[:, 0]] == c, 0])
        queries = queries[radius[queries] > 0]
        others = np.flatnonzero((codes >= 0) & (codes != c))
        if len(queries) == 0 or len(others) == 0:
            continue
        index = NeighborIndex("exact").fit(Z[others])
        k = min(n_first, len(others))
        while len(queries):
            dist, idx = index.kneighbors(Z[queries], n_neighbors=k)
            d2 = dist**2
            inside = d2 < radius[queries, None]
            rows, cols = np.nonzero(inside)
            i, l2, dl = queries[rows], others[idx[rows, cols]], d2[rows, cols]
            widen = inside[:, -1] & (k < len(others))
            if widen.any():  # these points get all their neighbours in the next search
                keep = ~widen[rows]
                i, l2, dl = i[keep], l2[keep], dl[keep]
            t, m = _join_targets(pairs, dj, i, l2, dl, threshold)
            out_t.append(t)
            out_m.append(m)
            queries = queries[widen]
            k = min(2 * k, len(others))
    if not out_t:
        return np.empty((0, 3), dtype=np.int64), np.empty(0)
    return np.concatenate(out_t), np.concatenate(out_m)


def _join_targets(pairs, dj, i, other, dl, threshold):
    """The triplets ``(i, j, l)`` of the impostor hits ``(i, l)`` at squared distance
    ``dl`` with every target ``j`` of ``i``, whose margin ``dl - dj`` is below
    ``threshold``."""
    starts = np.searchsorted(pairs[:, 0], i, side="left")
    counts = np.searchsorted(pairs[:, 0], i, side="right") - starts
    hit = np.repeat(np.arange(len(i)), counts)
    row = np.arange(len(hit)) - np.repeat(np.cumsum(counts) - counts, counts)
    pair = np.repeat(starts, counts) + row
    margins = dl[hit] - dj[pair]
    keep = margins < threshold
    triplets = np.column_stack([i[hit], pairs[pair, 1], other[hit]])[keep]
    return triplets.astype(np.int64), margins[keep]


def _keys(triplets, n):
    """One integer per triplet row (for set membership)."""
    t = triplets.astype(np.int64)
    return (t[:, 0] * n + t[:, 1]) * n + t[:, 2]


def first_working_set(X, codes, pairs, C):
    """Each target pair with the nearest other-class point of its ``i`` (Euclidean): the
    ``max(1.5 / C, 1 / C + 50)`` of smallest margin, all if fewer."""
    nearest = np.full(len(X), -1, dtype=np.int64)
    for c in np.unique(codes[pairs[:, 0]]):
        inside = np.unique(pairs[codes[pairs[:, 0]] == c, 0])
        others = np.flatnonzero((codes >= 0) & (codes != c))
        _, idx = NeighborIndex("exact").fit(X[others]).kneighbors(X[inside], n_neighbors=1)
        nearest[inside] = others[idx[:, 0]]
    triplets = np.column_stack([pairs, nearest[pairs[:, 0]]])
    margins = _margins(X, np.eye(X.shape[1]), triplets)
    size = min(len(triplets), max(math.ceil(_START / C), math.ceil(1.0 / C) + _START_EXTRA))
    return triplets[np.sort(np.argpartition(margins, size - 1)[:size])]


def solve_rounds(X, codes, pairs, first, C, eps, solve, *, max_rounds=MAX_ROUNDS, deadline=None,
                 record=False):
    """Row generation over the impostor triplets (module docstring).

    Parameters
    ----------
    X : ndarray of shape (n_samples, D)
    codes : ndarray of shape (n_samples,)
        Class codes, ``-1`` unlabelled.
    pairs : ndarray of shape (p, 2)
        Target pairs, ``C p >= 1``.
    first : ndarray of shape (t0, 3)
        The first working set (:func:`first_working_set`).
    C : float
        Slack price, the same in every round.
    eps : float
        A row is violated when its margin is below ``rho - eps``.
    solve : callable
        ``solve(triplets) -> (result, spec)``: problem (3) on a working set, as the
        estimator dispatches it (its ``result.info`` holds ``metric``, ``rho``,
        ``slacks``, ``dual_weights`` and ``upper_bound``).
    max_rounds : int
    deadline : float or None
        ``time.perf_counter()`` value after which no new round starts.
    record : bool
        Keep each round's working set in its record (``"triplets"``).

    Returns
    -------
    result, spec, triplets, rounds, status
        The last round's solver result and solver spec, its working set, one record per
        round (``n_triplets``, ``objective``, ``upper_bound``, ``n_violated``,
        ``seconds``) and ``"optimal"`` (no violated triplet left), ``"max_rounds"``,
        ``"max_time"`` or ``"interrupted"`` (the last round's solver was).
    """
    start = time.perf_counter()
    n = len(X)
    q = math.ceil(1.0 / C - 1e-9)
    W = first
    rounds, status = [], "max_rounds"
    for _ in range(max_rounds):
        res, spec = solve(W)
        F = res.embedding
        margins_w = _margins(X, F, W)
        objective, rho, _ = primal_value(margins_w, C)
        upper = float(res.info["upper_bound"])
        Z = X @ F
        found, margins = impostor_triplets(Z, codes, pairs, rho - eps)
        new = ~np.isin(_keys(found, n), _keys(W, n))
        record_k = {"n_triplets": len(W), "objective": objective, "upper_bound": upper,
                    "n_violated": int(new.sum()), "seconds": time.perf_counter() - start}
        if record:
            record_k["triplets"] = W
        rounds.append(record_k)
        if res.interrupted:
            status = "interrupted"
            break
        if not new.any():
            status = "optimal"
            break
        if deadline is not None and time.perf_counter() > deadline:
            status = "max_time"
            break
        found, margins = found[new], margins[new]
        added = found[np.argsort(margins, kind="stable")[:q]]
        w = np.asarray(res.info["dual_weights"])
        keep = (w > _ZERO * C) | (margins_w <= rho)
        W = np.concatenate([W[keep], added])
        W = W[np.lexsort((W[:, 2], W[:, 1], W[:, 0]))]
    return res, spec, W, rounds, status


def _margins(X, F, triplets):
    """``<A_r, F F^T>`` per row."""
    Zi = X[triplets[:, 0]] @ F
    return (np.sum((Zi - X[triplets[:, 2]] @ F) ** 2, axis=1)
            - np.sum((Zi - X[triplets[:, 1]] @ F) ** 2, axis=1))
