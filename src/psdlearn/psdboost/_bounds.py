r"""The two certified bounds of problem (3) that every PSDBoost solver reports.

Problem (3) is the saddle point over the spectraplex
``S = {X >= 0, tr X = 1}`` and the capped simplex ``W = {0 <= w <= C, sum w = 1}``:

.. math::

    \max_{X \in S} \min_{w \in W} \sum_r w_r \langle A_r, X \rangle
    = \min_{w \in W} \max_{X \in S} \langle H(w), X \rangle
    = \min_{w \in W} \lambda_{\max}(H(w)),

since ``max_{rho, xi >= 0} rho - C sum_r xi_r`` s.t. ``xi_r >= rho - m_r`` is, by LP
duality, ``min_{w in W} sum_r w_r m_r``. Hence any ``X in S`` gives the lower bound
``value(X) = min_{w in W} w . m(X)`` (:func:`primal_value`: the weight ``C`` on the
smallest margins) and any ``w in W`` the upper bound ``lambda_max(H(w))``. Solvers whose
iterates only approximately satisfy these sets (an interior-point iterate, a master's
duals) are certified through :func:`project_capped_simplex` and :func:`primal_value`.

Around them, what every solver shares: the margin scale ``s`` of its stopping threshold
``eps = tol * s`` (:func:`margin_scale`), the reason it stops (:func:`stop_status`) and the
trace-one factor of its metric (:func:`trace_one_factor`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from psdlearn._linalg import psd_factor

__all__ = ["margin_scale", "primal_value", "project_capped_simplex", "stop_status",
           "trace_one_factor"]


def margin_scale(nj, nk, n_features):
    """The scale ``s = mean_r (||d_j||^2 + ||d_k||^2) / D`` of the margins (1 if zero).

    It bounds the mean ``|<A_r, X>|`` at the isotropic metric ``X = I / D``; every solver
    stops at the absolute gap ``eps = tol * s``, so that ``tol`` is free of the data's
    scale.

    Parameters
    ----------
    nj, nk : ndarray of shape (t,)
        ``||a_i - a_j||^2`` and ``||a_i - a_k||^2`` per triplet.
    n_features : int

    Returns
    -------
    float
    """
    scale = float(np.mean(nj + nk)) / n_features
    return scale if scale > 0 else 1.0


def stop_status(converged, stopped, deadline):
    """Why a solver of problem (3) ends after an iteration, or None to go on.

    Parameters
    ----------
    converged : bool
        Its stopping test held (this wins over the two others).
    stopped : bool
        Its callback returned ``True``.
    deadline : float or None
        ``time.perf_counter()`` value of its ``max_time``.

    Returns
    -------
    {"optimal", "interrupted", "max_time"} or None
    """
    if converged:
        return "optimal"
    if stopped:
        return "interrupted"
    if deadline is not None and time.perf_counter() > deadline:
        return "max_time"
    return None


def primal_value(margins, C):
    """Value ``max_{rho, xi >= 0} rho - C sum xi`` s.t. ``margins + xi >= rho``.

    Parameters
    ----------
    margins : ndarray of shape (t,)
        ``<A_r, X>`` at a trace-one PSD ``X``.
    C : float
        Slack price with ``C t >= 1``.

    Returns
    -------
    value : float
        ``min_{w in W} w . margins``: the mean of the ``1 / C`` smallest margins (the last
        one weighted by the fractional remainder), a lower bound on the optimum of (3).
    rho : float
        The ``ceil(1 / C)``-th smallest margin, an optimal ``rho``.
    slacks : ndarray of shape (t,)
        ``max(0, rho - margins)``.
    """
    margins = np.asarray(margins, dtype=np.float64)
    # The derivative of rho - C sum (rho - m_r)_+ in rho is 1 - C #{m_r < rho}.
    q = min(len(margins), max(1, math.ceil(1.0 / C - 1e-9)))
    rho = float(np.partition(margins, q - 1)[q - 1])
    slacks = np.maximum(rho - margins, 0.0)
    return float(rho - C * slacks.sum()), rho, slacks


def project_capped_simplex(v, C):
    """Euclidean projection of ``v`` onto ``{0 <= w <= C, sum w = 1}`` (``C t >= 1``).

    The projection is ``clip(v - tau, 0, C)`` with ``tau`` the root of the nondecreasing
    piecewise-linear ``sum clip(v - tau, 0, C) = 1``, located among the breakpoints
    ``v_r`` and ``v_r - C`` by bisection on the sorted breakpoints and then solved exactly
    on its linear piece.
    """
    v = np.asarray(v, dtype=np.float64)
    breaks = np.unique(np.concatenate([v, v - C]))

    def total(tau):
        return float(np.clip(v - tau, 0.0, C).sum())

    # total(min(v) - C) = C t >= 1 >= 0 = total(max(v)).
    lo, hi = 0, len(breaks) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if total(breaks[mid]) >= 1.0:
            lo = mid
        else:
            hi = mid
    a, b = breaks[lo], breaks[hi]
    fa, fb = total(a), total(b)
    tau = a if fa == fb else a + (fa - 1.0) * (b - a) / (fa - fb)
    w = np.clip(v - tau, 0.0, C)
    # Rounding leaves |sum w - 1| at machine precision; spread it over the free entries.
    free = (w > 0) & (w < C)
    if free.any():
        w[free] += (1.0 - w.sum()) / free.sum()
        np.clip(w, 0.0, C, out=w)
    return w


def trace_one_factor(S):
    """``F`` with ``F F^T`` the PSD part of ``(S + S^T) / 2`` scaled to trace one.

    Eigenvalues at most ``D eps lambda_max`` (rounding) are dropped
    (:func:`psdlearn._linalg.psd_factor`); the metric is then ``F F^T`` itself.

    Parameters
    ----------
    S : ndarray of shape (D, D)

    Returns
    -------
    metric : ndarray of shape (D, D)
        ``F F^T``: symmetric PSD, trace one.
    factor : ndarray of shape (D, rank)
        Columns ``sqrt(lambda_i) v_i``, largest first.
    """
    F = psd_factor(S, rtol=len(S) * np.finfo(float).eps)
    F /= np.sqrt(np.sum(F**2))
    return F @ F.T, F
