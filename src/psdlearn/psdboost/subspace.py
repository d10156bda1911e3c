r"""Problem (3) of Shen, Welsh & Wang (2008) for many triplets: a subspace method.

Problem (3) is the saddle point (see :mod:`._bounds`)

.. math::

    \max_{X \succeq 0,\ \operatorname{tr} X = 1} \min_{w \in W} \sum_r w_r \langle A_r, X\rangle
    = \min_{w \in W} \lambda_{\max}(H(w)), \qquad
    W = \{0 \le w \le C,\ \textstyle\sum_r w_r = 1\},

whose solution ``X*`` has low rank. The method keeps an orthonormal basis ``Q``
(``D x k``, ``k`` about the rank plus a few) and alternates:

1. **Master.** Problem (3) restricted to ``X = Q Y Q^T``: the same problem for the
   projected differences ``Q^T k_r``, ``Q^T j_r`` (``t x k``), solved by the primal-dual
   interior-point method of :mod:`.ipm`, with the proximal term ``(u / 2) ||w - c||^2``
   added to its dual ``min_{w in W} lambda_max(Q^T H(w) Q)`` (``c``: the stability
   center). Its Newton system is solved through its ``k (k + 1) / 2``-dimensional
   low-rank part, the ``t``-dimensional part entering only through a diagonal (to which
   the proximal term adds ``u``), so each Newton step costs ``O(t k^4)`` and never
   ``O(t^2)``. It returns ``Y`` and the master's weights ``w``.
2. **Certificate.** ``X = Q Y Q^T`` (made PSD with trace one) gives the lower bound
   ``value(X) = min_{w in W} sum_r w_r <A_r, X>`` (weight ``C`` on the smallest margins);
   the master's ``w``, projected onto ``W``, gives the upper bound
   ``lambda_max(H(w))``, computed by Lanczos on the matrix-free
   ``H(w) u = D_k^T (w * D_k u) - D_j^T (w * D_j u)``. Stop when the best upper bound
   minus the best lower bound is below ``eps``. Both bounds hold however inexact the
   master: they are evaluated on the full problem.
3. **Bundle step.** If ``lambda_max(H(w))`` fell below that of the center by at least a
   tenth of the fall that the model predicted, ``w`` becomes the center (serious step);
   otherwise the center stays (null step) and only the model improves.
4. **Expansion.** The leading eigenvectors of ``H(w)`` whose Rayleigh quotient exceeds
   the master value (the directions in which ``Q`` underestimates the dual function)
   join ``Q``; when ``k`` would exceed ``max_dim``, ``Q`` is first compressed to the
   leading eigenvectors of ``Y`` (the range of the current solution).

This is the spectral bundle method of Helmberg & Rendl (2000) for this constant-trace
SDP, with two differences: the subspace master is solved exactly by an interior-point
method rather than by their quadratic program over ``(alpha, V)``, with the capped simplex
handled inside it, and there is no aggregate matrix (``Q`` is compressed to the range of
``Y`` instead). With ``proximal=False`` it is the subspace method for eigenvalue
optimization of Kangal, Meerbergen, Mengi & Michiels (2018). Memory is
``O(t k + n D + D k)`` besides the data (``n``: samples in a triplet); time per
iteration is that of the master's Newton steps plus one Lanczos run.

**Working set** (``working_set=True``, ``PSDBoost(solver="working-set")``). The masters
hold only a working set ``S`` of triplet rows, not all ``t``: at an optimum
``w_r = 0`` wherever the margin ``<A_r, X*>`` exceeds ``rho*`` (complementarity), and
only the ``ceil(1 / C)`` smallest margins lie at or below it, plus ties. So the optimal
``w`` has few more than ``1 / C`` nonzeros, often far fewer than ``t``. The master is
then problem (3) for the rows of ``S`` and ``X = Q Y Q^T``, with the dense Newton system
over its free rows ``F`` while ``|F| <= 1000`` or ``k (k + 1) / 2 >= |F| / 2``
(``O(|F|^2 k + |F|^3)`` per step, so ``k`` may reach ``max_dim = 160``; above 4000 free
rows the low-rank system and ``k <= 30``), and:

- ``S`` starts as the ``max(1.5 / C, 1 / C + 50)`` rows of smallest margin under the
  projector on the first subspace (the top eigenvectors of ``H`` at uniform weights);
- after each master, the rows outside ``S`` whose margin under the master's ``X`` falls
  below the master's ``rho`` (each would be violated, so the master is not optimal for
  all triplets) join ``S``, the smallest margins first, at most ``0.5 / C`` of them;
  rows that kept weight below ``1e-3 C`` (the masters are inexact) and a margin above
  ``rho`` for 3 masters leave it (never the proximal center's, never below
  ``1 / C + 50`` rows);
- rows that kept weight ``w_r >= 0.99 C`` and a margin below ``rho - eps`` for 2 masters
  are *bound*: held at ``w_r = C``, they leave the master's variables and enter it as the
  constant ``G = C sum_bound Q^T A_r Q`` (``Z = pi I - Q^T H(w) Q - G``,
  ``sum_free w = 1 - C |bound|``, :func:`.ipm.path_following`'s ``fixed``); a bound row
  whose margin reaches ``rho - eps`` is freed. A bound row with margin below ``rho``
  meets the optimality conditions (``xi_r > 0``, ``w_r = C``), so binding it leaves the
  master's optimum unchanged. With ``C = 1 / (nu t)`` about ``nu t`` rows end at
  ``w_r = C``, so binding them keeps the master's free rows few enough for the dense
  Newton system with a large ``k``;
- if no row joins and ``Q`` holds the optimal range, the master's solution is optimal
  for every triplet (a row outside ``S`` with margin at least ``rho`` satisfies the
  optimality conditions with ``w_r = 0``).

The certificate is unchanged, and on the full problem: the lower bound is the value of
``X`` over all ``t`` triplets (the margins cost ``O(t k r)`` from the stored projections
``Q^T k_r``, ``Q^T j_r``), and the master's ``w`` on the free rows, ``C`` on the bound
ones, zero elsewhere, projected onto ``W`` (``|S| >= 1 / C`` keeps it nonempty), is a
point of the full dual, whose value ``lambda_max(H(w))`` Lanczos computes on the rows
with ``w_r > 0`` only. Memory is ``O(t k + |F|^2 + n D)``. The proximal center stays in
``S`` (it starts uniform on the first rows).

References
----------
Shen, C., Welsh, A. & Wang, L. (2008). PSDBoost: matrix-generation linear programming
for positive semidefinite matrices learning. NIPS.

Kangal, F., Meerbergen, K., Mengi, E. & Michiels, W. (2018). A subspace method for
large-scale eigenvalue optimization. SIAM Journal on Matrix Analysis and Applications
39(1).

Helmberg, C. & Rendl, F. (2000). A spectral bundle method for semidefinite programming.
SIAM Journal on Optimization 10(3).
"""

