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
2. Search, under ``M_k``, the rows of ``T`` outside ``W_k`` whose margin is below
   ``rho_k - eps``: points ``l`` of other classes with
   ``d_k(i, l)^2 < d_k(i, j)^2 + rho_k - eps`` for a target pair ``(i, j)`` (the *active
   impostors*). For a fixed pair the margin grows with ``d_k(i, l)``, so an exact
   nearest-neighbour query in ``X L_k^T`` (each pair's nearest other-class points
   outside ``W_k``) finds a violated row of every pair that has one, and the two most
   violated of each pair.
3. If there is none, ``M_k`` is optimal for (3) over all of ``T``: a row outside ``W_k``
   with margin at least ``rho_k`` meets the optimality conditions with ``w_r = 0``, so
   ``(M_k, rho_k, xi_k)`` and ``w_k`` extended by zeros are optimal, with the same gap.
   If there are some but the search found all of them (at most two per pair), the value
   of ``M_k`` on ``W_k`` and these rows is a lower bound on the optimum over ``T`` (the
   rows left out have margins above ``rho_k - eps``, which the rows' ``rho`` does not
   exceed), and ``upper_k`` still bounds it from above (``w_k`` extended by zeros); when
   the two are within ``eps`` the rows join ``W_k`` with zero weight and the fit ends,
   certified on all of ``T`` without another solve.
   Otherwise rows join ``W_{k+1}`` (at most ``2 ceil(1 / C)`` per round): each pair's
   most violated row first, the most violated of these first, then the pairs' second rows,
   and rows with ``w_r = 0`` and a margin above ``rho_k`` leave it, until the first round
   whose optimum is not below the previous one by more than ``eps`` (with the gaps:
   ``upper_k >= objective_{k-1} - eps``); from then on rows only join. Where the optimum
   is degenerate, the solver can return a different optimal ``M`` on each working set,
   under which a dropped row is violated again: without this rule the working sets can
   cycle; with it they grow, and the impostor triplets are finitely many.

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
from dataclasses import replace

import numpy as np

from psdlearn.graph import NeighborIndex
from psdlearn.psdboost._bounds import primal_value

__all__ = ["MAX_ROUNDS", "first_working_set", "impostor_triplets", "solve_rounds",
           "target_pairs"]

#: Re-selection rounds before the fit stops unconverged.
MAX_ROUNDS = 50
#: New rows per target pair that a round's search returns at most.
_NEW_PER_PAIR = 2
#: The first working set, in units of ``1 / C``, and its extra rows.
_START = 1.5
_START_EXTRA = 50
#: Rows added per round, in units of ``1 / C`` (the most violated first): two take fewer
#: rounds than one, on larger working sets (the trade-off is in the method notes).
_ADD = 2
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


