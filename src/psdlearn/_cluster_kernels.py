"""Numba kernels of the constrained assignment of :func:`psdlearn.cluster.assign_units`.

The repair, the descent and the saturation order visit the units one at a time, each move
depending on the labels the previous ones left, so they do not vectorize; compiled, a whole
assignment of a few hundred units takes microseconds instead of the milliseconds of a
Python loop, and the constrained k-means runs it at every Lloyd step of every fold of
``assign="auto"``. The same steps also sum rows by group (the units' costs, the clusters'
centres) and find the must-link components, where ``np.add.at`` and a sparse graph cost
more to set up than to run on a few hundred points.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["components", "count_violations", "greedy_assign", "group_sums",
           "saturation_assign"]


@njit(cache=True)
def _best_allowed(cost, labels, indptr, indices, u, blocked):
    """Cheapest centre of unit ``u`` that none of its cannot-link neighbours occupies, and
    its cost; ``(0, inf)`` when they occupy every centre (the first of equal costs wins,
    as ``argmin`` picks it)."""
    blocked[:] = False
    for p in range(indptr[u], indptr[u + 1]):
        blocked[labels[indices[p]]] = True
    best, best_cost = 0, np.inf
    for c in range(cost.shape[1]):
        if not blocked[c] and cost[u, c] < best_cost:
            best, best_cost = c, cost[u, c]
    return best, best_cost


@njit(cache=True)
def greedy_assign(cost, edges, indptr, indices, linked, labels, max_sweeps):
    """Repair the cannot-links of ``labels`` in place, then descend (see ``assign_units``).

    Parameters
    ----------
    cost : ndarray of shape (n_units, n_clusters), float64
    edges : ndarray of shape (p, 2), int64
        Cannot-links between units, repaired in this order.
    indptr, indices : ndarray of int64
        The same cannot-links as an undirected adjacency (CSR) of the units.
    linked : ndarray of int64
        The units with at least one cannot-link, in increasing order.
    labels : ndarray of shape (n_units,), int64
        The least-cost centres on entry; the assignment on exit.
    max_sweeps : int
        Most sweeps of the descent.
    """
    blocked = np.zeros(cost.shape[1], dtype=np.bool_)
    for e in range(edges.shape[0]):  # phase 1: the cheaper move of each violated pair
        u, v = edges[e, 0], edges[e, 1]
        if labels[u] != labels[v]:
            continue
        cu, xu = _best_allowed(cost, labels, indptr, indices, u, blocked)
        cv, xv = _best_allowed(cost, labels, indptr, indices, v, blocked)
        ok_u, ok_v = np.isfinite(xu), np.isfinite(xv)
        du = xu - cost[u, labels[u]]
        dv = xv - cost[v, labels[v]]
        # the smaller extra cost moves, the smaller unit index on a tie
        if ok_u and (not ok_v or du < dv or (du == dv and u < v)):
            labels[u] = cu
        elif ok_v:
            labels[v] = cv
    for _ in range(max_sweeps):  # phase 2: local descent
        moved = False
        for u in linked:
            c, x = _best_allowed(cost, labels, indptr, indices, u, blocked)
            lu = labels[u]
            violated = False
            for p in range(indptr[u], indptr[u + 1]):
                if labels[indices[p]] == lu:
                    violated = True
                    break
            if np.isfinite(x) and c != lu and (violated or x < cost[u, lu]):
                labels[u] = c
                moved = True
        if not moved:
            break
    return labels


@njit(cache=True)
def count_violations(labels, edges):
    """Number of cannot-links ``(u, v)`` of ``edges`` with ``labels[u] == labels[v]``."""
    count = 0
    for e in range(edges.shape[0]):
        if labels[edges[e, 0]] == labels[edges[e, 1]]:
            count += 1
    return count


@njit(cache=True)
def saturation_assign(cost, indptr, indices, linked, labels):
    """Assign the cannot-linked units in saturation order, each to its cheapest centre
    that none of its assigned neighbours occupies (Brelaz 1979, with costs).

    The next unit is the one whose assigned neighbours already occupy the most distinct
    centres (ties: more cannot-links, then the smaller index), so the units with the fewest
    choices left choose first; a unit whose neighbours occupy every centre takes its
    cheapest one. With two centres this colours every bipartite cannot-link graph without
    a violation, which the repair from the least-cost start can miss.

    Parameters
    ----------
    cost : ndarray of shape (n_units, n_clusters), float64
    indptr, indices : ndarray of int64
        The cannot-links as an undirected adjacency (CSR) of the units.
    linked : ndarray of int64
        The units with at least one cannot-link.
    labels : ndarray of shape (n_units,), int64
        The least-cost centres on entry (kept for the units without cannot-links); the
        assignment on exit.
    """
    k = cost.shape[1]
    n_linked = linked.shape[0]
    # occupied[p, c]: a neighbour of linked[p] is assigned to c; position of each unit
    position = np.full(cost.shape[0], -1, np.int64)
    for p in range(n_linked):
        position[linked[p]] = p
    occupied = np.zeros((n_linked, k), dtype=np.bool_)
    saturation = np.zeros(n_linked, np.int64)
    done = np.zeros(n_linked, dtype=np.bool_)
    for _ in range(n_linked):
        best, best_sat, best_deg = -1, -1, -1
        for p in range(n_linked):
            if done[p]:
                continue
            u = linked[p]
            deg = indptr[u + 1] - indptr[u]
            if saturation[p] > best_sat or (saturation[p] == best_sat and deg > best_deg):
                best, best_sat, best_deg = p, saturation[p], deg
        u = linked[best]
        choice, choice_cost = -1, np.inf
        for c in range(k):
            if not occupied[best, c] and cost[u, c] < choice_cost:
                choice, choice_cost = c, cost[u, c]
        if choice < 0:
            choice = np.argmin(cost[u])
        labels[u] = choice
        done[best] = True
        for q in range(indptr[u], indptr[u + 1]):
            w = position[indices[q]]
            if not occupied[w, choice]:
                occupied[w, choice] = True
                saturation[w] += 1
    return labels


@njit(cache=True)
def group_sums(groups, values, n_groups):
    """``out[g] = sum of values[i] over groups[i] == g``, added in the order of ``i``.

    The order of ``np.add.at(out, groups, values)``, so the sums are the same to the bit.

    Parameters
    ----------
    groups : ndarray of shape (n,), int64
        Group of each row, in ``0 .. n_groups - 1``.
    values : ndarray of shape (n, p), float64
    n_groups : int

    Returns
    -------
    out : ndarray of shape (n_groups, p), float64
    """
    out = np.zeros((n_groups, values.shape[1]))
    for i in range(values.shape[0]):
        g = groups[i]
        for c in range(values.shape[1]):
            out[g, c] += values[i, c]
    return out


@njit(cache=True)
def _root(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]  # path halving
        i = parent[i]
    return i


@njit(cache=True)
def components(n, pairs):
    """Connected components of the graph on ``n`` nodes with the edges ``pairs``.

    Numbered ``0, 1, ...`` in the order of their smallest node, as
    ``scipy.sparse.csgraph.connected_components`` numbers them (it starts a new component
    at each unvisited node in increasing order).

    Parameters
    ----------
    n : int
    pairs : ndarray of shape (m, 2), int64

    Returns
    -------
    labels : ndarray of shape (n,), int64
    """
    parent = np.arange(n)
    for e in range(pairs.shape[0]):
        a, b = _root(parent, pairs[e, 0]), _root(parent, pairs[e, 1])
        if a != b:
            parent[max(a, b)] = min(a, b)
    number = np.full(n, -1, np.int64)
    labels = np.empty(n, np.int64)
    count = 0
    for i in range(n):
        r = _root(parent, i)
        if number[r] < 0:
            number[r] = count
            count += 1
        labels[i] = number[r]
    return labels
