r"""PSDBoost (seed 002): a trace-one PSD Mahalanobis matrix from triplets by matrix generation.

Problem (3) of Shen, Welsh & Wang (NIPS 2008), for triplets ``r = (i, j, k)`` meaning
``d(i, j) < d(i, k)`` and ``A_r = (a_i - a_k)(a_i - a_k)^T - (a_i - a_j)(a_i - a_j)^T``:

.. math::

    \max_{X, \rho, \xi} \; \rho - C \sum_r \xi_r \quad \text{s.t.} \quad
    \langle A_r, X \rangle \ge \rho - \xi_r, \quad X \succeq 0, \quad
    \operatorname{tr} X = 1, \quad \xi \ge 0 .

Trace-one PSD matrices are the convex hull of the rank-one ``u u^T`` with ``||u|| = 1``
(Theorem 3.4), so ``X = sum_i theta_i u_i u_i^T`` turns (3) into an LP over ``theta``
with infinitely many columns. Algorithm 1 solves it by column generation: the restricted
master LP (P1)/(D1) over the bases generated so far (HiGHS, :mod:`._master`) gives dual
weights ``w`` and value ``pi``; the most violated dual constraint is the top eigenpair of
``H = sum_r w_r A_r`` (problem B1, :mod:`._pricing`); stop when
``lambda_max(H) <= pi + eps``. The master holds only the triplet rows that a current
``X`` violates (row generation); its value is that of (P1) over all triplets.

Why the gap is a certificate: ``pi`` is the value of a feasible point of (3) (the
restricted primal), and ``w`` is feasible for the full dual, whose value at ``w`` is
``lambda_max(H(w))``; so the optimum of (3) lies in ``[pi, lambda_max(H)]``.
"""

from __future__ import annotations

import numbers
import sys
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn.constraints import triplets_from_labels
from psdlearn.psdboost._master import RestrictedMaster
from psdlearn.psdboost._pricing import DENSE_MAX_FEATURES, TripletOperator

__all__ = ["PSDBoost", "check_triplets"]

#: ``C="auto"`` is ``1 / (AUTO_NU * t)``: at most this fraction of the triplets ends with a
#: positive slack (see the ``C`` parameter).
AUTO_NU = 0.1
#: Pricing attempts per master solve before the top eigenvector is added regardless (the
#: smoothed point's gap shrinks by the factor ``smoothing`` at each mispricing).
MAX_MISPRICINGS = 50


def check_triplets(triplets, n_samples):
    """Validate an index array of triplets; return it as a new (t, 3) int64 array.

    Duplicate rows are merged (each triplet counted once) with a warning.

    Raises
    ------
    TypeError
        Non-integer indices.
    ValueError
        Wrong shape, no triplet, an index out of ``[0, n_samples)`` or a row that repeats
        an index.
    """
    arr = np.asarray(triplets)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"triplets must have shape (t, 3), got {arr.shape}.")
    if len(arr) == 0:
        raise ValueError("triplets is empty: PSDBoost needs at least one triplet.")
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"triplets must hold integer indices, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    bad = (arr < 0) | (arr >= n_samples)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"triplets index out of range [0, {n_samples}) in row {row}: "
                         f"{arr[row].tolist()}.")
    repeated = (arr[:, 0] == arr[:, 1]) | (arr[:, 0] == arr[:, 2]) | (arr[:, 1] == arr[:, 2])
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise ValueError(f"triplets row {row} repeats an index: {arr[row].tolist()}; "
                         "(i, j, k) must be three distinct samples.")
    unique, first = np.unique(arr, axis=0, return_index=True)
    if len(unique) < len(arr):
        warnings.warn(f"{len(arr) - len(unique)} duplicate triplets merged.", UserWarning,
                      stacklevel=3)
        arr = arr[np.sort(first)]
    return arr


