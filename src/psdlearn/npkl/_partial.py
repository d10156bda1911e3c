"""``NPKL.partial_fit``: more pairs over the same points, solved from the current optimum.

The graph term ``tr(E^T L E)`` depends on the points only, so the Laplacian ``L``, the
neighbour index and the width ``sigma`` of the first fit are kept; only the loss term
gains pairs. The problem on the union of the pairs is solved from the current
``embedding_`` (the point that was optimal for the old pairs), with the loss weight and
the rank a fresh fit on the union would choose: ``gamma="auto"`` is recomputed from all
the pairs (one ``gamma_0`` eigen-solve, in the value order of ``fit``, started from the
vectors of the last one), and
``rank="auto"`` grows with the rule's count, the new columns small random seeds on the
samples in a pair (:func:`_grown`). Kept from the first fit, a rank chosen from the first
20 answers of a query loop held 400 pairs at rank 5 (glass: 1,000 sweeps a round instead
of 300, and a lower Rand index).

**Solver bcd at a fixed rank.** Two savings over a fresh solve, neither of which changes
the problem or the stopping test of the sweeps:

- *Endpoint sweeps.* The new pairs move the optimum most at their own endpoints (at
  10^4 and 10^5 points of a kNN graph, 75% and 37% of the squared change of ``E`` lies
  on the rows of 100 new pairs; the rest is spread over the whole graph, which couples
  every row). Before the full sweeps, :func:`endpoint_sweeps` runs BCD passes over those
  rows alone, each costing ``|rows| / n`` of a full sweep, until their change falls
  below the test of a full sweep. Every row update is the exact (over-relaxed) minimizer
  of its row objective, as in :func:`psdlearn.npkl.bcd.solve_bcd`: the objective does
  not increase, and the full sweeps start closer (a quarter fewer of them at 10^5).
- *Hinge smoothing.* The smoothing continuation starts at
  :data:`psdlearn.npkl.bcd.COARSE_SMOOTHING` instead of its first stage
  (:func:`psdlearn.npkl.bcd.partial_schedule`): from the previous optimum only the new
  pairs are far from their optimal terms. Their rows get the skipped stages locally: the
  endpoint sweeps run at each skipped smoothing, then at the first stage run. From
  ``mu = 1e-2`` without them, the stiff smoothed problem stopped far from the new pairs'
  optimum (at 10^5 points 2% above a fresh fit); starting lower, at ``mu = 1e-3``, stalls
  even with them (1% above at 10^4).

With ``rank="adaptive"`` the rounds run as in a warm-started fit.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from psdlearn._exact_knn import value_order
from psdlearn.constraints import as_constraints, warn_conflicts
from psdlearn.npkl import _kernels as K
from psdlearn.npkl._deferred_certificate import run_rounds
from psdlearn.npkl._fit_graph import in_order, is_training_data
from psdlearn.npkl._settings import warn_uncertified
from psdlearn.npkl.bcd import (
    PARTIAL,
    initial_embedding,
    partial_schedule,
    relaxation_factor,
    smoothing_schedule,
)
from psdlearn.npkl.distributed.fit import is_dask_array
from psdlearn.npkl.losses import ROW_HINGE, get_loss
from psdlearn.npkl.problem import NPKLProblem, auto_rank, rank_rule_count
from psdlearn.npkl.solvers import NPKL_SOLVERS, WARM

#: Most passes of :func:`endpoint_sweeps` (each costs ``|rows| / n`` of a full sweep).
ENDPOINT_MAX_SWEEPS = 100


def partial_fit(est, X, y):
    """Add the side information ``y`` to the fitted ``est`` and re-solve (see module).

    Parameters
    ----------
    est : NPKL
        Fitted.
    X : array-like, sparse matrix or None
        The training input of :meth:`NPKL.fit` (the same object, or equal values).
    y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
        The new side information.

    Returns
    -------
    est : NPKL
    """
    if is_dask_array(X):
        raise ValueError("partial_fit does not take a dask array: refit on the cluster "
                         "with all the side information.")
    n = len(est.embedding_)
    if X is not None and est.graph == "knn":  # the usual message on a wrong n_features
        X = validate_data(est, X, accept_sparse="csr", dtype=np.float64, reset=False)
    if not is_training_data(X, est.graph, getattr(est, "X_fit_", None), n):
        raise ValueError(
            "partial_fit adds side information over the points of fit: X must be the X "
            f"passed to fit ({n} samples, same values). To learn over other points, call "
            "fit.")
    new = as_constraints(y, n, check_conflicts=False)
    C = est.side_info_.union(new)
    warn_conflicts(C, stacklevel=3)
    spec = NPKL_SOLVERS[est.solver]
    # the rank rule's count grows by the new pairs' share, from the count of fit (for
    # labels, that of the smallest pair set implying them)
    before = rank_rule_count(est.loss, est.side_info_.pairs, est.side_info_.signs, n)
    est._rank_count = (getattr(est, "_rank_count", before) - before
                       + rank_rule_count(est.loss, C.pairs, C.signs, n))
    rule = min(auto_rank(est._rank_count), n)
    rank = max(est.rank_, rule) if est.rank == "auto" else est.rank_
    est._rank_cap = max(rank, rule)
    if est.gamma == "auto":  # as fit computes it: the union's gamma_0, in value order
        order = value_order(est.X_fit_) if est.graph == "knn" else None
        L_o, pairs_o = in_order(est.laplacian_, C.pairs, order)
        est.gamma_ = est._resolve_gamma(L_o, pairs_o, C.signs,
                                        start=getattr(est, "_gamma_vectors", None))
    problem = NPKLProblem(est.laplacian_, C.pairs, C.signs.astype(np.float64), est.loss,
                          est.gamma_, float(est.b))
    began = time.perf_counter()
    start = None
    if spec.warm_start and np.any(est.embedding_):
        E0, state = _grown(est.embedding_, rank, np.unique(C.pairs), est.random_state), WARM
        if spec.name == "bcd" and est.rank != "adaptive":
            state = PARTIAL
            options = est.solver_options_
            full = smoothing_schedule(est.loss, options["hinge_smoothing"])
            stages = partial_schedule(full)
            omega = relaxation_factor(est.laplacian_, options["omega"])
            rng = check_random_state(est.random_state)
            for mu in full[:len(full) - len(stages) + 1]:
                endpoint_sweeps(problem, E0, np.unique(new.pairs), omega=omega, tol=est.tol,
                                smoothing=mu, random_state=rng)
        start = (E0, state)
    # the start is this function's own copy (_grown): the rounds may sweep in it
    deferred = run_rounds(est, spec, problem, rank, check_random_state(est.random_state),
                          defer=True, start=start, owns_start=start is not None)
    est.fit_time_ = time.perf_counter() - began
    if not deferred:
        warn_uncertified(est)
    est.side_info_ = C
    est.__dict__.pop("constraint_scores_", None)  # scored for the union on first read
    return est


def _grown(E, rank, rows, random_state):
    """``E`` (float64, C order) with columns added up to ``rank``: small random seeds on
    ``rows`` (the samples in a pair; rows of norm a tenth of ``E``'s mean row norm), zero
    on the other rows.

    The directions the new pairs need grow from the seeds (zero columns would stay zero:
    they are a stationary point). Only the pairs push a direction into the kernel, and
    the graph term carries it from their endpoints to the other rows, so the seeds sit on
    the endpoints: a seed on every row raises the graph term ``tr(E^T L E)`` by about the
    rows' count times their squared norm (random rows are as rough as rows can be), which
    the sweeps then spend their first passes removing where the new columns are not
    needed.
    """
    extra = rank - E.shape[1]
    if extra <= 0:
        return np.array(E, dtype=np.float64, order="C")
    out = np.zeros((len(E), rank))  # one array: E's columns, then the seeds
    out[:, :E.shape[1]] = E
    scale = 0.1 * float(np.sqrt(np.einsum("ij,ij->", out, out) / len(E)))
    out[rows, E.shape[1]:] = initial_embedding(len(rows), extra,
                                               check_random_state(random_state), scale=scale)
    return out


def endpoint_sweeps(problem, E, rows, *, omega, tol, smoothing=0.0, random_state=None,
                    max_sweeps=ENDPOINT_MAX_SWEEPS):
    """BCD passes over ``rows`` alone, the other rows fixed, ``E`` updated in place.

    Each pass updates every row of ``rows`` once, in a fresh random order, by the exact
    minimizer in that row of the objective (10), with the hinge smoothed when
    ``smoothing > 0`` (:func:`psdlearn.npkl._kernels.sweep_constrained`, over-relaxed by
    ``omega`` where that does not increase the row objective), so that objective never
    increases. The
    passes stop when their change ``sum_i ||e_i^new - e_i^old||^2`` is below
    ``tol^2 ||E||_F^2`` (the test of a full sweep) or after ``max_sweeps``.

    Parameters
    ----------
    problem : NPKLProblem
        A loss of :data:`psdlearn.npkl.bcd.BCD_LOSSES`.
    E : ndarray of shape (n_samples, rank), C-contiguous float64
        Updated in place.
    rows : ndarray of shape (k,)
        Rows in at least one pair of ``problem`` (the endpoints of the new pairs).
    omega : float
        Over-relaxation factor (:func:`psdlearn.npkl.bcd.relaxation_factor`).
    tol : float
        Relative tolerance of the change.
    smoothing : float, default=0.0
        Hinge only: minimize the Huber-smoothed hinge ``h_mu`` with ``mu = smoothing``.
    random_state : None, int, numpy.random.RandomState or Generator
        Draws the order of each pass.
    max_sweeps : int, default=ENDPOINT_MAX_SWEEPS

    Returns
    -------
    n_sweeps : int
        Passes run.
    """
    Lp, Li, Lx, diag = problem.sweep_arrays(np.float64)
    Tp, Ti, Ts = problem.neighbors()
    Tp = np.ascontiguousarray(Tp, dtype=np.int64)
    Ti = np.ascontiguousarray(Ti, dtype=np.int64)
    Ts = np.ascontiguousarray(Ts, dtype=np.float64)
    # the kernels read the smoothing through their scalar parameter (as in solve_bcd)
    loss, param = get_loss(problem.loss).kernel, float(problem.b)
    if loss == ROW_HINGE and smoothing > 0:
        loss, param = K.SMOOTH_HINGE, float(smoothing)
    rows = np.asarray(rows, dtype=np.int64)
    rng = (random_state if isinstance(random_state, np.random.Generator)
           else check_random_state(random_state))
    alpha, acc = np.zeros(len(Ti)), np.zeros(3)
    bound = tol * tol * float(np.einsum("ij,ij->", E, E))
    n_sweeps = 0
    while n_sweeps < max_sweeps:
        n_sweeps += 1
        change = K.sweep_constrained(rng.permutation(rows), E, Lp, Li, Lx, diag,
                                     Tp, Ti, Ts, loss, float(problem.gamma), param, alpha,
                                     K.SQUARE_AUTO, acc, float(omega))
        if change < bound:
            break
    return n_sweeps