from __future__ import annotations

import math
import time

import numpy as np
from sklearn.utils import check_random_state

from psdlearn._solver import SolverResult
from psdlearn.psdboost._bounds import (
    primal_value,
    project_capped_simplex,
    stop_status,
    trace_one_factor,
)
from psdlearn.psdboost._pricing import TripletOperator, eigen_method
from psdlearn.psdboost.ipm import path_following

__all__ = ["solve_subspace"]

#: Newton steps allowed to one master solve.
_MASTER_MAX_ITER = 60
#: Masters with at most this many triplets use the dense ``t x t`` Newton system, which
#: reaches a relative gap of 1e-8 where the low-rank one stops near 1e-6.
_DENSE_MASTER_MAX_T = 1000
#: Working set: its first size in units of ``1 / C`` (the rows that carry weight ``C``
#: at an optimum number at most ``1 / C``), rows beyond ``1 / C`` always kept, rows added
#: per master in units of ``1 / C``, masters a row may stay idle (weight below
#: ``_WS_ZERO C``, margin above ``rho``) before it is dropped, and the weight below which
#: it counts as zero (times C; the masters are solved to a loose tolerance at first).
_WS_START = 1.5
#: Working set: eigenvectors per pricing and largest subspace (its masters are dense,
#: ``O(s^2 k + s^3)`` per Newton step for ``s`` rows, so ``k`` can exceed the 30 of the
#: low-rank master: at ``D = 784``, 2000 triplets, ``k <= 160`` reaches a certified
#: ``1e-5`` in 11 masters where ``k <= 60`` needs 40).
_WS_MIN_EXTRA = 50
_WS_ADD = 0.5
_WS_PATIENCE = 3
#: Working set: masters a row must keep weight above ``(1 - _WS_BOUND_TOL) C`` and a
#: margin below ``rho`` before it is bound to ``w_r = C``.
_WS_BOUND_PATIENCE = 2
_WS_BOUND_TOL = 1e-2
_WS_ZERO = 1e-3
_WS_VECTORS = 32
_WS_MAX_DIM = 160
#: Working sets above this many free rows get the low-rank master and ``k <= 30`` (the
#: dense ``|S| x |S|`` system takes ``8 |S|^2`` bytes per copy, 128 MB at 4000 rows, and
#: ``|S|^3 / 3`` flops per Cholesky factorization).
_WS_DENSE_ROWS = 4000
#: Largest subspace of a low-rank master (its Newton step costs ``O(t k^4)``).
_LOW_RANK_MAX_DIM = 30
#: Fraction of the predicted decrease of ``lambda_max`` that makes a serious step.
_SERIOUS = 0.1