class PSDBoost(TransformerMixin, BaseEstimator):
    """PSD metric learning by matrix generation and linear programming (seed 002).

    Learns a Mahalanobis matrix ``X >= 0`` with ``tr X = 1`` that maximizes the soft
    margin ``rho - C sum xi`` of the triplet constraints
    ``d_X(i, k) - d_X(i, j) >= rho - xi_r`` (problem (3) in the module docstring), by
    Algorithm 1: column generation over rank-one bases with a HiGHS master LP and a
    Lanczos pricing step that never forms a ``D x D`` matrix ``A_r``.

    Parameters
    ----------
    C : float or "auto", default="auto"
        Price of a unit of slack; needs ``C >= 1 / t`` (``t`` triplets), otherwise (3) is
        unbounded. Not given in seed 002. ``"auto"`` is ``C = 1 / (0.1 t)``, the
        ``nu``-parametrization of LPBoost (the paper's reference [1]) with ``nu = 0.1``:
        at the optimum ``w_r = C`` wherever ``xi_r > 0`` and ``sum w = 1``, so at most
        ``nu t`` = 10% of the triplets keep a positive slack and at least 10% carry dual
        weight. This is invariant to the number of triplets and to the scale of the data
        (unlike a fixed ``C``); ``C >= 1`` gives the hard margin (the worst triplet's margin
        is maximized).
    tol : float, default=1e-5
        Stop when ``lambda_max(H) <= pi + eps`` with ``eps = tol * s``, where
        ``s = mean_r (||a_i - a_j||^2 + ||a_i - a_k||^2) / D`` bounds the mean
        ``|<A_r, X>|`` at the isotropic metric ``X = I / D`` (the scale of the margins);
        ``lambda_max(H) - pi`` bounds the distance of both ``pi`` and ``lambda_max(H)``
        to the optimum of (3).
    max_iter : int, default=1000
        Maximum number of generated bases (master LP solves).
    n_columns : int, default=5
        Bases added per master solve: the top ``n_columns`` eigenvectors of ``H`` at the
        pricing point whose reduced cost at the master's ``w`` is positive
        (``u^T H(w) u > pi``). Seed 002 adds one (``n_columns=1``); several (multiple
        pricing, standard in column generation) fill the optimal range of ``X`` faster,
        see ``benchmarks/results/psdboost.md``.
    smoothing : float in [0, 1), default=0.8
        Dual smoothing (Wentges) against the tailing-off that seed 002 section 6 reports:
        pricing uses ``alpha c + (1 - alpha) w`` where the center ``c`` is the point with
        the smallest ``lambda_max(H)`` priced so far after a master solve (the first
        pricing after the first solve uses ``w`` itself; the uniform start weights are not
        a center, so ``c`` is zero outside the triplets the master ever weighted and ``H``
        at the smoothed point costs as little as at ``w``). If none of its eigenvectors
        improves the master (a mispricing), ``lambda_max`` at that point is at most
        ``alpha lambda_max(H(c)) + (1 - alpha) pi``, so the center's gap shrinks by
        ``alpha`` and pricing is repeated. ``0`` is Algorithm 1 (``w`` itself). The
        stopping test uses the best bound ``UB = min lambda_max`` (uniform start
        included), a valid certificate since every priced point is dual feasible.
    max_bases : int or None, default=None
        Cap on the number of columns in the master LP (the aggregation step of bundle
        methods, paper section 5): when it is reached, columns with ``theta = 0`` are
        dropped and, if still too many, the current ``X`` replaces them by its leading
        eigenvectors (rank-one columns) plus one aggregated trace-one column for its
        tail. The current solution stays feasible, so the master value still never
        decreases. ``None``: no cap (Algorithm 1 as written). Must exceed ``n_columns``.
    n_triplets : int or None, default=None
        :meth:`fit` only: random subsample size of the label triplets (seed 002 section
        6 draws 550 of the 600 points' triplets); all of them when None.
    eigen_solver : {"auto", "dense", "lanczos"}, default="auto"
        Pricing: ``"dense"`` forms ``H`` (``D x D``) and calls ``eigh``; ``"lanczos"`` runs
        ARPACK on ``u -> X^T (M(w) (X u))`` (``O(n D + t)`` per product); ``"auto"`` is
        dense for ``D <= 64``.
    random_state : int, RandomState instance or None, default=None
        Seeds the triplet subsample of :meth:`fit` and the first Lanczos start vector.
    verbose : int, default=0
        With ``verbose >= 1`` a progress bar over the master solves shows the master
        value ``pi``, the certified gap ``UB - pi`` and the number of bases.

    Attributes
    ----------
    metric_ : ndarray of shape (n_features, n_features)
        Learned ``X = sum_i theta_i Z_i``, symmetric PSD, trace one.
    components_ : ndarray of shape (rank_, n_features)
        ``L`` with ``metric_ = L^T L`` (rows ``sqrt(theta_i) u_i`` of the bases in use).
    rank_ : int
    theta_ : ndarray of shape (n_columns,)
        Weights of the master's columns (sum one).
    bases_ : list of ndarray of shape (r_i, n_features)
        Factor ``F_i`` of each master column, ``Z_i = F_i^T F_i`` (``r_i = 1`` except an
        aggregated column).
    dual_weights_ : ndarray of shape (t,)
        ``w`` of the last master LP (the dual of (P1), ``0 <= w <= C``, ``sum w = 1``).
    rho_ : float
    slacks_ : ndarray of shape (t,)
        ``xi``.
    objective_ : float
        ``rho - C sum xi`` of the returned ``metric_``, equal to the last master value.
    upper_bound_ : float
        Smallest ``lambda_max(H(w))`` over the priced dual points: the optimum of (3) lies
        in ``[objective_, upper_bound_]``.
    best_dual_weights_ : ndarray of shape (t,)
        The dual point ``w`` attaining ``upper_bound_``.
    dual_objective_history_ : list of float
        Value of the restricted dual (D1) (= of (P1)) after each master solve; never
        decreases.
    lambda_max_history_ : list of float
        ``lambda_max(H(w))`` of each pricing step: entry 0 at the uniform start weights,
        entry ``m`` at the weights of master solve ``m``; each is an upper bound on the
        optimum of (3) (entry 0 included, as the uniform ``w`` is dual feasible).
    time_history_ : list of float
        Cumulative seconds after each master solve + pricing, aligned with
        ``dual_objective_history_``.
    n_bases_ : int
        Bases generated (columns added, aggregations excluded).
    n_iter_ : int
        Master LP solves.
    n_master_rows_ : int
        Triplet rows held by the master LP at the end: row generation keeps out the
        triplets whose margin never fell below ``rho`` (:mod:`._master`); the solution is
        the same as with all ``t`` rows.
    n_aggregations_ : int
    C_ : float
        The slack price used.
    eps_ : float
        Absolute stopping threshold ``tol * s``.
    triplets_ : ndarray of shape (t, 3)
        The triplets of the fit.
    fit_time_ : float
    n_features_in_ : int

    See Also
    --------
    psdlearn.psdboost.ipm.solve_ipm : Problem (3) by a primal-dual interior-point method:
        exact, ``O(t^2)`` memory and ``O(t^2 D + t^3 + D^3)`` per iteration. At ``D = 64``
        with 1000 triplets it converges in 1.5 s; this column generation is still 3e-4
        short of the optimum after 400 master solves and 106 s
        (``benchmarks/results/psdboost.md``).

    Examples
    --------
    >>> import psdlearn as pl
    >>> X, y = pl.datasets.load("iris")
    >>> m = pl.PSDBoost(random_state=0).fit(X, y)
    >>> round(float(m.metric_.trace()), 6)
    1.0
    """

    _parameter_constraints = {
        "C": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_columns": [Interval(numbers.Integral, 1, None, closed="left")],
        "smoothing": [Interval(numbers.Real, 0, 1, closed="left")],
        "max_bases": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "n_triplets": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "eigen_solver": [StrOptions({"auto", "dense", "lanczos"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, C="auto", tol=1e-5, max_iter=1000, n_columns=5, smoothing=0.8,
                 max_bases=None, n_triplets=None, eigen_solver="auto", random_state=None,
                 verbose=0):
        self.C = C
        self.n_columns = n_columns
        self.smoothing = smoothing
        self.tol = tol
        self.max_iter = max_iter
        self.max_bases = max_bases
        self.n_triplets = n_triplets
        self.eigen_solver = eigen_solver
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the metric from labels, with the triplets of seed 002 section 6.

        For every labelled point ``i``: ``j`` = its nearest neighbour of the same class,
        ``k`` = its nearest neighbour of another class (Euclidean), subsampled to
        ``n_triplets`` (:func:`psdlearn.triplets_from_labels`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels; ``-1`` = unlabelled (not used).

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        rng = check_random_state(self.random_state)
        triplets = triplets_from_labels(X, y, n_triplets=self.n_triplets, random_state=rng)
        if len(triplets) == 0:
            raise ValueError("y gives no triplet: every class needs at least 2 labelled "
                             "points and at least 2 classes are needed.")
        return self._fit(X, triplets, rng)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_triplets(self, X, triplets):
        """Learn the metric from triplets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        triplets : array-like of shape (t, 3)
            Integer rows ``(i, j, k)``: sample ``i`` should be closer to ``j`` than to
            ``k``. Duplicate rows are merged with a warning.

        Returns
        -------
        self
        """
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        triplets = check_triplets(triplets, len(X))
        return self._fit(X, triplets, check_random_state(self.random_state))

    # ------------------------------------------------------------------ solver
    def _resolve_C(self, t):
        if self.C == "auto":
            return 1.0 / (AUTO_NU * t)
        C = float(self.C)
        if C * t < 1.0 - 1e-12:
            raise ValueError(f"C={C} is below 1/t = {1.0 / t:.3g} for t={t} triplets: the "
                             "LP (3) is then unbounded (sum w = 1 cannot hold with w <= C).")
        return C

    def _fit(self, X, triplets, rng):
        t = len(triplets)
        D = X.shape[1]
        C = self._resolve_C(t)
        op = TripletOperator(X, triplets)
        nj, nk, jk = op.difference_stats()
        # A_r = dk dk^T - dj dj^T is PSD iff dj is a multiple c dk with |c| <= 1.
        parallel = nj * nk - jk**2 <= 1e-12 * np.maximum(nj * nk, 1e-300)
        if np.all(parallel & (nj <= nk * (1 + 1e-12))):
            warnings.warn(
                "every triplet is satisfied by every metric (each A_r is PSD: a_i - a_j is "
                "a shorter multiple of a_i - a_k): the triplets do not constrain the "
                "metric, and PSDBoost only maximizes the smallest margin.",
                UserWarning, stacklevel=3)
        # Mean |<A_r, X>| at the isotropic metric X = I / D bounds the margin scale.
        scale = float(np.mean(nj + nk)) / D
        eps = self.tol * (scale if scale > 0 else 1.0)
        method = self.eigen_solver
        if method == "auto":
            method = "dense" if D <= DENSE_MAX_FEATURES else "lanczos"

        k = min(self.n_columns, D)
        if self.max_bases is not None and self.max_bases <= k:
            raise ValueError(f"max_bases={self.max_bases} must exceed n_columns={k}: an "
                             "aggregated column and the new bases must fit under the cap.")
        start = time.perf_counter()
        master = RestrictedMaster(t, C)
        # The uniform start weights bound the optimum but do not become the stability
        # center: the center's support (triplets with w_r > 0) decides the cost of H(w).
        best_w = np.full(t, 1.0 / t)
        vals, vecs, n_matvec = op.top_eigenpairs(best_w, 1, method, v0=rng.standard_normal(D))
        best, lambdas = vals[0], [vals[0]]
        center, center_value = None, np.inf
        new, coef = vecs, op.column_coefficients(vecs)
        bases, duals, times = [], [], []
        theta = np.empty(0)
        n_aggregations = n_mispricings = n_bases = 0
        converged = False
        bar = None
        if self.verbose:
            from tqdm import tqdm

            bar = tqdm(total=self.max_iter, desc="PSDBoost", unit="solve", file=sys.stderr)
        try:
            for _ in range(self.max_iter):
                if self.max_bases is not None and len(bases) + new.shape[1] > self.max_bases:
                    bases = self._aggregate(master, op, bases, theta, new.shape[1])
                    n_aggregations += 1
                master.add_columns(coef)
                n_bases += coef.shape[1]
                bases.extend(u[None, :] for u in new.T)
                pi, w, theta, rho, xi, _ = master.solve()
                duals.append(pi)
                for _ in range(MAX_MISPRICINGS):
                    # Wentges smoothing: price at a point between the stability center
                    # and the master's duals; columns must still improve the master at ``w``.
                    priced = w if center is None else (
                        self.smoothing * center + (1.0 - self.smoothing) * w)
                    vals, vecs, count = op.top_eigenpairs(priced, k, method, v0=vecs[:, 0])
                    n_matvec += count
                    lambdas.append(vals[0])
                    if vals[0] < center_value:
                        center, center_value = priced, vals[0]
                    if vals[0] < best:
                        best, best_w = vals[0], priced
                    if best <= pi + eps:
                        converged = True
                        break
                    coef = op.column_coefficients(vecs)
                    improving = w @ coef > pi
                    if improving.any():
                        new, coef = vecs[:, improving], coef[:, improving]
                        break
                    n_mispricings += 1
                else:
                    new, coef = vecs[:, :1], coef[:, :1]
                times.append(time.perf_counter() - start)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(master=f"{pi:.6g}", gap=f"{best - pi:.3g}",
                                    bases=len(bases), refresh=False)
                if converged:
                    break
        finally:
            if bar is not None:
                bar.close()
        if not converged:
            warnings.warn(
                f"PSDBoost stopped at max_iter={self.max_iter} with lambda_max(H) - pi = "
                f"{best - pi:.3g} > eps = {eps:.3g}; increase max_iter or tol.",
                ConvergenceWarning, stacklevel=3)
        self.fit_time_ = time.perf_counter() - start
        self._set_solution(bases, theta, D)
        self.dual_weights_, self.rho_, self.slacks_ = w, rho, xi
        self.objective_ = float(rho - C * xi.sum())
        self.upper_bound_, self.best_dual_weights_ = float(best), best_w
        self.dual_objective_history_ = duals
        self.lambda_max_history_ = lambdas
        self.time_history_ = times
        self.n_iter_ = len(duals)
        self.n_master_rows_ = len(master.rows)
        self.n_bases_ = n_bases
        self.n_aggregations_, self.n_mispricings_, self.n_matvec_ = (
            n_aggregations, n_mispricings, n_matvec)
        self.C_, self.eps_ = C, eps
        self.triplets_ = triplets
        return self

    def _aggregate(self, master, op, bases, theta, n_new):
        """Bundle aggregation: compress the master's columns to make room for ``n_new``.

        Columns with ``theta = 0`` and a non-binding dual constraint are dropped. If the
        rest still do not fit, they are replaced by the eigen-decomposition of the current
        ``X = sum theta_i Z_i``: its leading eigenvectors ``v v^T`` as rank-one columns
        and the remaining tail as one aggregated trace-one column. ``X`` stays a feasible
        combination, so the master value cannot drop. Returns the new list of column factors.
        """
        unused = master.slack_columns()
        if len(unused):
            master.delete_columns(unused)
            keep = np.ones(len(bases), dtype=bool)
            keep[unused] = False
            bases = [b for b, k in zip(bases, keep, strict=True) if k]
            theta = theta[keep]
        if len(bases) + n_new <= self.max_bases:
            return bases
        F = np.vstack([np.sqrt(th) * b for th, b in zip(theta, bases, strict=True) if th > 0])
        _, s, Vt = np.linalg.svd(F, full_matrices=False)
        s, Vt = s[s > s[0] * 1e-12], Vt[s > s[0] * 1e-12]
        n_keep = self.max_bases - n_new - 1
        columns = list(Vt[:n_keep, None, :])
        if len(s) > n_keep:
            tail = s[n_keep:, None] * Vt[n_keep:]
            columns.append(tail / np.linalg.norm(tail))
        master.delete_columns(np.arange(len(bases)))
        master.add_columns(np.column_stack([op.margins(c) for c in columns]))
        return columns

    def _set_solution(self, bases, theta, D):
        rows = [np.sqrt(th) * b for th, b in zip(theta, bases, strict=True) if th > 0]
        L = np.vstack(rows)
        metric = L.T @ L
        metric = (metric + metric.T) / 2.0
        trace = float(np.trace(metric))
        metric /= trace
        L /= np.sqrt(trace)
        if L.shape[0] > D:
            vals, vecs = np.linalg.eigh(metric)
            pos = vals > vals[-1] * D * np.finfo(float).eps
            L = (vecs[:, pos] * np.sqrt(vals[pos])).T[::-1]
        self.metric_ = metric
        self.components_ = L
        self.rank_ = L.shape[0]
        self.theta_ = theta
        self.bases_ = bases

    # ------------------------------------------------------------------ use
    def transform(self, X):
        """Map ``X`` to the space where Euclidean distance is the learned metric.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, rank_)
            ``X @ components_.T``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.components_.T

    def get_mahalanobis_matrix(self):
        """The learned matrix ``metric_`` (D, D): ``d(x, z)^2 = (x - z)^T M (x - z)``."""
        check_is_fitted(self)
        return self.metric_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
