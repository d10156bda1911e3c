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
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import eigh

__all__ = ["factor_psd", "primal_value", "project_capped_simplex"]


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


def factor_psd(metric):
    """Symmetrize, clip to PSD, scale to trace one; return it and ``L`` with ``L^T L`` it.

    Returns
    -------
    metric : ndarray of shape (D, D)
    components : ndarray of shape (rank, D)
        Rows ``sqrt(lambda_i) v_i^T`` for the eigenvalues above ``D eps lambda_max``,
        largest first.
    """
    vals, vecs = eigh((metric + metric.T) / 2.0)
    vals = np.clip(vals, 0.0, None)
    vals /= vals.sum()
    keep = vals > vals[-1] * len(vals) * np.finfo(float).eps
    metric = (vecs * vals) @ vecs.T
    components = (vecs[:, keep] * np.sqrt(vals[keep])).T[::-1]
    return (metric + metric.T) / 2.0, components
