"""The passes of a BCD sweep and the ADMM half steps in calls of bounded work, for a
prompt Ctrl-C.

A numba kernel does not see SIGINT until it returns, and one pass over the rows of a graph
of 10^6 points takes seconds. :class:`BlockedPass` runs the passes of
:func:`psdlearn.npkl._kernels.sweep_constrained` and
:func:`~psdlearn.npkl._kernels.sweep_unconstrained` (serial) or
:func:`~psdlearn.npkl._kernels.sweep_unconstrained_split` (independent parts in parallel,
then the separator) as a series of calls of about :data:`CALL_WORK` multiply-adds each
(hundredths of a second), so that Python regains control between them. The row updates are
the same, in the same order within every part: a Gauss-Seidel pass cut into consecutive
slices is the same pass, and the parts of a split share no edge, so advancing all of them
by a slice at a time changes nothing either. Only the sum of the returned ``change`` is
regrouped; the slices depend on the problem alone, so the fit stays deterministic.

:class:`BlockedHalfStep` does the same for the half steps of the ADMM solver
(:mod:`psdlearn.npkl._admm_kernels`), whose rows are independent (each reads the other
factor only): consecutive row ranges of about :data:`psdlearn._linalg.PARALLEL_MIN_WORK`
multiply-adds per call, each range cut into chunks of equal work run in parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from psdlearn._linalg import PARALLEL_MIN_WORK
from psdlearn.npkl._admm_kernels import _update_rows
from psdlearn.npkl._kernels import FASTMATH, sweep_unconstrained

__all__ = ["CALL_WORK", "BlockedHalfStep", "BlockedPass"]

#: Multiply-adds of one call (per thread): about 0.03 s on one core (the passes are bound by
#: memory, about 10^8 a second), so a Ctrl-C acts within a fraction of a second even on
#: a loaded machine.
CALL_WORK = 4e6


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _sweep_part_slices(U, lo, hi, E, Lp, Li, Lx, diag, radius, accs, omega):
    """``sweep_unconstrained`` of ``U[lo[k]:hi[k]]`` for every part ``k``, in parallel."""
    changes = np.zeros(lo.shape[0])
    for k in prange(lo.shape[0]):
        changes[k] = sweep_unconstrained(U[lo[k]:hi[k]], E, Lp, Li, Lx, diag, radius,
                                         accs[k], omega)
    return changes.sum()


def _rows_per_call(work_per_row):
    return max(64, int(CALL_WORK / max(work_per_row, 1.0)))


class BlockedPass:
    """The passes of each sweep, in calls of about :data:`CALL_WORK` multiply-adds.

    Parameters
    ----------
    free : ndarray of shape (n_u,), int64
        The unconstrained rows, in the serial pass's order.
    split : tuple (order, bounds) or None
        The parts of the parallel pass (:func:`psdlearn.npkl.bcd.parallel_split`), None for
        the serial one.
    Lp, Tp : ndarray of shape (n + 1,)
        Row pointers of ``L`` and of the constraint adjacency: the work of a row update is
        about ``r (|L_i| + |T(i)|) + r^2``.
    rank : int
    """

    def __init__(self, free, split, Lp, Tp, rank):
        self.free, self.split = free, split
        n = len(Lp) - 1
        n_c = max(n - len(free), 1)
        r = int(rank)
        self.free_rows = _rows_per_call(r * Lp[-1] / max(n, 1))
        self.constrained_rows = _rows_per_call(r * (Lp[-1] / max(n, 1) + Tp[-1] / n_c) + r * r)

    @staticmethod
    def _serial(kernel, rows, step, *args):
        change = 0.0
        for start in range(0, len(rows), step):
            change += kernel(rows[start:start + step], *args)
        return change

    def constrained(self, kernel, order, *args):
        """``kernel(order, *args)`` (the Gauss-Seidel pass of the constrained rows, which
        returns its change) as calls over consecutive slices of ``order``."""
        return self._serial(kernel, order, self.constrained_rows, *args)

    def unconstrained(self, E, Lp, Li, Lx, diag, radius, accs, omega):
        """The pass of :func:`sweep_unconstrained` (serial: ``accs`` of shape (3,)) or of
        :func:`sweep_unconstrained_split` (``accs`` of shape (n_parts + 1, 3)); returns
        the change."""
        args = (E, Lp, Li, Lx, diag, radius)
        step = self.free_rows
        if self.split is None:
            return self._serial(sweep_unconstrained, self.free, step, *args, accs, omega)
        U, bounds = self.split
        lo, end = bounds[:-2].copy(), bounds[1:-1]
        change = 0.0
        while np.any(lo < end):
            hi = np.minimum(lo + step, end)
            change += _sweep_part_slices(U, lo, hi, *args, accs, omega)
            lo = hi
        return change + self._serial(sweep_unconstrained, U[bounds[-2]:bounds[-1]], step,
                                     *args, accs[-1], omega)


#: Chunks of an ADMM call (one call: about ``PARALLEL_MIN_WORK`` multiply-adds, a tenth
#: of a second on one core): enough for the threads to share rows of uneven work.
_CHUNKS_PER_CALL = 16


@njit(cache=True, parallel=True)
def _half_step_chunks(bounds, Lp, Li, Lx, Tp, Ti, Tt, S, own, lam, lam_sign, rho, gamma, X,
                      finish, kmax):
    """The rows ``bounds[k]:bounds[k + 1]`` of an ADMM half step for every ``k``, in
    parallel; their five sums, added in chunk order."""
    m = bounds.shape[0] - 1
    sums = np.zeros((m, 5))
    for b in prange(m):
        d2, x2, p2, sm, f = _update_rows(bounds[b], bounds[b + 1], Lp, Li, Lx, Tp, Ti, Tt,
                                         S, own, lam, lam_sign, rho, gamma, X, finish, kmax)
        sums[b, 0] = d2
        sums[b, 1] = x2
        sums[b, 2] = p2
        sums[b, 3] = sm
        sums[b, 4] = f
    total = np.zeros(5)
    for b in range(m):
        total += sums[b]
    return total


class BlockedHalfStep:
    """An ADMM half step (:func:`psdlearn.npkl._admm_kernels.half_step`) in calls of about
    :data:`psdlearn._linalg.PARALLEL_MIN_WORK` multiply-adds.

    Row ``i`` costs about ``r (|L_i| + |T(i)|) + r |T(i)|^2 + |T(i)|^3 / 3`` (the graph
    product, the right-hand side and the Woodbury solve of
    :func:`psdlearn._linalg.smw_row_solve`); a half step of less than ``PARALLEL_MIN_WORK``
    in all is one serial call, as before.

    Parameters
    ----------
    Lp, Tp : ndarray of shape (n + 1,)
        Row pointers of ``L`` and of the ordered pair set.
    rank : int
    """

    def __init__(self, Lp, Tp, rank):
        n = len(Lp) - 1
        r = float(rank)
        k = np.diff(Tp).astype(np.float64)
        cum = np.cumsum(r * (np.diff(Lp) + k) + r * k * k + k ** 3 / 3.0 + r)
        total = float(cum[-1]) if n else 0.0
        self.n = n
        self.kmax = max(1, int(k.max())) if n else 1
        self.calls = None  # serial, one call
        if total < PARALLEL_MIN_WORK:
            return
        chunk = PARALLEL_MIN_WORK / _CHUNKS_PER_CALL
        ends = np.searchsorted(cum, np.arange(1, int(total // chunk) + 1) * chunk) + 1
        edges = np.unique(np.concatenate([[0], np.minimum(ends, n), [n]]))
        before = np.concatenate([[0.0], cum])[edges]
        self.calls, first = [], 0
        for c in range(1, len(edges)):  # consecutive chunks, a call's work <= the bound
            if c - 1 > first and before[c] - before[first] > PARALLEL_MIN_WORK:
                self.calls.append(edges[first:c].copy())
                first = c - 1
        self.calls.append(edges[first:].copy())

    def __call__(self, Lp, Li, Lx, Tp, Ti, Tt, S, own, lam, lam_sign, rho, gamma, X, finish):
        """The arguments and the five sums of :func:`~psdlearn.npkl._admm_kernels.half_step`."""
        if self.calls is None:
            return _update_rows(0, self.n, Lp, Li, Lx, Tp, Ti, Tt, S, own, lam, lam_sign,
                                rho, gamma, X, finish, self.kmax)
        total = np.zeros(5)
        for bounds in self.calls:
            total += _half_step_chunks(bounds, Lp, Li, Lx, Tp, Ti, Tt, S, own, lam, lam_sign,
                                       rho, gamma, X, finish, self.kmax)
        return tuple(float(v) for v in total)
