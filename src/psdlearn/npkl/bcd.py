"""Block coordinate descent for low-rank NPKL (Hu & Kwok 2015, Algorithm 1).

With ``K = E E^T`` (``E`` of shape ``(n, r)``, ``E = V^T`` of the paper) the NPKL objective
(10) is

.. math::

    \\Phi(E) = \\operatorname{tr}(E^T L E)
             + \\gamma \\sum_{(i, j) \\in \\mathcal{T}} \\ell(T_{ij} e_i^T e_j).

Each sweep updates every row ``e_i`` once by the exact minimizer of ``Phi`` in that row,
the others held fixed (Gauss-Seidel): first the constrained samples (those in some pair)
in a fresh random order, by the dual QPs (22)/(25) (hinge, squared hinge) or the closed
forms (28)/(31) (square, linear), then the unconstrained ones by (13) in index order, or
by ``block_iter`` Jacobi steps of the block iteration (17). Every per-row problem is
strictly convex, so ``Phi`` never increases and the iterates converge to a local minimum
(Theorem 1). A sweep costs ``O(r (nnz(L) + m))`` plus one tiny QP per constrained sample;
memory is ``O(r n)``. The mathematics of the per-row updates is in
:mod:`psdlearn.npkl._kernels`, the small-QP method in :mod:`psdlearn.npkl._qp`.
"""

from __future__ import annotations

import time
import warnings
from functools import partial

import numba
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, shortest_path
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from psdlearn._linalg import PARALLEL_MIN_WORK
from psdlearn._progress import progress_bar
from psdlearn._solver import SolverResult

from . import _kernels as K
from ._blocks import BlockedPass
from ._extrapolation import WINDOW, Extrapolation
from ._multilevel import multilevel_start, pairs_dominate, use_multilevel
from .escalation import AdaptiveRound
from .losses import LOSS_TABLE, ROW_HINGE, get_loss

__all__ = ["BCD_LOSSES", "fit_bcd", "initial_embedding", "level_split", "parallel_split",
           "relaxation_factor", "solve_bcd"]

#: The losses with a BCD row-update kind in :data:`psdlearn.npkl.losses.LOSS_TABLE`.
BCD_LOSSES = tuple(name for name, loss in LOSS_TABLE.items() if loss.kernel is not None)
#: Sweeps between exact objective evaluations (in between, exact per-row increments).
REFRESH = 25
#: Mean ``K_ii = ||e_i||^2`` below which the embedding has vanished (``K = 0``) and the
#: sweeps stop: the losses' margins are 1, so such a kernel is zero to working precision.
VANISHED = 1e-16
#: Smoothing continuation of ``hinge_smoothing="auto"``, followed by an exact hinge stage.
HINGE_SMOOTHING_AUTO = (1e-1, 1e-2, 1e-3, 1e-4)
#: The smoothed stages stop at ``SMOOTHING_TOL_FACTOR * tol``; the exact stage at ``tol``.
#: Measured on a1a, iris, sonar, glass, wine and heart (3 seeds): against 10, a factor of 30
#: cuts the sweeps by up to 40% (a1a 323 -> 191) and leaves the final hinge objective within
#: 1e-4 relative (a1a +3e-5).
SMOOTHING_TOL_FACTOR = 30.0
#: An intermediate round of ``rank="adaptive"`` stops its exact stage at
#: ``INTERMEDIATE_TOL_FACTOR * tol``: like the smoothed stages, it only brings the next
#: round near its optimum (``psdlearn.npkl.escalation.AdaptiveRound``).
INTERMEDIATE_TOL_FACTOR = SMOOTHING_TOL_FACTOR
#: The exact stage of the hinge at a fixed rank, and in the final round of
#: ``rank="adaptive"``, also stops when :data:`REFRESH` sweeps lower the objective by less
#: than ``FINAL_PLATEAU_FACTOR * certificate_tol`` (relative; ``plateau_tol`` of
#: :func:`solve_bcd`): its rank is fixed (a kinked loss's final round never escalates; a
#: fixed rank has no round after it), and row-wise BCD on the exact hinge crawls
#: along the kinks once the smoothing bias is gone (a9a, rank 16: 389 sweeps to ``tol =
#: 1e-5``, the last 364 of which lowered ``f`` by 1.3e-6 relative). The factor is the
#: escalation's own threshold (``ESCALATION_MIN_DECREASE``): a decrease that would not buy
#: a column does not buy sweeps either.
FINAL_PLATEAU_FACTOR = 1e-2
#: The stopping rule of a stalled run (:func:`stalled`): a stage stops when the decrease
#: still to come is at most ``stall_tol = STALL_FACTOR * certificate_tol**2 * tol /
#: DEFAULT_TOL`` relative (``certificate_tol=None``: :data:`DEFAULT_CERTIFICATE_TOL`).
#: Squared: the certificate's bound is first order in the distance to the optimum where
#: the objective is second order, so a bound of ``certificate_tol`` needs the objective
#: within about ``certificate_tol**2`` (on iris, a threshold of ``1e-3 certificate_tol``
#: already left one of eight fits uncertified that ``tol`` alone certifies). A smaller
#: ``tol`` asks proportionally more, as an uncertified fit's warning advises.
STALL_FACTOR = 0.1
#: Sweeps per window of the stall rule, which is checked at every ``STALL_WINDOW``-th
#: sweep from the ``3 * STALL_WINDOW``-th (its windows end between the exact evaluations:
#: the running objective there is the sum of exact row increments).
STALL_WINDOW = 5
DEFAULT_CERTIFICATE_TOL = 1e-4
DEFAULT_TOL = 1e-5
#: The coarse levels of the multilevel start solve the hinge smoothed at this ``mu``: a
#: start for the continuation's last stages (``mu = 1e-3, 1e-4``, then the exact hinge).
COARSE_SMOOTHING = HINGE_SMOOTHING_AUTO[1]
#: The coarse levels of the multilevel start on a loss they solve unsmoothed stop at
#: ``COARSE_TOL_FACTOR * tol``. They carry the slow directions of the graph, which the
#: fine sweeps converge slowest: a coarse level left loose hands them to the fine level,
#: where a sweep costs more (method notes, "The coarse levels' tolerance"). A smoothed
#: coarse level (the hinge's, at :data:`COARSE_SMOOTHING`) solves another problem, a start
#: for the continuation like its smoothed stages, and stops at ``SMOOTHING_TOL_FACTOR *
#: tol`` as they do.
COARSE_TOL_FACTOR = 3.0
#: The coarse levels sweep in single precision whatever the fit's ``dtype``: they only
#: start the fine level, which solves the problem itself to ``tol`` in the fit's type, and
#: a sweep's cost is the memory it reads (method notes, "Multilevel start").
COARSE_DTYPE = np.float32
#: ``options.state`` of :func:`fit_bcd` in ``NPKL.partial_fit``: ``E0`` is the optimum of
#: a subset of the pairs (:func:`partial_schedule`).
PARTIAL = "partial"


