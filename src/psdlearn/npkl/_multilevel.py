r"""Multilevel start of the BCD solver: coarsen the graph, solve small, prolong.

Row-wise BCD carries information along the edges of the graph one sweep at a time, so the
smooth part of the solution (the directions of the smallest eigenvalues of ``L``, which
shrink as ``n`` grows) converges in a number of sweeps that grows with ``n``. Multilevel
methods (algebraic multigrid; the coarse-to-fine starts of graph partitioners) solve
that part on a smaller graph, where it is no longer smooth.

**Aggregation.** The samples are grouped into aggregates of neighbours
(:func:`aggregate`, the greedy aggregation of smoothed-aggregation multigrid, Vaněk,
Mandel & Brezina 1996) over the strong edges (at least :data:`STRENGTH` times the
strongest of the row): in index order, a sample whose strong neighbours are all free
forms an aggregate with them; every sample left over joins the aggregate it is most
strongly connected to. ``P`` is the ``(n, n_c)`` 0/1 matrix with ``P_{ia} = 1`` when sample ``i``
is in aggregate ``a``: one nonzero per row.

**Coarse problem.** The NPKL objective restricted to ``E = P E_c`` (every sample takes the
row of its aggregate) is

.. math::

    \Phi(P E_c) = \operatorname{tr}(E_c^T P^T L P E_c)
        + \gamma \sum_{(i, j) \in \mathcal{T}} \ell(T_{ij}\, e^c_{a(i)}{}^T e^c_{a(j)}),

the same problem on the coarse Laplacian ``L_c = P^T L P`` (symmetric positive definite
when ``L`` is and ``P`` has full column rank; for a combinatorial Laplacian ``D - W`` it
is again one, with the summed weights between aggregates) with each pair mapped to the
pair of its aggregates. A pair inside one aggregate would be a term on ``||e^c_a||^2``,
which the row updates do not have: it is dropped (a must-link there is already satisfied
in direction; a cannot-link there is a contradiction the coarse level cannot express).
Pairs landing on the same two aggregates are all kept, so the coarse loss weighs them
with their multiplicity, and a must-link and a cannot-link between the same aggregates
simply pull against each other as they do in the fine problem. Up to the dropped pairs,
``Phi_c(E_c) = Phi(P E_c)``: the coarse minimum is the best piecewise-constant point.

**Levels.** Aggregation repeats until the graph has at most :data:`COARSEST` samples
(or stops shrinking). Restricted to piecewise-constant embeddings, the graph term weighs
more against the pairs, and the critical loss weight ``gamma_0`` of the coarse problem
(:func:`psdlearn.npkl.gamma.critical_gamma`) grows as the levels coarsen. Where it
reaches the problem's ``gamma`` the coarse solution at ``gamma`` is zero, and a zero
start is a stationary point of every row update (method notes, "Multilevel start"). Such
a level is solved at a raised weight instead: ``r * gamma_0`` of its own, with ``r`` the
ratio ``gamma / gamma_0`` of the level above it (:func:`_level_gamma`). Its solution is
then not the restriction of the fine problem's but a start, as the smoothed coarse levels
of the hinge are: the level above solves its own problem from it. A first coarse level
with a zero optimum ends the hierarchy (there is no ratio to keep). The coarsest level
is solved from the random start; each level's solution, prolonged by ``P``, starts the
next finer one; every coarse level stops at ``COARSE_TOL_FACTOR * tol`` (a smoothed one
at ``SMOOTHING_TOL_FACTOR * tol``, :mod:`psdlearn.npkl.bcd`); the finest level is then
solved by :func:`psdlearn.npkl.bcd.fit_bcd` to ``tol`` and certified as from any other
start. The fine problem is convex in ``K`` and only its start changes, so the optimum is
the same. The prolonged point is piecewise constant: its error is the
jump between aggregates, which the first fine sweeps (a smoother) remove, while the
smooth error, the slow part, was solved on the coarse graph.

References: Vaněk, P., Mandel, J. & Brezina, M. (1996). Algebraic multigrid by smoothed
aggregation for second and fourth order elliptic problems. Computing, 56(3).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from numba import njit

from psdlearn.npkl._partner_dual import MANY_PARTNERS
from psdlearn.npkl.gamma import critical_gamma, loss_gradient_matrix, pair_lambda_bound
from psdlearn.npkl.losses import ROW_BALL, ROW_SQUARE, get_loss
from psdlearn.npkl.problem import NPKLProblem

__all__ = ["COARSEST", "MULTILEVEL_MIN_SAMPLES", "PAIR_WORK_RATIO", "Level", "aggregate",
           "coarse_problem", "galerkin", "hierarchy", "pairs_dominate", "prolong",
           "sweep_work", "use_multilevel"]

#: Coarsening stops at this many samples (the coarsest problem's BCD is cheap there).
COARSEST = 5000
#: ``solver_options={"multilevel": "auto"}`` uses the multilevel start from this many
#: samples (measured: see docs/notes/npkl.md, "Multilevel start").
MULTILEVEL_MIN_SAMPLES = 10_000
#: ``"auto"`` also leaves the coarse levels out when the pairs' part of a sweep is at least
#: this multiple of the graph's (:func:`sweep_work`): a coarse level keeps every pair
#: between aggregates, so its sweeps cost at least the pairs' part, and the start costs
#: more than it saves (measured: docs/notes/npkl.md, "Multilevel start").
PAIR_WORK_RATIO = 1.0
#: A level that keeps more than this fraction of the samples ends the coarsening.
MIN_REDUCTION = 0.5
#: A level with fewer samples than this fraction of ``COARSEST`` is not used: the level
#: before it is the coarsest (a coarse graph whose aggregates swallow it whole would
#: start the finer levels from a handful of rows).
MIN_COARSEST_FRACTION = 0.1
#: Strong edges (smoothed aggregation): ``-L_ij >= STRENGTH * max_k (-L_ik)``; the weak
#: ones, numerous on a coarse graph, neither block a root nor join its aggregate.
STRENGTH = 0.25


@njit(cache=True)
def _aggregate(indptr, indices, data, n, theta):  # pragma: no cover - compiled
    # the strong edges of sample i: j != i with -L_ij >= theta * max_k (-L_ik) > 0
    cut = np.zeros(n)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] != i and -data[p] > cut[i]:
                cut[i] = -data[p]
        cut[i] *= theta
    agg = np.full(n, -1, dtype=np.int64)
    n_agg = 0
    # pass 1: a sample whose strong neighbours are all free roots an aggregate of itself
    # and them
    for i in range(n):
        if agg[i] >= 0:
            continue
        free = True
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if j != i and -data[p] >= cut[i] and -data[p] > 0.0 and agg[j] >= 0:
                free = False
                break
        if not free:
            continue
        agg[i] = n_agg
        for p in range(indptr[i], indptr[i + 1]):
            if -data[p] >= cut[i] and -data[p] > 0.0:
                agg[indices[p]] = n_agg
        n_agg += 1
    # pass 2: every sample left over has a strong aggregated neighbour (else it had rooted
    # one); it joins the aggregate of its strongest link among the pass-1 aggregates
    first = agg.copy()
    for i in range(n):
        if first[i] >= 0:
            continue
        best, weight = -1, 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if j != i and first[j] >= 0 and -data[p] > weight:
                best, weight = first[j], -data[p]
        agg[i] = best
    return agg, n_agg


def aggregate(laplacian):
    """Aggregates of neighbouring samples of the graph of ``laplacian``.

    Parameters
    ----------
    laplacian : scipy.sparse matrix of shape (n, n)
        Symmetric; its off-diagonal entries ``L_ij < 0`` are the edges, ``-L_ij`` their
        strength.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Aggregate of each sample, ``0 .. n_c - 1``, numbered in the order of their first
        sample (so the coarse problem keeps the locality of the fine order).
    n_aggregates : int
    """
    L = sp.csr_matrix(laplacian)
    # the graph's own index arrays, not int64 copies of them
    labels, n_agg = _aggregate(L.indptr, L.indices, np.asarray(L.data, dtype=np.float64),
                               L.shape[0], STRENGTH)
    return labels, int(n_agg)


@njit(cache=True)
def _galerkin(indptr, indices, data, labels, n_c):  # pragma: no cover - compiled
    n = len(labels)
    # the samples of each aggregate, ascending (a counting sort of the labels)
    starts = np.zeros(n_c + 1, dtype=np.int64)
    for i in range(n):
        starts[labels[i] + 1] += 1
    for a in range(n_c):
        starts[a + 1] += starts[a]
    members = np.empty(n, dtype=np.int64)
    fill = starts[:-1].copy()
    for i in range(n):
        members[fill[labels[i]]] = i
        fill[labels[i]] += 1
    # pass 1: the distinct aggregates each aggregate's rows reach
    mark = np.full(n_c, -1, dtype=np.int64)
    indptr_c = np.zeros(n_c + 1, dtype=np.int64)
    for a in range(n_c):
        count = 0
        for t in range(starts[a], starts[a + 1]):
            i = members[t]
            for p in range(indptr[i], indptr[i + 1]):
                b = labels[indices[p]]
                if mark[b] != a:
                    mark[b] = a
                    count += 1
        indptr_c[a + 1] = indptr_c[a] + count
    # pass 2: the sums, each row's columns sorted
    indices_c = np.empty(indptr_c[n_c], dtype=np.int32)
    data_c = np.zeros(indptr_c[n_c], dtype=np.float64)
    slot = np.full(n_c, -1, dtype=np.int64)
    for a in range(n_c):
        lo, top = indptr_c[a], indptr_c[a]
        for t in range(starts[a], starts[a + 1]):
            i = members[t]
            for p in range(indptr[i], indptr[i + 1]):
                b = labels[indices[p]]
                if slot[b] < lo:
                    slot[b] = top
                    indices_c[top] = b
                    top += 1
                data_c[slot[b]] += data[p]
        for t in range(lo + 1, top):  # insertion sort: a row holds a few dozen columns
            b, v, q = indices_c[t], data_c[t], t
            while q > lo and indices_c[q - 1] > b:
                indices_c[q] = indices_c[q - 1]
                data_c[q] = data_c[q - 1]
                q -= 1
            indices_c[q] = b
            data_c[q] = v
    return indptr_c, indices_c, data_c


def galerkin(laplacian, labels, n_aggregates):
    """``L_c = P^T L P`` (:func:`prolongation`'s ``P``): ``(L_c)_ab`` is the sum of ``L_ij``
    over ``i`` in ``a`` and ``j`` in ``b``.

    Formed row by row of ``L_c`` from the aggregates' samples, with ``O(n)`` memory beside
    ``L`` and ``L_c`` (no expanded copy of ``L``'s entries).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_aggregates, n_aggregates)
        Sorted indices, no explicit duplicates.
    """
    L = sp.csr_matrix(laplacian)
    indptr, indices, data = _galerkin(L.indptr, L.indices,
                                      np.asarray(L.data, dtype=np.float64),
                                      np.asarray(labels, dtype=np.int64), int(n_aggregates))
    Lc = sp.csr_matrix((data, indices, indptr), shape=(n_aggregates, n_aggregates))
    Lc.has_sorted_indices = True
    return Lc


def prolongation(labels, n_aggregates):
    """``P`` of shape ``(n, n_c)``: ``P[i, labels[i]] = 1``, one nonzero per row."""
    n = len(labels)
    return sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, n_aggregates))


def coarse_problem(problem, labels, n_aggregates):
    """The problem restricted to ``E = P E_c`` (module docstring): ``L_c = P^T L P`` and
    the pairs between aggregates, those inside one dropped.

    Returns
    -------
    NPKLProblem
        Over the ``n_aggregates`` coarse samples; its pairs ``(a, b)``, ``a < b``, may
        repeat (multiplicity), and may be empty.
    """
    Lc = galerkin(problem.laplacian, labels, n_aggregates)
    pairs = labels[np.asarray(problem.pairs, dtype=np.int64).reshape(-1, 2)]
    keep = pairs[:, 0] != pairs[:, 1]
    pairs = np.sort(pairs[keep], axis=1)
    return NPKLProblem(Lc, pairs, np.asarray(problem.signs, dtype=np.float64)[keep],
                       problem.loss, problem.gamma, problem.b)


def prolong(labels, E_coarse, out=None, dtype=None, block=65_536):
    """``P E_c``: every sample gets the row of its aggregate, of type ``dtype``
    (``E_coarse``'s by default), written into ``out`` when given (C-contiguous; its type
    is then the result's), ``block`` rows at a time."""
    if out is None:
        out = np.empty((len(labels), E_coarse.shape[1]),
                       dtype=E_coarse.dtype if dtype is None else dtype)
    # in row blocks: a change of type then buffers one block, not the result
    for start in range(0, len(labels), block):
        out[start:start + block] = E_coarse[labels[start:start + block]]
    return out


class Level:
    """One coarsening step: the aggregate labels and the coarse problem."""

    __slots__ = ("labels", "problem")

    def __init__(self, labels, problem):
        self.labels, self.problem = labels, problem


def hierarchy(problem, rank, coarsest=None):
    """The coarse levels of ``problem``, finest first (empty when it is small already).

    Aggregation repeats while the problem has more than ``coarsest`` samples and each
    step keeps at most :data:`MIN_REDUCTION` of them; a level is kept only when it has at
    least ``rank`` samples, at least ``MIN_COARSEST_FRACTION * coarsest`` and some pair.
    For the margin losses a level's loss weight is :func:`_level_gamma`'s: ``gamma``
    where the level's optimum at ``gamma`` is not zero, else raised to keep the ratio
    ``gamma / gamma_0`` of the level above (module docstring); below the first coarse
    level such a level ends the hierarchy.
    """
    coarsest = COARSEST if coarsest is None else coarsest
    margin = get_loss(problem.loss).margin
    levels = []
    current, ratio = problem, None
    while current.n_samples > coarsest:
        labels, n_c = aggregate(current.laplacian)
        if (n_c > MIN_REDUCTION * current.n_samples or n_c < rank
                or n_c < MIN_COARSEST_FRACTION * coarsest):
            break
        coarse = coarse_problem(current, labels, n_c)
        if coarse.n_constraints == 0:
            break
        if margin:
            chosen = _level_gamma(coarse, problem.gamma, ratio)
            if chosen is None:
                break
            gamma, ratio = chosen
            if gamma != coarse.gamma:
                coarse = replace(coarse, gamma=gamma)
        levels.append(Level(labels, coarse))
        current = coarse
    return levels


def _level_gamma(coarse, gamma, ratio):
    """The loss weight of a coarse level (a margin loss) and its ratio ``gamma / gamma_0``.

    ``gamma`` when the level's optimum at ``gamma`` is not zero: the pairs' two-point
    vectors prove it in ``O(m)`` when ``gamma`` times their bound on ``lambda_max(G, L)``
    (:func:`~psdlearn.npkl.gamma.pair_lambda_bound`) exceeds 1, and that product is the
    ratio returned (a lower bound of it); otherwise :func:`critical_gamma` decides. A level
    whose optimum at ``gamma`` is zero is solved at ``ratio * gamma_0``, the ratio of the
    level above it (``ratio``), whose optimum is not zero; None when there is no such level
    (``ratio`` None: the first coarse level).

    Returns
    -------
    (gamma, ratio) or None
    """
    G = loss_gradient_matrix(coarse.n_samples, coarse.pairs, coarse.signs, coarse.loss)
    bound = gamma * pair_lambda_bound(coarse.laplacian, G)
    if bound > 1.0:
        return gamma, bound
    gamma0 = critical_gamma(coarse.laplacian, coarse.pairs, coarse.signs, coarse.loss)
    if gamma > gamma0:
        return gamma, gamma / gamma0
    if ratio is None or not np.isfinite(gamma0):
        return None
    return ratio * gamma0, ratio


def sweep_work(problem, rank):
    """Multiply-adds of one BCD sweep of ``problem`` at ``rank``: ``(graph, pairs)``.

    The graph's part is ``r nnz(L)``. A row with ``d`` partners costs about
    ``r d min(d, r)`` with the square loss (its Woodbury or direct solve), ``r d`` with the
    linear loss, and ``r d^2`` with the hinge losses (their dual Hessian), ``r^2 d`` where
    the row has more partners than the rank and at least
    :data:`~psdlearn.npkl._partner_dual.MANY_PARTNERS` (no Hessian formed).
    """
    r = float(rank)
    d = np.diff(problem.neighbors()[0]).astype(np.float64)
    kind = get_loss(problem.loss).kernel
    if kind == ROW_SQUARE:
        per_row = d * np.minimum(d, r)
    elif kind == ROW_BALL:
        per_row = d
    else:
        # the rows of _partner_dual.solved_here
        per_row = np.where((d >= MANY_PARTNERS) & (d > r), d * r, d * d)
    return r * float(problem.laplacian.nnz), r * float(per_row.sum())


def pairs_dominate(problem, rank):
    """Whether the pairs' part of a sweep is at least :data:`PAIR_WORK_RATIO` times the
    graph's (:func:`sweep_work`): then ``multilevel="auto"`` starts at the fine level."""
    graph, pairs = sweep_work(problem, rank)
    return pairs >= PAIR_WORK_RATIO * graph


def use_multilevel(setting, n_samples):
    """Whether ``solver_options["multilevel"]`` asks for the multilevel start at this
    size: ``True``, ``False``, or ``"auto"`` (from :data:`MULTILEVEL_MIN_SAMPLES`)."""
    if isinstance(setting, str):
        return n_samples >= MULTILEVEL_MIN_SAMPLES
    return bool(setting)


def multilevel_start(problem, E0, solve, coarsest=None, overwrite=False):
    """A start for ``problem`` solved coarse to fine over :func:`hierarchy`.

    Parameters
    ----------
    problem : NPKLProblem
    E0 : ndarray of shape (n_samples, rank)
        The random start; its first ``n_c`` rows start the coarsest level.
    solve : callable
        ``solve(coarse_problem, E, (i, count)) -> (E, n_iter, interrupted)`` at the
        ``i``-th of ``count`` coarse levels (coarsest first, from 1); it must not keep
        ``E`` (a view of ``E0`` at the coarsest level).
    coarsest : int, optional
        :func:`hierarchy`'s.
    overwrite : bool, default=False
        Prolong the finest coarse level's solution into ``E0`` itself (C-contiguous),
        which the caller no longer needs: no second array of the fine embedding's size.

    Returns
    -------
    E : ndarray of shape (n_samples, rank)
        The prolonged solution of the finest coarse level (``E0`` when there is none),
        of ``E0``'s type whatever the type the coarse levels were solved in.
    levels : list of (int, int)
        ``(n_samples, sweeps)`` of each coarse level solved, coarsest first.
    interrupted : bool
        A level was interrupted (``E`` is then its iterate prolonged to the fine level,
        and ``levels`` ends with it).
    """
    levels = hierarchy(problem, E0.shape[1], coarsest)
    if not levels:
        return E0, [], False
    E = np.ascontiguousarray(E0[: levels[-1].problem.n_samples])
    done = []
    interrupted = False
    for k in range(len(levels) - 1, -1, -1):
        if not interrupted:  # after a Ctrl-C the iterate is only prolonged to the fine level
            E, n_iter, interrupted = solve(levels[k].problem, E,
                                           (len(levels) - k, len(levels)))
            done.append((levels[k].problem.n_samples, int(n_iter)))
        # the coarse levels' type may differ from the fine one (bcd.COARSE_DTYPE): the
        # finest coarse level's solution is prolonged to the start's
        fine = k == 0
        E = prolong(levels[k].labels, E, out=E0 if overwrite and fine else None,
                    dtype=E0.dtype if fine else None)
    return E, done, interrupted