def solve_subspace(X, triplets, C, *, tol=1e-5, max_iter=100, max_time=None, n_vectors=None,
                   max_dim=None, proximal=True, eigen_solver="auto", random_state=None,
                   working_set=False, callback=None):
    """Solve problem (3) by the subspace method of the module docstring.

    Parameters
    ----------
    X : ndarray of shape (n_samples, D)
    triplets : ndarray of shape (t, 3)
        Valid rows ``(i, j, k)`` meaning ``d(i, j) < d(i, k)``.
    C : float
        Slack price, ``C t >= 1``.
    tol : float, default=1e-5
        Stop when ``upper_bound - objective <= eps = tol * s``, ``s`` the mean margin
        scale ``mean_r (||a_i - a_j||^2 + ||a_i - a_k||^2) / D``.
    max_iter : int, default=100
        Master solves.
    max_time : float or None, default=None
        Seconds after which the best certified pair found so far is returned
        (``status="max_time"``); a master solve in progress is cut short.
    n_vectors : int or None, default=None
        Eigenvectors of ``H(w)`` computed per iteration (candidates for ``Q``). None: 32
        with a working set, 16 otherwise.
    max_dim : int or None, default=None
        Largest subspace dimension ``k``. The low-rank master's Newton step costs
        ``O(t k^4)``; the dense one (``t <= 1000``) ``O(t^3 + t^2 k)``. None: 60 for a
        dense master, 30 otherwise, 160 with a working set.
    proximal : bool, default=True
        Add the proximal term ``(u / 2) ||w - c||^2`` to the master (the spectral bundle
        method of Helmberg & Rendl 2000): ``c`` is the stability center, moved to the
        master's ``w`` when ``lambda_max(H(w))`` drops by at least a tenth of the drop
        the model predicted (a serious step), and ``u`` is halved after a serious step
        that achieved more than half of the prediction and doubled after a null step.
        ``False``: the master minimizes the model alone (a cutting-plane method).
    eigen_solver : {"auto", "dense", "lanczos"}, default="auto"
        As in :class:`psdlearn.PSDBoost`.
    random_state : int, RandomState instance or None
        Seeds the first Lanczos start vector.
    working_set : bool, default=False
        Masters over a working set of triplets grown by pricing (module docstring).
    callback : callable or None
        Called as ``callback(iteration, objective, upper_bound, k)`` after each master;
        returning ``True`` stops the solver (status ``"interrupted"``, the best pair so
        far returned).

    Returns
    -------
    SolverResult
        ``embedding`` (D, rank): ``F`` with ``metric = F F^T``, the best primal point
        found. ``objective_history``: after each master solve, the best lower bound so
        far (never decreases; the last is ``objective``, the value of ``metric``);
        ``time_history`` aligned with it; ``n_iter`` master solves. ``info`` (read as
        attributes): ``metric`` (D, D), symmetric PSD, trace one; ``rho``, ``slacks``
        (t,) of ``metric``; ``upper_bound``, the smallest ``lambda_max(H(w))`` over the
        certified dual points, and ``dual_weights`` (t,), the ``w in W`` attaining it;
        ``upper_bound_history`` (per master); ``dim_history``, the subspace dimension
        ``k`` of each master; ``working_set_history``, the number of triplet rows of
        each master (``t`` without a working set), ``bound_history`` those of them bound
        to ``w_r = C`` (zero without a working set); ``n_matvec``, products with ``H`` in
        Lanczos; ``eps``, the absolute stopping threshold; ``status``: ``"optimal"`` (gap
        below ``eps``), ``"max_iter"``, ``"max_time"`` or ``"interrupted"``.
    """
    start = time.perf_counter()
    deadline = None if max_time is None else start + max_time
    triplets = np.asarray(triplets, dtype=np.int64)
    op = TripletOperator(np.asarray(X, dtype=np.float64), triplets)
    t, D = len(triplets), op.n_features
    scale = op.margin_scale()
    eps = tol * scale
    method = eigen_method(eigen_solver, D)
    if n_vectors is None:
        n_vectors = _WS_VECTORS if working_set else 16
    p = min(n_vectors, D)
    if max_dim is None:
        max_dim = (_WS_MAX_DIM if working_set else 60 if t <= _DENSE_MASTER_MAX_T
                   else _LOW_RANK_MAX_DIM)
    max_dim = max(min(max_dim, D), p + 1)
    rng = check_random_state(random_state)

    w = np.full(t, 1.0 / t)
    vals, vecs, n_matvec = op.top_eigenpairs(w, p, method, v0=rng.standard_normal(D))
    upper, best_w = float(vals[0]), w
    Q = np.empty((D, 0))
    Pk, Pj = np.empty((t, 0)), np.empty((t, 0))
    Q, Pk, Pj = _expand(op, Q, Pk, Pj, vecs)
    # The first rows: the smallest margins under the projector on the first subspace.
    center, rows = w, None
    if working_set:
        rows = _WorkingSet(np.sum(Pk**2, axis=1) - np.sum(Pj**2, axis=1), C, eps)
        # The proximal center must lie in the masters' domain: uniform on the rows.
        center = np.zeros(t)
        center[rows.rows] = 1.0 / len(rows.rows)
        vals, vecs, count = op.top_eigenpairs(center, p, method, v0=vecs[:, 0])
        n_matvec += count
        if vals[0] < upper:
            upper, best_w = float(vals[0]), center
    lower, best = -np.inf, None
    history_lo, history_up, times, dims, sizes, n_bound = [], [], [], [], [], []
    status = "max_iter"
    master_tol = 1e-3
    center_value = float(vals[0]) / scale
    # (u / 2) ||w - c||^2 with ||w - c||^2 <= 2 C: a tenth of the unit margin scale.
    u = 0.1 / C
    for _ in range(max_iter):
        k = Q.shape[1]
        dims.append(k)
        root = np.sqrt(scale)
        idx, fixed = slice(None), None
        if rows is not None:
            # Bound rows enter the master as the constant C sum_r A_r (scaled units).
            idx, bound = rows.free, rows.bound_rows
            Bk, Bj = Pk[bound] / root, Pj[bound] / root
            fixed = (C * (Bk.T @ Bk - Bj.T @ Bj), 1.0 - C * len(bound))
        s = t if rows is None else len(idx)
        sizes.append(t if rows is None else len(rows.rows))
        n_bound.append(0 if rows is None else len(rows.bound_rows))
        Y, _, _, pi, w_master, _, _ = path_following(
            Pk[idx] / root, Pj[idx] / root, C, master_tol, _MASTER_MAX_ITER, deadline,
            low_rank=s > _DENSE_MASTER_MAX_T and k * (k + 1) // 2 < s // 2,
            prox=(u, center[idx]) if proximal else None, fixed=fixed)
        vals_y, vecs_y = np.linalg.eigh((Y + Y.T) / 2.0)
        vals_y = np.clip(vals_y, 0.0, None)
        vals_y /= vals_y.sum()
        R = vecs_y * np.sqrt(vals_y)  # Y = R R^T
        margins = np.sum((Pk @ R) ** 2, axis=1) - np.sum((Pj @ R) ** 2, axis=1)
        value = primal_value(margins, C)[0]
        if value > lower:
            lower, best = value, Q @ R
        # Zero outside the working set (C on its bound rows): a point of the full W.
        w_cert = np.zeros(t)
        w_cert[idx] = w_master
        if rows is None:
            w_cert = project_capped_simplex(w_cert, C)
        else:
            w_cert[rows.bound_rows] = C
            w_cert[rows.rows] = project_capped_simplex(w_cert[rows.rows], C)
        vals, vecs, count = op.top_eigenpairs(w_cert, p, method, v0=vecs[:, 0])
        n_matvec += count
        if vals[0] < upper:
            upper, best_w = float(vals[0]), w_cert
        # Proximal bundle step (scaled units): serious if lambda_max fell by a tenth of
        # the fall predicted by the model value pi at the master's w.
        predicted = center_value - pi
        achieved = center_value - vals[0] / scale
        if achieved >= _SERIOUS * predicted:
            center, center_value = w_cert, vals[0] / scale
            if achieved >= 0.5 * predicted:
                u /= 2.0
        else:
            u *= 2.0
        history_lo.append(lower)
        history_up.append(upper)
        times.append(time.perf_counter() - start)
        stopped = callback is not None and callback(len(times), lower, upper, k)
        end = stop_status(upper - lower <= eps, stopped, deadline)
        if end is not None:
            status = end
            break
        # Masters need only be as accurate as the outer gap is small.
        master_tol = float(np.clip(0.05 * (upper - lower) / scale, 1e-8, 1e-3))
        if rows is not None:
            rows.update(margins, w_cert, center)
        # Directions where the model lambda_max(Q^T H Q) underestimates lambda_max(H).
        new = vecs[:, vals > pi * scale]
        if new.shape[1] == 0:
            new = vecs[:, :1]
        dim = max_dim
        if rows is not None and len(rows.free) > _WS_DENSE_ROWS:
            # Too many rows for a dense master: the low-rank one's O(|S| k^4) steps.
            dim = min(max_dim, _LOW_RANK_MAX_DIM)
            new = new[:, :dim // 2]
        if k + new.shape[1] > dim:
            keep = dim - new.shape[1]
            V = vecs_y[:, ::-1][:, :keep]
            Q, Pk, Pj = Q @ V, Pk @ V, Pj @ V
        Q, Pk, Pj = _expand(op, Q, Pk, Pj, new)

    metric, F = trace_one_factor(best @ best.T)
    _, rho, slacks = primal_value(op.margins(F.T), C)
    return SolverResult(
        embedding=F, objective_history=history_lo, time_history=times, n_iter=len(times),
        converged=status == "optimal", interrupted=status == "interrupted",
        info={"metric": metric, "rho": rho, "slacks": slacks, "upper_bound": upper,
              "dual_weights": best_w, "upper_bound_history": history_up,
              "dim_history": dims, "working_set_history": sizes, "bound_history": n_bound,
              "n_matvec": n_matvec,
              "eps": eps, "status": status})


def _expand(op, Q, Pk, Pj, new):
    """Append the part of ``new`` (D, m) orthogonal to ``Q``, with its projections."""
    for _ in range(2):  # twice is enough (Kahan, Parlett)
        new = new - Q @ (Q.T @ new)
    U, s, _ = np.linalg.svd(new, full_matrices=False)
    U = U[:, s > 1e-8 * max(1.0, s.max(initial=0.0))]
    XU = op.X @ U
    return (np.hstack([Q, U]), np.hstack([Pk, op.Bk @ XU]), np.hstack([Pj, op.Bj @ XU]))


class _WorkingSet:
    """The triplet rows of the masters (``working_set=True``), grown by pricing.

    Parameters
    ----------
    margins : ndarray of shape (t,)
        Margins at the first metric: the rows start as the ``max(1.5 / C, 1 / C + 50)``
        smallest.
    C : float
        Slack price: at least ``ceil(1 / C) + 50`` rows are kept, so that the master's
        capped simplex is not empty (and has an interior).
    eps : float, default=0.0
        A row is bound only while its margin is below the master's ``rho`` by more.

    Attributes
    ----------
    rows : ndarray of int
        The working set, sorted.
    bound : ndarray of bool
        Per row of ``rows``: held at ``w_r = C`` (outside the master's variables).
    """

    def __init__(self, margins, C, eps=0.0):
        self.C, self.eps = C, eps
        t = len(margins)
        self.size = min(t, max(math.ceil(_WS_START / C), math.ceil(1.0 / C) + _WS_MIN_EXTRA))
        self.rows = np.sort(np.argpartition(margins, self.size - 1)[:self.size])
        self.idle = np.zeros(len(self.rows), dtype=np.int64)
        self.capped = np.zeros(len(self.rows), dtype=np.int64)

    @property
    def bound(self):
        return self.capped >= _WS_BOUND_PATIENCE

    @property
    def free(self):
        """The rows whose weight is a variable of the master."""
        return self.rows[~self.bound]

    @property
    def bound_rows(self):
        """The rows held at ``w_r = C``."""
        return self.rows[self.bound]

    def update(self, margins, w, center):
        """Add the rows whose margin at the new metric falls below the master's ``rho``
        (smallest first, at most ``_WS_ADD / C``); drop rows that kept a weight below
        ``_WS_ZERO C`` and a margin above ``rho`` for ``_WS_PATIENCE`` masters (never the
        center's); bind the rows that kept weight ``C`` and a margin below ``rho - eps``
        for ``_WS_BOUND_PATIENCE`` masters, and free a bound row whose margin reaches it.

        A bound row with margin below ``rho`` satisfies the optimality conditions of the
        master over all its rows (``xi_r > 0``, ``w_r = C``): binding it changes nothing
        at the master's optimum; a bound row whose margin the bound master lifts to
        ``rho`` no longer does, and is freed.

        Parameters
        ----------
        margins : ndarray of shape (t,)
            ``<A_r, X>`` at the master's metric, every triplet.
        w : ndarray of shape (t,)
            The master's weights (zero outside the rows, ``C`` on the bound ones).
        center : ndarray of shape (t,)
            The proximal center.
        """
        C, rows = self.C, self.rows
        rho = primal_value(margins[rows], C)[1]
        capped = (w[rows] >= (1.0 - _WS_BOUND_TOL) * C) & (margins[rows] < rho - self.eps)
        self.capped = np.where(capped, self.capped + 1, 0)
        # At most ceil(1 / C) - 1 bound rows, so that the free weights sum to
        # 1 - C |bound| > 0: the smallest margins stay bound.
        bound = np.flatnonzero(self.bound)
        excess = len(bound) - (math.ceil(1.0 / C - 1e-9) - 1)
        if excess > 0:
            self.capped[bound[np.argsort(margins[rows[bound]])[-excess:]]] = 0
        idle = (w[rows] <= _WS_ZERO * C) & (margins[rows] > rho) & (center[rows] == 0)
        self.idle = np.where(idle, self.idle + 1, 0)
        keep = self.idle < _WS_PATIENCE
        floor = math.ceil(1.0 / C) + _WS_MIN_EXTRA
        if keep.sum() < floor:  # keep the idle rows with the smallest margins
            order = np.argsort(np.where(keep, -np.inf, margins[rows]), kind="stable")
            keep[order[:min(floor, len(rows))]] = True
        outside = np.ones(len(margins), dtype=bool)
        outside[rows] = False
        candidates = np.flatnonzero(outside & (margins < rho))
        n_add = min(len(candidates), math.ceil(_WS_ADD / C))
        added = candidates[np.argsort(margins[candidates])[:n_add]]
        zeros = np.zeros(n_add, dtype=np.int64)
        self.rows = np.concatenate([rows[keep], added])
        self.idle = np.concatenate([self.idle[keep], zeros])
        self.capped = np.concatenate([self.capped[keep], zeros])
        order = np.argsort(self.rows)
        self.rows, self.idle, self.capped = (self.rows[order], self.idle[order],
                                             self.capped[order])