def _pair_multipliers(problem, alpha):
    """``alpha_k = alpha_slot(i, j) + alpha_slot(j, i)`` per pair (see :func:`solve_bcd`)."""
    forward, backward = problem.pair_slots
    return alpha[forward] + alpha[backward]


def _as_generator(random_state):
    """A NumPy random generator from ``None``, an int, a ``Generator`` or a ``RandomState``."""
    if isinstance(random_state, np.random.RandomState | np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def initial_embedding(n_samples, rank, random_state=None, *, scale=1.0, max_norm=None):
    """Random starting point ``E0`` with rows of norm about ``scale``.

    Entries are i.i.d. ``N(0, scale^2 / rank)``, so ``E ||e_i||^2 = scale^2`` and the
    initial kernel ``K0 = E0 E0^T`` has unit-order diagonal and nearly orthogonal rows
    (``|K0_ij| ~ scale^2 / sqrt(rank)``), i.e. no prior coupling between samples.

    Parameters
    ----------
    n_samples : int
        Number of rows ``n``.
    rank : int
        Number of columns ``r``.
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        Source of randomness.
    scale : float, default=1.0
        Typical row norm.
    max_norm : float, optional
        Rows longer than this are scaled back onto the ball ``||e_i|| <= max_norm`` (pass
        ``b`` for the linear loss, whose feasible set is that ball).

    Returns
    -------
    E0 : ndarray of shape (n_samples, rank)
    """
    rng = _as_generator(random_state)
    E = rng.standard_normal((int(n_samples), int(rank)))
    E *= float(scale) / np.sqrt(rank)  # in place: no second array of the start's size
    if max_norm is not None:
        _project_rows(E, float(max_norm))
    return E


def _project_rows(E, radius):
    """Scale rows of ``E`` with ``||e_i|| > radius`` onto the sphere, in place."""
    norms = np.linalg.norm(E, axis=1)
    over = norms > radius
    E[over] *= (radius / norms[over])[:, None]


def level_split(laplacian, samples, n_parts):
    """Split ``samples`` into ``n_parts`` parts joined by no edge of ``L``, plus a separator.

    Connected components are independent: they are dealt to the parts, largest first, each
    to the part with the fewest samples so far. A component too large for one part is cut
    by breadth-first levels from a pseudo-peripheral node (the farthest node from one of
    its nodes): an edge joins nodes of the same or of adjacent levels, so the nodes strictly
    between two chosen levels share no edge with the others, and the chosen levels are the
    separator. The levels are chosen where the cumulative count crosses ``k / n_parts``.

    Parameters
    ----------
    laplacian : scipy.sparse.csr_matrix of shape (n, n)
        Symmetric (its graph is searched as a directed one).
    samples : ndarray of shape (n_s,), int64
        The rows to split, in the order each part keeps.
    n_parts : int
        Number of parts (>= 2).

    Returns
    -------
    order : ndarray of shape (n_s,), int64
        ``samples`` part by part, the separator last.
    bounds : ndarray of shape (n_parts + 2,), int64
        Slice boundaries of the parts and the separator in ``order`` (empty parts kept).
    """
    # L is symmetric, so its directed graph is the undirected one, and the directed
    # searches skip scipy's symmetrization of L (half the time at n = 1e6)
    _, labels = connected_components(laplacian, directed=True, connection="weak")
    comp = labels[samples]
    sizes = np.bincount(comp)
    part = np.full(len(samples), -1, dtype=np.int64)
    loads = np.zeros(n_parts + 1)
    big = int(np.argmax(sizes))
    if sizes[big] > len(samples) / n_parts:
        in_big = comp == big
        with warnings.catch_warnings():  # the Laplacian's negative weights are not used
            warnings.simplefilter("ignore")
            far = shortest_path(laplacian, method="D", unweighted=True, directed=True,
                                indices=int(samples[in_big][0]))
            start = int(np.argmax(np.where(np.isfinite(far), far, -1)))
            level = shortest_path(laplacian, method="D", unweighted=True, directed=True,
                                  indices=start)
        level = level[samples[in_big]].astype(np.int64)
        cum = np.cumsum(np.bincount(level))
        cuts = []
        for k in range(1, n_parts):
            cut = int(np.searchsorted(cum, k * len(level) / n_parts))
            if cut < len(cum) and (not cuts or cut >= cuts[-1] + 2):
                cuts.append(cut)
        sub = np.searchsorted(np.asarray(cuts, dtype=np.int64), level, side="left")
        sub[np.isin(level, cuts)] = n_parts
        part[in_big] = sub
        loads += np.bincount(sub, minlength=n_parts + 1)
        sizes[big] = 0
    # deal the remaining components (one O(n) mapping at the end: a kNN graph can have
    # thousands of small components)
    comp_part = np.full(len(sizes), -1, dtype=np.int64)
    for c in np.argsort(-sizes, kind="stable"):
        if sizes[c] == 0:
            break
        k = int(np.argmin(loads[:n_parts]))
        comp_part[c] = k
        loads[k] += sizes[c]
    dealt = comp_part[comp] >= 0
    part[dealt] = comp_part[comp[dealt]]
    order = samples[np.argsort(part, kind="stable")]
    bounds = np.zeros(n_parts + 2, dtype=np.int64)
    bounds[1:] = np.cumsum(np.bincount(part, minlength=n_parts + 1))
    return order, bounds


def parallel_split(problem, rank, parallel="auto"):
    """The parts of the threaded unconstrained pass of :func:`solve_bcd`, or None.

    Parameters
    ----------
    problem : NPKLProblem
    rank : int
        Rank ``r`` of the embedding (the pass costs ``r`` per stored entry of ``L``).
    parallel : "auto" or bool, default="auto"
        ``False``: None. ``True``: split whenever ``numba.get_num_threads() >= 2``.
        ``"auto"``: only from :data:`psdlearn._linalg.PARALLEL_MIN_WORK` multiply-adds per
        pass and when the largest part plus the separator is at most 0.8 of the
        unconstrained samples.

    Returns
    -------
    tuple (order, bounds) of :func:`level_split` over the unconstrained samples, or None
    for the serial pass.
    """
    threads = numba.get_num_threads()
    L = problem.laplacian
    # decided before the unconstrained set is found: one thread, or all of L too little work
    if (parallel is False or threads < 2
            or (parallel == "auto" and L.nnz * int(rank) < PARALLEL_MIN_WORK)):
        return None
    free = problem.paired_rows[1]
    if len(free) < 2:
        return None
    work = int((L.indptr[free + 1] - L.indptr[free]).sum()) * int(rank)
    if parallel == "auto" and work < PARALLEL_MIN_WORK:
        return None
    order, bounds = level_split(L, free, threads)
    sizes = np.diff(bounds)
    if parallel == "auto" and sizes[:-1].max() + sizes[-1] > 0.8 * len(free):
        return None  # a wide separator: the serial pass is as fast
    return order, bounds


def solve_bcd(
    problem,
    E0,
    *,
    max_iter=1000,
    tol=1e-5,
    random_state=None,
    unconstrained="sequential",
    block_iter=1,
    smoothing=0.0,
    omega=1.0,
    parallel="auto",
    callback=None,
    plateau_tol=None,
    window_tol=None,
    stall_tol=None,
    dtype=np.float64,
    extrapolate=0,
    copy=True,
):
    """Minimize the NPKL objective (10) over ``E`` by block coordinate descent (Alg. 1).

    Parameters
    ----------
    problem : NPKLProblem
        Laplacian (CSR, positive diagonal), constraints, a loss of :data:`BCD_LOSSES`
        (``"hinge"``, ``"squared_hinge"``, ``"square"``, ``"linear"``), ``gamma`` and ``b``.
    E0 : array-like of shape (n_samples, rank)
        Starting point (not modified, unless ``copy=False``). For the linear loss its rows
        are first projected onto the feasible ball ``||e_i|| <= b``.
    max_iter : int, default=1000
        Maximum number of sweeps.
    tol : float, default=1e-5
        Stop when ``||E_t - E_{t-1}||_F / ||E_t||_F < tol`` (line 14 of Alg. 1), or when
        the embedding has vanished (mean ``K_ii`` below :data:`VANISHED`; the relative
        test cannot hold while ``E`` shrinks geometrically to the optimum ``K = 0``).
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        Draws the order of the constrained samples in each sweep. Same seed, same result.
    unconstrained : {"sequential", "block"}, default="sequential"
        Update of the samples in no pair: Gauss-Seidel by (13) in index order, or
        ``block_iter`` Jacobi steps of the block iteration (17).
    block_iter : int, default=1
        Jacobi steps per sweep with ``unconstrained="block"``. One step costs the same as
        the sequential pass; more steps move ``E_U`` closer to its minimizer given ``E_L``
        (geometric rate ``<= 1 / (1 + delta)`` for the normalized Laplacian).
    smoothing : float, default=0.0
        Hinge loss only: with ``smoothing = mu > 0`` the rows minimize the Huber-smoothed
        hinge ``h_mu`` (see :mod:`psdlearn.npkl._kernels`) instead of the hinge, a ``C^1``
        surrogate with ``hinge - mu / 2 <= h_mu <= hinge``; the smoothed objective then
        never increases, and ``objective_history`` still reports the hinge objective (10).
    omega : float, default=1.0
        Over-relaxation of the row updates (not in Hu & Kwok 2015): a row moves to
        ``e_i + omega (v* - e_i)`` instead of the exact row minimizer ``v*`` when that does
        not increase its row objective (always, for quadratic rows and ``0 < omega < 2``),
        else to ``v*``. The objective stays non-increasing; ``omega = 1`` is Algorithm 1.
        On kNN Laplacians with few constrained samples ``omega ~ 1.8`` cuts the sweeps
        several-fold (successive over-relaxation of the Laplacian part).
    parallel : "auto", bool or tuple, default="auto"
        Run the sequential pass over the unconstrained samples on ``numba.get_num_threads()``
        threads: the samples are split by :func:`level_split` into parts that share no edge
        of ``L``, the parts are updated concurrently and the separator after them, which
        is the sequential pass in another order (still Algorithm 1, same result whatever
        the timing). ``"auto"``: when the pass has at least
        :data:`psdlearn._linalg.PARALLEL_MIN_WORK` multiply-adds and the separator is
        narrow enough to gain 1.25x (see
        :func:`parallel_split`). A tuple is a split of :func:`parallel_split` computed
        once for several calls on the same problem.
    callback : callable, optional
        ``callback(n_iter, E, objective)`` after every sweep (``E`` is the live array: do not
        modify it), including the last one; returning ``True`` stops the solver there
        (``interrupted=True``).
    plateau_tol : float, optional
        Also stop (``converged=True``) at the first sweep ``t``, a multiple of
        :data:`REFRESH`, where the objective the rows minimize (``info["surrogate_history"]``,
        exact at such sweeps) decreased by less than ``plateau_tol * |Phi_t|`` over the
        last ``REFRESH`` sweeps: ``Phi_{t - REFRESH} - Phi_t < plateau_tol |Phi_t|``. Used
        by the final round of ``rank="adaptive"`` on the hinge (:func:`fit_bcd`).
    window_tol : float, optional
        Also stop (``converged=True``) from the :data:`STALL_WINDOW`-th sweep on, at the
        first sweep ``t`` where that objective (running sums of the rows' exact changes
        between the exact evaluations) decreased by less than ``window_tol * |Phi_t|``
        over the last :data:`STALL_WINDOW` sweeps. Used by the exact hinge stage of a fit
        without a certificate (:func:`fit_bcd`).
    stall_tol : float, optional
        Also stop (``converged=True``) when the decrease still to come, extrapolated from
        the last three windows of :data:`STALL_WINDOW` sweeps, is at most
        ``stall_tol * |Phi_t|`` (the stopping rule of a stalled run, :func:`stalled`),
        checked at every ``STALL_WINDOW``-th sweep from the ``3 * STALL_WINDOW``-th.
    dtype : {np.float64, np.float32}, default=np.float64
        Type of the embedding and of the Laplacian's values in the sweeps
        (:mod:`psdlearn.npkl._kernels`, "Precision": the arithmetic is float64 either
        way). With float32 the sweeps minimize the objective of ``L`` rounded to float32,
        and ``objective_history`` is that objective.
    extrapolate : int, default=0
        Every ``extrapolate`` sweeps (0: never), move ``E`` to the minimizer of the
        objective the rows minimize over the plane spanned by the displacements of the
        last two windows of sweeps, when that lowers it
        (:mod:`psdlearn.npkl._extrapolation`; not with the linear loss). The objective
        stays non-increasing; the optimum is unchanged. Keeps two more arrays of the
        shape of ``E``.
    copy : bool, default=True
        Whether ``E0`` is copied. ``False`` lets the sweeps run in ``E0`` itself when it
        is C-ordered of ``dtype`` (a start the caller no longer needs: one array of the
        embedding's size less, 4 GB at 10^7 points and rank 50).

    Returns
    -------
    SolverResult
        ``embedding`` (final ``E``, ``K = E E^T``); ``objective_history`` (``Phi`` at the
        start, then after every sweep); ``time_history`` (cumulative solver seconds, the
        objective evaluations and ``callback`` not counted); ``n_iter`` (sweeps);
        ``converged`` (the test of ``tol``, or of ``plateau_tol``, held before
        ``max_iter``; stopping at ``max_iter`` is not an error here, callers decide whether
        to warn);
        ``interrupted`` (a KeyboardInterrupt or the callback stopped the sweeps:
        ``embedding`` holds every row update completed, each one never increasing the
        objective, and the last history entry is its exact objective); ``multipliers``
        (hinge only: the multiplier ``alpha_k`` of each pair in the matrix convention
        ``S = L - sum_k alpha_k T_k S_k`` of :mod:`psdlearn.npkl.certificate`, i.e. twice
        the mean of the two per-row dual variables of the pair, each in
        ``[0, gamma / 2]``; None for the other losses). ``info["surrogate_history"]``: the
        objective the rows actually minimized (the smoothed hinge objective when
        ``smoothing > 0``, else the same values as ``objective_history``).

    Notes
    -----
    Every row update is the exact minimizer of a strictly convex problem, hence
    ``objective_history`` is non-increasing up to rounding (Theorem 1 of Hu & Kwok 2015).
    """
    gamma = float(problem.gamma)
    n = problem.n_samples
    E = (np.array(E0, dtype=dtype, order="C", copy=True) if copy
         else np.asarray(E0, dtype=dtype, order="C"))
    if E.ndim != 2 or E.shape[0] != n:
        raise ValueError(f"E0 must have shape ({n}, rank), got {E.shape}.")
    if not np.all(np.isfinite(E)):
        raise ValueError("E0 contains NaN or inf.")
    Lp, Li, Lx, diag = problem.sweep_arrays(dtype)

    table = get_loss(problem.loss)
    loss = table.kernel
    b = float(problem.b)
    omega = float(omega)
    # the kernels read the smoothing through their scalar parameter ``b`` (unused by hinge)
    inner_loss, param = loss, b
    if loss == ROW_HINGE and smoothing > 0:
        inner_loss, param = K.SMOOTH_HINGE, float(smoothing)
    radius = b if table.bounded else np.inf
    if radius < np.inf:
        _project_rows(E, radius)
    Tp, Ti, Ts = problem.neighbors()
    Tp = np.ascontiguousarray(Tp, dtype=np.int64)
    Ti = np.ascontiguousarray(Ti, dtype=np.int64)
    Ts = np.ascontiguousarray(Ts, dtype=np.float64)
    pairs = np.ascontiguousarray(problem.pairs, dtype=np.int64).reshape(-1, 2)
    signs = np.ascontiguousarray(problem.signs, dtype=np.float64)
    constrained, free = problem.paired_rows
    alpha = np.zeros(len(Ti))  # dual warm starts, one per adjacency slot
    if unconstrained == "block":
        if block_iter < 1:  # a solver-only argument: no estimator validates it
            raise ValueError(f"block_iter must be an integer >= 1, got {block_iter!r}.")
        buf = np.empty((len(free), E.shape[1]))
        start = np.empty_like(buf)
    if isinstance(parallel, tuple):
        split = parallel
        if len(split) != 2 or not np.array_equal(np.sort(split[0]), free):
            raise ValueError("a precomputed split must be the (order, bounds) of "
                             "parallel_split for this problem.")
    elif parallel in ("auto", True, False):
        split = (parallel_split(problem, E.shape[1], parallel)
                 if unconstrained == "sequential" else None)
    else:
        raise ValueError(f"parallel must be 'auto', True, False or a split, got {parallel!r}.")
    if split is not None:
        split_accs = np.zeros((len(split[1]) - 1, 3))

    rng = _as_generator(random_state)
    blocked = BlockedPass(free, split, Lp, Tp, E.shape[1])
    extrap = (Extrapolation(E, pairs, signs, loss, inner_loss, param, gamma, extrapolate)
              if extrapolate and radius == np.inf and len(pairs) else None)

    def exact_objectives():
        if inner_loss == loss:
            f = K.objective(E, Lp, Li, Lx, pairs, signs, loss, gamma)
            return f, f
        return K.objectives(E, Lp, Li, Lx, pairs, signs, loss, inner_loss, gamma, param)

    obj, sur = exact_objectives()
    history, surrogate = [obj], [sur]
    # Each row update adds its exact objective change to acc (an O(r |T(i)|) by-product of
    # the update), so the per-sweep history costs nothing extra; the block iteration moves
    # rows jointly and is followed by an exact evaluation, as is every REFRESH-th sweep
    # (to bound the rounding drift of the running sum). acc[2] sums the squared norms of
    # the new rows: every row is updated once per sweep, so it is ||E||_F^2 after the sweep
    # for the stopping test, saving a pass over E (a tenth of a sweep at n = 1e6).
    acc = np.zeros(3)
    block_pass = len(free) > 0 and unconstrained == "block"
    times = [0.0]
    elapsed = 0.0
    converged = False
    n_iter = 0
    interrupted = False
    try:
        for n_iter in range(1, max_iter + 1):
            acc[:] = 0.0  # first, before any call: a Ctrl-C reads this sweep's sums
            order = rng.permutation(constrained)
            t0 = time.perf_counter()
            # in calls of bounded time, so that a Ctrl-C acts promptly (npkl._blocks)
            change = blocked.constrained(
                K.sweep_constrained, order, E, Lp, Li, Lx, diag, Tp, Ti, Ts, inner_loss,
                gamma, param, alpha, K.SQUARE_AUTO, acc, omega
            )
            exact = n_iter % REFRESH == 0
            if len(free):
                if split is not None:
                    split_accs[:] = 0.0
                    change += blocked.unconstrained(E, Lp, Li, Lx, diag, radius, split_accs,
                                                    omega)
                    acc += split_accs.sum(axis=0)
                    split_accs[:] = 0.0  # folded into acc (no call in between)
                elif unconstrained == "sequential":
                    change += blocked.unconstrained(E, Lp, Li, Lx, diag, radius, acc, omega)
                else:
                    exact = True
                    change += K.jacobi_unconstrained(
                        free, E, Lp, Li, Lx, diag, radius, block_iter, buf, start
                    )
            norm_sq = (float(np.einsum("ij,ij->", E, E, dtype=np.float64)) if block_pass
                       else float(acc[2]))
            # the relative test never holds when E shrinks geometrically to 0 (K = 0 optimal,
            # e.g. gamma too small for the graph): stop once the mean K_ii is negligible
            # against the unit margin of the losses
            converged = (change < tol * tol * norm_sq
                         or norm_sq <= VANISHED * n or (change == 0.0 and norm_sq == 0.0))
            elapsed += time.perf_counter() - t0
            if exact or converged or n_iter == max_iter:
                obj, sur = exact_objectives()
            else:
                obj, sur = obj + acc[0], sur + acc[1]
            # both ends of the window are exact evaluations (sweep 0 and every REFRESH-th)
            converged = converged or (plateau_tol is not None and n_iter % REFRESH == 0
                                      and surrogate[-REFRESH] - sur < plateau_tol * abs(sur))
            converged = converged or (window_tol is not None and n_iter >= STALL_WINDOW
                                      and surrogate[-STALL_WINDOW] - sur
                                      < window_tol * abs(sur))
            converged = converged or (stall_tol is not None and n_iter >= 3 * STALL_WINDOW
                                      and n_iter % STALL_WINDOW == 0
                                      and stalled([*surrogate[-3 * STALL_WINDOW::STALL_WINDOW],
                                                   sur], (max_iter - n_iter) / STALL_WINDOW,
                                                  stall_tol))
            if extrap is not None and not converged and n_iter < max_iter:
                t0 = time.perf_counter()
                d_obj, d_sur = extrap.after_sweep(n_iter, E, Lp, Li, Lx)
                obj, sur = obj + d_obj, sur + d_sur
                elapsed += time.perf_counter() - t0
            history.append(obj)
            surrogate.append(sur)
            times.append(elapsed)
            stop = callback is not None and callback(n_iter, E, obj) is True
            if converged or stop:
                interrupted = not converged
                break
    except KeyboardInterrupt:
        # numba kernels finish before Python sees the signal: E holds complete row updates
        interrupted, converged = True, False
        del history[max(n_iter, 1):], surrogate[max(n_iter, 1):], times[max(n_iter, 1):]
        if block_pass:
            obj, sur = exact_objectives()
        else:  # the sweep's exact changes so far: no pass over the graph after the stop
            done = acc + (split_accs.sum(axis=0) if split is not None else 0.0)
            obj, sur = history[-1] + float(done[0]), surrogate[-1] + float(done[1])
        history.append(obj)
        surrogate.append(sur)
        times.append(elapsed)
    return SolverResult(
        embedding=E,
        objective_history=history,
        time_history=times,
        n_iter=n_iter,
        converged=bool(converged),
        interrupted=interrupted,
        multipliers=(_pair_multipliers(problem, alpha)
                     if loss == ROW_HINGE and len(pairs) else None),
        info={"surrogate_history": surrogate,
              "extrapolations": 0 if extrap is None else extrap.steps},
    )


def stalled(f, windows_left, stall_tol):
    r"""Whether a run whose objective went ``f[0] -> f[1] -> f[2] -> f[3]`` over three
    windows of sweeps can still lower it by more than ``stall_tol * |f[3]|``.

    With the window decreases ``d_k = f[k] - f[k + 1]`` and the larger of their last two
    ratios, ``q = max(d_1 / d_0, d_2 / d_1)`` (two ratios, because the first windows of a
    run fall much faster than its tail), a linearly converging run has ``q < 1`` and its
    remaining decrease is the geometric tail ``d_2 (q + q^2 + ...) = d_2 q / (1 - q)``;
    a run that is not slowing down (``q >= 1``) can lower the objective by at most
    ``d_2`` per window over the ``w = windows_left`` windows before ``max_iter``. The run
    has stalled when the smaller of the two,

    .. math::

        R = d_2 \min\Big(\frac{q}{1 - q}, w\Big),

    is at most ``stall_tol |f_3|``, or when the last window lowered nothing (``d_2 <= 0``).
    """
    d = -np.diff(np.asarray(f, dtype=np.float64)[-4:])
    if d[2] <= 0.0:
        return True
    tail = float(windows_left)
    if np.all(d[:2] > 0.0):
        q = max(d[1] / d[0], d[2] / d[1])
        if q < 1.0:
            tail = min(tail, q / (1.0 - q))
    return bool(d[2] * tail <= stall_tol * abs(f[-1]))


def relaxation_factor(laplacian, omega="auto"):
    """``omega`` of the over-relaxed row updates (``NPKL(omega=...)``).

    ``"auto"``: Young's optimal SOR factor ``2 / (1 + sqrt(1 - rho^2))`` for the Jacobi
    spectral radius ``rho`` of ``L``; Hu & Kwok 2015 Prop. 1 bounds it by
    ``1 / (1 + delta)`` for the normalized Laplacian (constant diagonal ``1 + delta``), and
    it is estimated by Lanczos for any other (capped at 0.9999). A float is returned as is.
    """
    if omega != "auto":
        return float(omega)
    diag = laplacian.diagonal()
    if np.ptp(diag) == 0.0 and diag[0] > 1.0:
        # (1 + delta) I - D^-1/2 S D^-1/2, built here or precomputed the same way
        rho = 1.0 / diag[0]
    else:
        inv_sqrt = 1.0 / np.sqrt(diag)
        A = sp.diags(inv_sqrt) @ (sp.diags(diag) - laplacian) @ sp.diags(inv_sqrt)
        try:
            # a fixed start: ARPACK's own is drawn anew at every call, and a fit would
            # then differ from run to run (in omega's last digits) on the same seed
            v0 = np.random.default_rng(0).uniform(-1.0, 1.0, A.shape[0])
            rho = float(abs(eigsh(A, k=1, which="LM", tol=1e-3, v0=v0,
                                  return_eigenvectors=False)[0]))
        except ArpackNoConvergence:
            rho = 0.99
    rho = min(rho, 0.9999)
    return 2.0 / (1.0 + np.sqrt(1.0 - rho * rho))


def smoothing_schedule(loss, hinge_smoothing="auto"):
    """The ``mu`` of each BCD stage of ``NPKL(hinge_smoothing=...)``, 0 for the exact one.

    Hinge only: ``"auto"`` is :data:`HINGE_SMOOTHING_AUTO` then 0, a float ``mu`` is
    ``[mu, 0]``, None is ``[0]`` (Algorithm 1 alone); the other losses are smooth: ``[0]``.
    """
    if get_loss(loss).kernel != ROW_HINGE or hinge_smoothing is None:
        return [0.0]
    if isinstance(hinge_smoothing, str):
        return [*HINGE_SMOOTHING_AUTO, 0.0]
    return [float(hinge_smoothing), 0.0]


def partial_schedule(schedule):
    """The stages run from the optimum of fewer pairs (:data:`PARTIAL`, ``NPKL.partial_fit``).

    The stages smoothed above :data:`COARSE_SMOOTHING` are dropped (the coarse levels of
    the multilevel start, too, stop there), keeping at least one smoothed stage: from the
    previous optimum only the new pairs' terms are far from their values at the
    solution, and the caller runs the dropped stages on their rows alone
    (:func:`psdlearn.npkl._partial.endpoint_sweeps`). Starting lower stalls: from the
    previous optimum at ``mu = 1e-3``, BCD on 1e4 points ended 1% above the optimum.
    """
    schedule = list(schedule)
    if len(schedule) < 2:
        return schedule
    first = next(k for k, mu in enumerate(schedule) if mu <= COARSE_SMOOTHING)
    return schedule[min(first, len(schedule) - 2):]


def fit_bcd(problem, E0, options):
    """The ``"bcd"`` entry of :data:`psdlearn.npkl.solvers.NPKL_SOLVERS`: one round of BCD.

    Runs :func:`solve_bcd` over the stages of :func:`smoothing_schedule` (each from the
    previous one's ``E``; the smoothed ones stop at ``SMOOTHING_TOL_FACTOR * tol``, as
    they only bring the exact stage near the optimum), with ``omega`` from
    :func:`relaxation_factor` and one :func:`parallel_split` for all stages. After a rank
    escalation (``options.state == "restart"``) the schedule restarts at ``mu = 1e-3``,
    the smoothing of a point already near the optimum; after new pairs
    (``options.state == PARTIAL``, ``NPKL.partial_fit``) it runs
    :func:`partial_schedule`. A round of ``rank="adaptive"``
    (``options.state`` a :class:`psdlearn.npkl.escalation.AdaptiveRound`) runs the stages
    of :meth:`~psdlearn.npkl.escalation.AdaptiveRound.stages`, an intermediate one with
    its exact stage at ``INTERMEDIATE_TOL_FACTOR * tol``. The exact hinge stage of any
    other round (a fixed rank, or the final round) also stops on a plateau
    (:data:`FINAL_PLATEAU_FACTOR`, with ``certificate_tol=None`` its default), and without a
    certificate (``certificate_tol=None``) when :data:`STALL_WINDOW` sweeps lower its
    objective by less than ``tol`` (relative; ``window_tol`` of :func:`solve_bcd`). Every stage
    also stops when it has stalled: when the decrease still to come, extrapolated from the
    last sweeps, is at most ``STALL_FACTOR * certificate_tol**2 * tol / DEFAULT_TOL``
    relative (:func:`stalled`).

    From a random start (a fresh fit, or the first round of ``rank="adaptive"``) with
    ``multilevel`` on, the start is first solved coarse to fine on aggregates of the graph
    (:func:`psdlearn.npkl._multilevel.multilevel_start`, each coarse level by BCD to
    ``COARSE_TOL_FACTOR * tol``, the hinge smoothed at :data:`COARSE_SMOOTHING` and to
    ``SMOOTHING_TOL_FACTOR * tol``); the fine level then runs the whole smoothing
    schedule from the prolonged start.
    The sweeps' plane search (``extrapolation``) is off after new pairs.

    Parameters
    ----------
    problem : NPKLProblem
    E0 : ndarray of shape (n_samples, rank)
    options : psdlearn._solver.SolveOptions
        ``params`` reads ``hinge_smoothing``, ``omega``, ``unconstrained``,
        ``multilevel`` (``"auto"``: from
        :data:`psdlearn.npkl._multilevel.MULTILEVEL_MIN_SAMPLES` samples, unless the
        pairs' part of a sweep outweighs the graph's,
        :func:`psdlearn.npkl._multilevel.pairs_dominate`),
        ``certificate_tol`` and ``dtype`` (of :func:`solve_bcd`, every level and stage).

    Returns
    -------
    SolverResult
        The stages' histories joined (a stage starts where the previous one ended),
        ``n_iter`` their sweeps, ``converged`` that of the exact stage, ``multipliers`` the
        list of each stage's (candidate duals of the certificate), ``info["omega"]`` and
        ``info["smoothing_stages"]`` (``(mu, sweeps)`` per stage). A vanished embedding
        (mean ``K_ii`` below :data:`VANISHED`), or a converged one whose objective is no
        lower than that of ``K = 0`` (as every ``E`` when ``K = 0`` is optimal), is
        returned as zero, with a warning. ``info["multilevel_levels"]``: ``(n_samples,
        sweeps)`` of each coarse level, coarsest first (empty without the multilevel
        start).
    """
    params = options.params
    schedule = smoothing_schedule(problem.loss, params["hinge_smoothing"])
    exact_tol, plateau = options.tol, None
    stall = (STALL_FACTOR * (params.get("certificate_tol") or DEFAULT_CERTIFICATE_TOL) ** 2
             * options.tol / DEFAULT_TOL)
    fresh = options.state is None or (isinstance(options.state, AdaptiveRound)
                                      and options.state.start == "random")
    omega = relaxation_factor(problem.laplacian, params["omega"])
    levels, start_time = [], 0.0
    setting = params.get("multilevel", False)
    if fresh and use_multilevel(setting, problem.n_samples) and not (
            isinstance(setting, str) and pairs_dominate(problem, E0.shape[1])):
        start_time = time.perf_counter()
        E0, levels, interrupted = multilevel_start(
            problem, E0, partial(_coarse_solve, options=options, schedule=schedule,
                                 stall=stall), overwrite=options.owns_start)
        start_time = time.perf_counter() - start_time
        if interrupted:
            return _interrupted_start(problem, E0, levels, omega, start_time)
    intermediate = isinstance(options.state, AdaptiveRound) and options.state.intermediate
    if isinstance(options.state, AdaptiveRound):
        schedule = options.state.stages(schedule)
        if intermediate:
            exact_tol *= INTERMEDIATE_TOL_FACTOR
    elif options.state == "restart":
        schedule = schedule[-3:]
    elif options.state == PARTIAL:
        schedule = partial_schedule(schedule)
    window_stop = None
    if get_loss(problem.loss).kernel == ROW_HINGE and not intermediate:
        # a fixed rank's exact hinge stage never escalates either: the same plateau
        plateau = FINAL_PLATEAU_FACTOR * (params.get("certificate_tol")
                                          or DEFAULT_CERTIFICATE_TOL)
        if params.get("certificate_tol") is None:
            # no bound asks the objective for about certificate_tol**2: tol is the
            # accuracy asked for, and the rows' crawl along the kinks moves E by more
            # than tol a sweep long after the objective has stopped moving by as much
            # (docs/notes/npkl.md, "The exact hinge stage without a certificate")
            window_stop = exact_tol
    split = (parallel_split(problem, E0.shape[1])
             if params["unconstrained"] == "sequential" else None)
    # after new pairs (partial_fit) the plane search is off: its first step comes after
    # three windows (30 sweeps), about the length of the whole re-solve. At 10^5 points it
    # never moved E (same sweeps and objective) and its copies cost a tenth of the call;
    # at 10^4 it saved 9-16 of 60-67 sweeps in the same time
    window = WINDOW if (use_multilevel(params.get("extrapolation", False), problem.n_samples)
                        and options.state != PARTIAL) else 0
    E, history, times, stages, multipliers = E0, [], [], [], []
    # the caller's start is copied once, unless the caller gave it away (owns_start); the
    # prolonged start and each stage's result are this function's own, and the next stage
    # sweeps in them (one array of the embedding's size less: 4 GB at 10^7 points and
    # rank 50)
    own = bool(levels) or options.owns_start
    for mu in schedule:
        res = solve_bcd(problem, E, max_iter=options.max_iter,
                        tol=options.tol * SMOOTHING_TOL_FACTOR if mu > 0 else exact_tol,
                        random_state=options.random_state,
                        unconstrained=params["unconstrained"], smoothing=mu, omega=omega,
                        parallel=split or False, callback=options.callback,
                        plateau_tol=None if mu > 0 else plateau,
                        window_tol=None if mu > 0 else window_stop, stall_tol=stall,
                        dtype=params.get("dtype", np.float64), extrapolate=window,
                        copy=not own)
        own = True
        offset = times[-1] if times else start_time  # the coarse levels' seconds first
        history += res.objective_history[1 if history else 0:]
        times += [offset + t for t in res.time_history[1 if times else 0:]]
        stages.append((mu, res.n_iter))
        multipliers.append(res.multipliers)
        E = res.embedding
        if res.interrupted:
            break
    # K = 0 up to rounding (the directions of such an E are noise), or a converged E no
    # better than K = 0 (a stalled run creeping towards the optimum K = 0): zero is
    # returned; when K = 0 is optimal every E has an objective at least Phi(0)
    if np.einsum("ij,ij->", E, E, dtype=np.float64) <= VANISHED * len(E) or (
            res.converged and history[-1] >= problem.objective(np.zeros((len(E), 1)))):
        E = np.zeros_like(E)
        warnings.warn(
            "The learned kernel is zero (K = 0 is optimal here): the loss weight "
            f"gamma={problem.gamma:.4g} is too small against the graph term; increase "
            "gamma (or use gamma='auto').", UserWarning, stacklevel=5)  # NPKL.fit's caller
    return SolverResult(embedding=E, objective_history=history, time_history=times,
                        n_iter=sum(n for _, n in stages), converged=res.converged,
                        interrupted=res.interrupted, multipliers=multipliers,
                        info={"omega": omega, "smoothing_stages": stages,
                              "multilevel_levels": levels})


def _coarse_solve(problem, E, level, *, options, schedule, stall):
    """One coarse level of the multilevel start (:mod:`psdlearn.npkl._multilevel`): BCD to
    :data:`COARSE_TOL_FACTOR` ``* tol``, or, on the hinge smoothed at
    :data:`COARSE_SMOOTHING` when ``schedule`` smooths it, to ``SMOOTHING_TOL_FACTOR *
    tol``. ``level``: ``(i, count)``, the ``i``-th of ``count``
    coarse levels, coarsest first; the level's sweeps have a progress bar of their own
    (with ``verbose``), and a Ctrl-C names the level."""
    bar = progress_bar(options.verbose, total=options.max_iter,
                       desc=f"NPKL bcd, coarse level {level[0]}/{level[1]} "
                            f"({problem.n_samples:,} samples)", unit="sweeps")

    def callback(it, E, objective):
        bar.update(1)
        bar.set_postfix(objective=f"{objective:.6g}", refresh=False)

    mu = COARSE_SMOOTHING if schedule[0] > 0 else 0.0
    factor = SMOOTHING_TOL_FACTOR if mu > 0 else COARSE_TOL_FACTOR
    with bar:
        res = solve_bcd(problem, E, max_iter=options.max_iter, tol=options.tol * factor,
                        random_state=options.random_state,
                        unconstrained=options.params["unconstrained"],
                        smoothing=mu,
                        omega=relaxation_factor(problem.laplacian, options.params["omega"]),
                        callback=callback, stall_tol=stall, dtype=COARSE_DTYPE)
    return res.embedding, res.n_iter, res.interrupted


def _interrupted_start(problem, E, levels, omega, seconds):
    """The result of a fit interrupted in a coarse level: the prolonged iterate."""
    return SolverResult(embedding=E, objective_history=[problem.objective(E)],
                        time_history=[seconds], n_iter=0, converged=False, interrupted=True,
                        multipliers=[None], info={"omega": omega, "smoothing_stages": [],
                                                  "multilevel_levels": levels})