def impostor_triplets(Z, codes, pairs, threshold, W, n_new=_NEW_PER_PAIR):
    """For each target pair ``(i, j)``, its ``n_new`` most violated impostor triplets
    outside ``W``: the nearest other-class points ``l`` of ``i`` in ``Z`` that are not in a
    row ``(i, j, l)`` of ``W``, kept where ``||z_i - z_l||^2 - ||z_i - z_j||^2 < threshold``.

    For a fixed pair the margin grows with ``||z_i - z_l||``, so the pair has a row below
    ``threshold`` outside ``W`` exactly when its nearest other-class point outside ``W``
    has one: an empty result proves that no impostor triplet outside ``W`` is violated.
    The search is an exact k-nearest-neighbour query per class
    (:class:`psdlearn.graph.NeighborIndex`), ``k`` the most rows a pair of the class holds
    in ``W`` plus ``n_new + 1`` (the last one tells whether the pair has more).

    Parameters
    ----------
    Z : ndarray of shape (n_samples, r)
        The points in the learned metric (``X L^T``).
    codes : ndarray of shape (n_samples,)
    pairs : ndarray of shape (p, 2)
        Target pairs, as :func:`target_pairs` returns them.
    threshold : float
        ``rho - eps`` of the round.
    W : ndarray of shape (t, 3)
        The working set.
    n_new : int
        Rows per pair at most.

    Returns
    -------
    triplets : ndarray of shape (m, 3), int64
    margins : ndarray of shape (m,)
    rank : ndarray of shape (m,)
        The row's rank among its pair's new rows (0 for the most violated).
    complete : bool
        Whether these are all the rows outside ``W`` below ``threshold`` (no pair has
        more than ``n_new``).
    """
    n = len(Z)
    pair_keys = pairs[:, 0] * n + pairs[:, 1]
    order = np.argsort(pair_keys, kind="stable")
    held_count = np.zeros(len(pairs), dtype=np.int64)
    np.add.at(held_count, order[np.searchsorted(pair_keys[order], W[:, 0] * n + W[:, 1])], 1)
    in_w = _keys(W, n)
    dj = np.sum((Z[pairs[:, 0]] - Z[pairs[:, 1]]) ** 2, axis=1)
    out_t, out_m, out_r, complete = [], [], [], True
    for c in np.unique(codes[pairs[:, 0]]):
        rows = np.flatnonzero(codes[pairs[:, 0]] == c)
        others = np.flatnonzero((codes >= 0) & (codes != c))
        if len(others) == 0:
            continue
        k = min(len(others), int(held_count[rows].max()) + n_new + 1)
        anchors, where = np.unique(pairs[rows, 0], return_inverse=True)
        _, idx = NeighborIndex("exact").fit(Z[others]).kneighbors(Z[anchors], n_neighbors=k)
        nbr = others[idx[where]]  # (rows, k), nearest first
        cand = np.column_stack([np.repeat(pairs[rows], k, axis=0), nbr.ravel()])
        fresh = ~np.isin(_keys(cand, n), in_w).reshape(len(rows), k)
        rank = np.cumsum(fresh, axis=1) - 1
        take = fresh & (rank < n_new)
        zi = Z[np.repeat(pairs[rows, 0], k)]
        margins = (np.sum((zi - Z[nbr.ravel()]) ** 2, axis=1)
                   - np.repeat(dj[rows], k)).reshape(len(rows), k)
        hit = take & (margins < threshold)
        complete = complete and not np.any(fresh & (rank == n_new) & (margins < threshold))
        out_t.append(cand.reshape(len(rows), k, 3)[hit])
        out_m.append(margins[hit])
        out_r.append(rank[hit])
    if not out_t:
        return (np.empty((0, 3), dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int64),
                True)
    return (np.concatenate(out_t).astype(np.int64), np.concatenate(out_m),
            np.concatenate(out_r), complete)


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
        ``seconds``; ``appended``, the rows joined at the end without a solve, in a last
        round that ends by step 3's bound) and ``"optimal"`` (no violated triplet left),
        ``"max_rounds"``,
        ``"max_time"`` or ``"interrupted"`` (the last round's solver was).
    """
    start = time.perf_counter()
    q = math.ceil(1.0 / C - 1e-9)
    W = first
    rounds, status, drop = [], "max_rounds", True
    for _ in range(max_rounds):
        res, spec = solve(W)
        F = res.embedding
        margins_w = _margins(X, F, W)
        objective, rho, _ = primal_value(margins_w, C)
        upper = float(res.info["upper_bound"])
        found, margins, rank, complete = impostor_triplets(X @ F, codes, pairs, rho - eps, W)
        record_k = {"n_triplets": len(W), "objective": objective, "upper_bound": upper,
                    "n_violated": len(found), "seconds": time.perf_counter() - start}
        if len(found) and complete and not res.interrupted:
            # Every violated row is known: M_k's value on W and them, against upper_k
            # (w_k extended by zeros stays dual feasible), certifies the whole problem.
            objective_u, rho_u, xi_u = primal_value(np.r_[margins_w, margins], C)
            if upper - objective_u <= eps:
                res, W = _appended(res, W, found, rho_u, xi_u)
                record_k.update(n_triplets=len(W), objective=objective_u, n_violated=0,
                                appended=len(found))
        if record:
            record_k["triplets"] = W
        rounds.append(record_k)
        if res.interrupted:
            status = "interrupted"
            break
        if len(found) == 0 or "appended" in record_k:
            status = "optimal"
            break
        if deadline is not None and time.perf_counter() > deadline:
            status = "max_time"
            break
        # the pairs' most violated rows first, so that a round reaches many anchors
        added = found[np.lexsort((margins, rank))[:_ADD * q]]
        # No progress (the optimum fell by at most eps and the gaps): from now on rows
        # only join, so that degenerate optima cannot make the working sets cycle.
        drop = drop and (len(rounds) < 2 or upper < rounds[-2]["objective"] - eps)
        w = np.asarray(res.info["dual_weights"])
        keep = (w > _ZERO * C) | (margins_w <= rho) | (not drop)
        W = np.concatenate([W[keep], added])
        W = W[np.lexsort((W[:, 2], W[:, 1], W[:, 0]))]
    return res, spec, W, rounds, status


def _appended(res, W, found, rho, xi):
    """The round's result on ``W`` and the rows ``found`` (zero dual weight), sorted as
    the working sets are."""
    W = np.concatenate([W, found])
    w = np.r_[np.asarray(res.info["dual_weights"]), np.zeros(len(found))]
    order = np.lexsort((W[:, 2], W[:, 1], W[:, 0]))
    info = {**res.info, "rho": rho, "slacks": xi[order], "dual_weights": w[order]}
    return replace(res, info=info), W[order]


def _margins(X, F, triplets):
    """``<A_r, F F^T>`` per row."""
    Zi = X[triplets[:, 0]] @ F
    return (np.sum((Zi - X[triplets[:, 2]] @ F) ** 2, axis=1)
            - np.sum((Zi - X[triplets[:, 1]] @ F) ** 2, axis=1))
