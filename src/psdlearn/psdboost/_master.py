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

Row generation. Most triplets end with a margin above ``rho`` (``w_r = 0``, ``xi_r = 0``;
at least ``1 / C`` rows carry dual weight, as ``sum w = 1`` and ``w <= C``). The HiGHS
model therefore holds a subset ``R`` of the triplet rows (with their slack columns):
first the ``2 / C`` smallest margins of the first column; after each solve the margins
of all triplets at the current ``X`` are checked and the violated ones
(``sum_i a_ri theta_i < rho``) are added and the LP re-solved, until none is. The
restricted LP is a relaxation of (P1) whose optimum is then feasible for (P1), so the two
optima coincide: the value returned is that of (P1) over all triplets, and ``w``
(zero outside ``R``) is optimal for its dual (D1).

HiGHS variables: ``rho`` first, then ``theta`` and ``xi`` columns in order of addition;
row 0 is the trace, row ``1 + k`` the margin of triplet ``R[k]``. A new base is one more
column (the basis stays primal feasible: warm primal simplex); a new row is dual
feasible for the old basis (the row's slack enters the basis). HiGHS reports, for a
maximization, ``c = A^T y + z`` with ``y <= 0`` on active ``>=`` rows: hence
``w = -y`` on the margin rows and ``pi = y_0``.
"""

from __future__ import annotations

import math

import highspy
import numpy as np

from psdlearn._interrupt import deferred_interrupt

__all__ = ["RestrictedMaster"]

#: A triplet outside the model is violated when its margin is below ``rho`` by more than
#: this multiple of the largest column coefficient (HiGHS's own feasibility tolerance
#: is 1e-7 absolute).
_ROW_TOL = 1e-9
#: HiGHS ``simplex_strategy`` values.
_DUAL_SIMPLEX, _PRIMAL_SIMPLEX = 1, 4


class RestrictedMaster:
    """Live HiGHS model of (P1) for ``t`` triplets and slack price ``C``.

    Parameters
    ----------
    n_triplets : int
    C : float
        Requires ``C * n_triplets >= 1`` (checked by the estimator).

    Attributes
    ----------
    coefficients : ndarray of shape (t, n_columns)
        ``a_ri`` of every triplet (in the model or not) for every column.
    rows : list of int
        Triplets whose margin row is in the HiGHS model.
    """

    def __init__(self, n_triplets, C):
        self.t = int(n_triplets)
        self.C = float(C)
        # The core class, not ``highspy.Highs``: the wrapper's constructor registers its
        # callbacks through a HiGHS call that prints the banner to stdout before any option
        # can be set. Here the log is switched off before anything else is done.
        h = highspy._Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("log_to_console", False)
        # The primal simplex keeps the previous basis after a column is added; HiGHS's
        # presolve would discard it.
        h.setOptionValue("presolve", "off")
        h.setOptionValue("simplex_strategy", _PRIMAL_SIMPLEX)
        inf = highspy.kHighsInf
        h.addRows(1, np.ones(1), np.ones(1), 0, np.zeros(1, np.int32),
                  np.empty(0, np.int32), np.empty(0))
        h.addCols(1, np.ones(1), np.full(1, -inf), np.full(1, inf), 0,
                  np.zeros(1, np.int32), np.empty(0, np.int32), np.empty(0))
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        # Ctrl-C stops the simplex between two iterations (HiGHS's user interrupt,
        # polled through this callback); _run raises it once HiGHS has returned
        self._interrupt = None
        h.setCallback(self._on_callback, None)
        h.startCallback(highspy.cb.HighsCallbackType.kCallbackSimplexInterrupt)
        self.h = h
        self.coefficients = np.empty((self.t, 0))
        self.rows = []
        self._theta_cols = np.empty(0, np.int64)
        self._xi_cols = np.empty(0, np.int64)
        # Margins, rho and row duals of the last solve, for dropping rows.
        self._last = None

    @property
    def n_columns(self):
        """Number of ``theta`` columns (bases) in the model."""
        return self.coefficients.shape[1]

    def add_columns(self, coefficients):
        """Append columns ``theta`` with margin coefficients ``a`` of shape (t, m)."""
        a = np.atleast_2d(np.asarray(coefficients, dtype=np.float64).T).T
        m = a.shape[1]
        self.coefficients = np.hstack([self.coefficients, a])
        n_rows = 1 + len(self.rows)
        values = np.vstack([np.ones((1, m)), a[self.rows]]).T.ravel()
        index = np.tile(np.arange(n_rows, dtype=np.int32), m)
        starts = (np.arange(m) * n_rows).astype(np.int32)
        first = self.h.getNumCol()
        self.h.addCols(m, np.zeros(m), np.zeros(m), np.full(m, highspy.kHighsInf),
                       m * n_rows, starts, index, values)
        self._theta_cols = np.r_[self._theta_cols, np.arange(first, first + m)]

    def _add_rows(self, triplets):
        """Put the margin rows of ``triplets`` (with their slack columns) in the model."""
        k = len(triplets)
        M = self.n_columns
        first_row, first_col = self.h.getNumRow(), self.h.getNumCol()
        # Row k: -rho + sum_i a_ri theta_i >= 0 (its slack column comes next).
        index = np.column_stack([np.zeros(k, np.int64),
                                 np.broadcast_to(self._theta_cols, (k, M))]).ravel()
        values = np.column_stack([-np.ones(k), self.coefficients[triplets]]).ravel()
        starts = (np.arange(k) * (M + 1)).astype(np.int32)
        self.h.addRows(k, np.zeros(k), np.full(k, highspy.kHighsInf), k * (M + 1), starts,
                       index.astype(np.int32), values)
        self.h.addCols(k, np.full(k, -self.C), np.zeros(k), np.full(k, highspy.kHighsInf),
                       k, np.arange(k, dtype=np.int32),
                       np.arange(first_row, first_row + k, dtype=np.int32), np.ones(k))
        self._xi_cols = np.r_[self._xi_cols, np.arange(first_col, first_col + k)]
        self.rows.extend(int(r) for r in triplets)

    def _delete_cols(self, cols):
        """Delete HiGHS columns ``cols`` and renumber the ones after them (as HiGHS does)."""
        gone = np.sort(np.asarray(cols, dtype=np.int64))
        self.h.deleteCols(len(gone), gone.astype(np.int32))
        self._theta_cols = self._theta_cols - np.searchsorted(gone, self._theta_cols)
        self._xi_cols = self._xi_cols - np.searchsorted(gone, self._xi_cols)

    def delete_columns(self, positions):
        """Remove the ``theta`` columns at ``positions`` (0-based among the thetas)."""
        keep = np.ones(self.n_columns, dtype=bool)
        keep[np.asarray(positions, dtype=np.int64)] = False
        gone = self._theta_cols[~keep]
        self.coefficients = self.coefficients[:, keep]
        self._theta_cols = self._theta_cols[keep]
        self._delete_cols(gone)

    def _drop_rows(self, margins, rho, w_model):
        """Take out rows far from binding once the model holds too many of them.

        Rows of the first iterations, violated by a poor ``X``, stay non-binding later and
        only slow the simplex down. When the model holds more than twice ``keep`` rows
        (``keep`` = twice the larger of ``1 / C`` and the rows with ``w_r > 0``), the rows
        with ``w_r = 0`` beyond the ``keep`` smallest margins leave; a later violation
        brings a row back, so the optimum is unchanged.
        """
        rows = np.asarray(self.rows)
        keep = 2 * max(math.ceil(1.0 / self.C), int(np.count_nonzero(w_model > 0)))
        if len(rows) <= 2 * keep:
            return
        order = np.argsort(margins[rows], kind="stable")
        drop = np.zeros(len(rows), dtype=bool)
        drop[order[keep:]] = True
        drop &= (w_model == 0) & (margins[rows] > rho)
        if not drop.any():
            return
        positions = np.flatnonzero(drop)
        self.h.deleteRows(len(positions), (1 + positions).astype(np.int32))
        gone = self._xi_cols[drop]
        self._xi_cols = self._xi_cols[~drop]
        self._delete_cols(gone)
        self.rows = rows[~drop].tolist()

    def slack_columns(self):
        """Positions of the ``theta`` columns at zero whose dual constraint is not binding
        (reduced cost below ``-tol``): the ones the master can drop without moving."""
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)[self._theta_cols]
        z = np.asarray(sol.col_dual)[self._theta_cols]
        return np.flatnonzero((x <= 0) & (z < -1e-9 * max(1.0, np.abs(z).max())))

    def _on_callback(self, callback_type, message, data_out, data_in, user_data):
        """HiGHS's simplex-interrupt callback: stop when a Ctrl-C is pending."""
        if self._interrupt is not None and self._interrupt.pending and data_in is not None:
            data_in.user_interrupt = True

    def _run(self):
        """:meth:`_solve_lp` with Ctrl-C stopping the simplex (``KeyboardInterrupt`` once
        HiGHS has returned)."""
        with deferred_interrupt() as self._interrupt:
            return self._solve_lp()

    def _solve_lp(self):
        """Optimize from the current basis; return the simplex iterations.

        Near a zero optimum HiGHS can end its cleanup with small dual infeasibilities and
        report "Unknown" (met on the nearest-neighbour triplets of the heart data): a second
        run from the basis it reached, then a run from scratch with the dual simplex,
        recover.

        Raises
        ------
        RuntimeError
            If HiGHS still does not report an optimal solution.
        """
        h = self.h
        optimal = highspy.HighsModelStatus.kOptimal

        def retry():  # not optimal, and not stopped by a Ctrl-C
            return h.getModelStatus() != optimal and not self._interrupt.pending

        h.run()
        iterations = int(h.getInfo().simplex_iteration_count)
        if retry():
            h.run()
            iterations += int(h.getInfo().simplex_iteration_count)
        if retry():
            h.clearSolver()
            h.setOptionValue("simplex_strategy", _DUAL_SIMPLEX)
            h.run()
            iterations += int(h.getInfo().simplex_iteration_count)
            h.setOptionValue("simplex_strategy", _PRIMAL_SIMPLEX)
        status = h.getModelStatus()
        if retry():
            raise RuntimeError(f"HiGHS did not solve the restricted master: "
                               f"{h.modelStatusToString(status)}.")
        return iterations

    def solve(self):
        """Re-optimize over all triplets; return ``pi, w, theta, rho, xi, simplex_iterations``.

        ``w`` and ``xi`` have shape (t,) and are zero for the triplets outside the model.

        Raises
        ------
        RuntimeError
            If HiGHS does not report an optimal solution.
        """
        h = self.h
        if self.rows and self._last is not None:
            self._drop_rows(*self._last)
        if not self.rows:
            # The smallest initial margins; at least 1 / C rows keep the LP bounded.
            need = min(self.t, 2 * math.ceil(1.0 / self.C - 1e-9))
            self._add_rows(np.argsort(self.coefficients.mean(axis=1), kind="stable")[:need])
        iterations = 0
        while True:
            iterations += self._run()
            x = np.asarray(h.getSolution().col_value)
            theta = np.clip(x[self._theta_cols], 0.0, None)
            rho = float(x[0])
            margins = self.coefficients @ theta
            tol = _ROW_TOL * max(1.0, float(np.abs(self.coefficients).max()))
            outside = np.ones(self.t, dtype=bool)
            outside[self.rows] = False
            violated = np.flatnonzero(outside & (margins < rho - tol))
            if len(violated) == 0:
                break
            self._add_rows(violated)
        sol = h.getSolution()
        y = np.asarray(sol.row_dual)
        w = np.zeros(self.t)
        w[self.rows] = np.clip(-y[1:], 0.0, None)
        xi = np.zeros(self.t)
        xi[self.rows] = np.clip(x[self._xi_cols], 0.0, None)
        self._last = (margins, rho, -y[1:])
        return float(y[0]), w, theta, rho, xi, iterations
