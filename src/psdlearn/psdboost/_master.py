r"""The restricted master LP of PSDBoost, kept alive in HiGHS between column additions.

Restricted primal (P1) over the current columns ``Z_1 .. Z_M`` (trace-one PSD matrices,
rank one except an aggregated column), with ``a_{ri} = <A_r, Z_i>``:

.. math::

    \max_{\rho, \xi \ge 0, \theta \ge 0} \; \rho - C \sum_r \xi_r
    \quad \text{s.t.} \quad \sum_i a_{ri} \theta_i - \rho + \xi_r \ge 0 \;\; (w_r),
    \qquad \sum_i \theta_i = 1 \;\; (\pi),

and its dual (D1): ``min pi`` s.t. ``sum_r a_ri w_r <= pi`` for every column,
``sum_r w_r = 1``, ``0 <= w_r <= C`` (the bound ``w_r <= C`` is the dual of the column
``xi_r``; ``sum w = 1`` the dual of the free column ``rho``). (D1) is feasible only when
``C t >= 1``; otherwise (P1) is unbounded (``rho -> inf`` paid by fewer than one slack).

HiGHS variables: ``[rho, xi_1 .. xi_t, theta_1 .. theta_M]``; rows ``1 .. t`` are the
margins and row ``t + 1`` the trace. A new base is one more column (``addCols``): the
current basis stays primal feasible (the new ``theta`` enters at zero), so the simplex
re-solve is warm. HiGHS reports, for a maximization, ``c = A^T y + z`` with ``y <= 0`` on
active ``>=`` rows: hence ``w = -y_{1..t}`` and ``pi = y_{t+1}``.
"""

from __future__ import annotations

import highspy
import numpy as np

__all__ = ["RestrictedMaster"]


class RestrictedMaster:
    """Live HiGHS model of (P1) for ``t`` triplets and slack price ``C``.

    Parameters
    ----------
    n_triplets : int
    C : float
        Requires ``C * n_triplets >= 1`` (checked by the estimator).
    """

    def __init__(self, n_triplets, C):
        t = int(n_triplets)
        self.t = t
        inf = highspy.kHighsInf
        h = highspy.Highs()
        h.silent()
        # The primal simplex keeps the previous basis after a column is added; HiGHS's
        # presolve would discard it.
        h.setOptionValue("presolve", "off")
        h.setOptionValue("simplex_strategy", 4)
        h.addRows(t + 1, np.r_[np.zeros(t), 1.0], np.r_[np.full(t, inf), 1.0], 0,
                  np.zeros(t + 1, dtype=np.int32), np.empty(0, np.int32), np.empty(0))
        # rho: -1 in every margin row; xi_r: +1 in margin row r.
        starts = np.r_[0, np.arange(t, 2 * t, dtype=np.int32)].astype(np.int32)
        index = np.r_[np.arange(t), np.arange(t)].astype(np.int32)
        value = np.r_[-np.ones(t), np.ones(t)]
        h.addCols(t + 1, np.r_[1.0, np.full(t, -C)], np.r_[-inf, np.zeros(t)],
                  np.full(t + 1, inf), 2 * t, starts, index, value)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self.h = h
        self.n_columns = 0
        self._rows = np.arange(t + 1, dtype=np.int32)

    def add_columns(self, coefficients):
        """Append columns ``theta`` with margin coefficients ``a`` of shape (t, m)."""
        a = np.atleast_2d(np.asarray(coefficients, dtype=np.float64).T).T
        m = a.shape[1]
        values = np.vstack([a, np.ones((1, m))]).T.ravel()
        starts = (np.arange(m) * (self.t + 1)).astype(np.int32)
        self.h.addCols(m, np.zeros(m), np.zeros(m), np.full(m, highspy.kHighsInf),
                       m * (self.t + 1), starts, np.tile(self._rows, m), values)
        self.n_columns += m

    def delete_columns(self, positions):
        """Remove the ``theta`` columns at ``positions`` (0-based among the thetas)."""
        idx = (1 + self.t + np.asarray(positions)).astype(np.int32)
        self.h.deleteCols(len(idx), idx)
        self.n_columns -= len(idx)

    def slack_columns(self):
        """Positions of the ``theta`` columns at zero whose dual constraint is not binding
        (reduced cost below ``-tol``): the ones the master can drop without moving."""
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)[1 + self.t:]
        z = np.asarray(sol.col_dual)[1 + self.t:]
        return np.flatnonzero((x <= 0) & (z < -1e-9 * max(1.0, np.abs(z).max())))

    def solve(self):
        """Re-optimize; return ``pi, w, theta, rho, xi, simplex_iterations``.

        Raises
        ------
        RuntimeError
            If HiGHS does not report an optimal solution.
        """
        h = self.h
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"HiGHS did not solve the restricted master: "
                               f"{h.modelStatusToString(status)}.")
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        y = np.asarray(sol.row_dual)
        t = self.t
        w = np.clip(-y[:t], 0.0, None)
        theta = np.clip(x[1 + t:], 0.0, None)
        info = h.getInfo()
        return (float(y[t]), w, theta, float(x[0]), np.clip(x[1:1 + t], 0.0, None),
                int(info.simplex_iteration_count))
