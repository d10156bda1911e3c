r"""ADMM for the pcp and square NPKL objectives, row-parallel over blocks (Hu & Kwok 2013).

The same iteration as :func:`psdlearn.npkl.admm.solve_admm`: the V-step and the U-step
(13) are separable over rows, so block ``q`` updates its own rows with the compiled row
update of :mod:`psdlearn.npkl._admm_kernels`, given the rows of the fixed factor that
its rows of ``L`` and its constraints touch. Per iteration:

1. halo exchange of ``U`` (the rows other blocks need), V-step on every block;
2. halo exchange of the new ``V``, U-step and multiplier step on every block;
3. global reduction of five sums: ``||V_k - V_{k-1}||^2``, ``||V_k||^2``,
   ``||V_k - U_k||^2``, ``tr(V^T L V)`` and ``sum_T (v_i . v_j - t_ij)^2``, whence the
   exact residuals (14), the exact objective at ``V`` and the penalty schedule (15).

Only the summation order differs from the single-machine solver, so the iterates agree
to rounding whatever the number of blocks.
"""

from __future__ import annotations

import operator
import time

import numpy as np

from psdlearn._solver import SolverResult
from psdlearn.npkl import _kernels as K
from psdlearn.npkl._admm_kernels import _update_rows
from psdlearn.npkl.admm import end_of_iteration

from ._runtime import CommRecord
from .layout import stack

__all__ = ["solve_admm_distributed"]


def _init_state(V0):
    return V0, V0.copy(), np.zeros_like(V0), None


def _take_factor(state, which, index):
    return state[which][index]


def _half_step(static, state, rho, gamma, v_step, *pieces):
    """One half step on the block's rows; returns the new state with its sums and time."""
    t0 = time.perf_counter()
    V, U, lam = state[:3]
    s = static
    if v_step:
        S, X, mult = stack(U, *pieces), V.copy(), lam
    else:
        S, X, mult = stack(V, *pieces), U.copy(), lam.copy()
    sums = _update_rows(0, s["n"], s["Lp"], s["Li"], s["Lx"], s["Tp"], s["Ti"], s["Tt"], S, S,
                        mult, -1.0 if v_step else 1.0, rho, gamma, X, not v_step, s["kmax"])
    sums = (*sums, time.perf_counter() - t0)
    # the U-step carries the V-step's sums: one reduction per iteration
    return (X, U, lam, sums) if v_step else (V, X, mult, (state[3], sums))


def _objective_terms(static, E, *pieces):
    """``tr(E_q^T (L E)_q)`` and ``sum_{T_q} (e_i . e_j - t_ij)^2`` over the block's rows."""
    s = static
    Ex = stack(E, *pieces)
    # row by row (the compiled kernel): an (nnz, r) gather would be ~2 k times E's size
    smooth = K._laplacian_rows(Ex, s["Lp"], s["Li"], s["Lx"], 0, s["n"])
    t_rows = np.repeat(np.arange(s["n"]), np.diff(s["Tp"]))
    z = np.einsum("ij,ij->i", Ex[t_rows], Ex[s["Ti"]]) - s["Tt"]
    return float(smooth), float(z @ z)


def _halo(rt, sizes, send, states, which, q):
    return [rt.submit(c, _take_factor, states[c], which, send[(c, q)])
            for c in sorted(sizes[q]) if sizes[q][c]]


def solve_admm_distributed(rt, static, sizes, send, start, *, rank, gamma, rho=100.0,
                           max_iter=500, tol=1e-4, adaptive_rho=True, callback=None):
    """Minimize the pcp / square objective by ADMM with the rows split over blocks.

    Parameters
    ----------
    rt : Runtime
    static, sizes, send
        The blocks and their halo plan, from :func:`psdlearn.npkl.distributed._build.make_blocks`.
    start : list of futures
        The starting rows ``V0_b`` of each slab: ``V = U = V0`` at the start,
        ``Lambda = 0``. The list is emptied once the states hold them.
    rank : int
    gamma : float
    rho, max_iter, tol, adaptive_rho, callback
        As in :func:`psdlearn.npkl.admm.solve_admm` (the callback gets ``(k, None,
        objective)``: no block's rows are on the client; returning ``True`` stops the
        iterations there, ``interrupted=True``).

    Returns
    -------
    SolverResult
        As that of :func:`psdlearn.npkl.admm.solve_admm`, with ``embedding`` a list of
        futures (``V`` of each block), no ``U`` and ``multipliers`` (they stay on the
        workers), and ``info["comm_history"]``, the communication record of every
        iteration.
    """
    B = len(static)
    state = [rt.submit(q, _init_state, start[q]) for q in range(B)]
    start.clear()  # the states hold the starting rows: the workers free them after step 1
    halo_rows = sum(sum(v.values()) for v in sizes)

    def objective(states):
        terms = rt.gather([rt.submit(q, _objective_terms, static[q],
                                     rt.submit(q, operator.itemgetter(0), states[q]),
                                     *_halo(rt, sizes, send, states, 0, q)) for q in range(B)])
        return sum(t[0] for t in terms) + 0.5 * gamma * sum(t[1] for t in terms)

    history = [objective(state)]
    times, comm = [0.0], []
    primal_hist, dual_hist, rho_hist = [], [], []
    start = time.perf_counter()
    converged = done = False
    k = 0
    for k in range(1, max_iter + 1):
        t0, epoch = time.perf_counter(), time.time()
        half = [rt.submit(q, _half_step, static[q], state[q], rho, gamma, True,
                          *_halo(rt, sizes, send, state, 1, q)) for q in range(B)]
        state = [rt.submit(q, _half_step, static[q], half[q], rho, gamma, False,
                           *_halo(rt, sizes, send, half, 0, q)) for q in range(B)]
        stats = rt.gather([rt.submit(q, operator.itemgetter(3), state[q]) for q in range(B)])
        v_stats, u_stats = [s[0] for s in stats], [s[1] for s in stats]
        change = sum(s[0] for s in v_stats)
        size = sum(s[1] for s in v_stats)
        primal = float(np.sqrt(sum(s[2] for s in u_stats)))
        dual = rho * float(np.sqrt(change))
        smooth, fit = sum(s[3] for s in u_stats), sum(s[4] for s in u_stats)
        rho_hist.append(rho)
        primal_hist.append(primal)
        dual_hist.append(dual)
        history.append(smooth + 0.5 * gamma * fit)
        times.append(time.perf_counter() - start)
        comm.append(CommRecord(
            iteration=k, halo_rows=2 * halo_rows, halo_bytes=2 * halo_rows * rank * 8,
            reduce_bytes=8 * 12 * B, wall_s=time.perf_counter() - t0, reduce_s=rt.fetch_s,
            start=epoch, stop=time.time(),
            compute_s=max(s[5] for s in v_stats) + max(s[5] for s in u_stats),
            compute_sum_s=sum(s[5] for s in v_stats + u_stats)).as_dict())
        stop = callback is not None and callback(k, None, history[-1]) is True
        converged, done, rho = end_of_iteration(primal, dual, rho, size, tol, adaptive_rho,
                                                stop)
        if done:
            break
    embedding = [rt.submit(q, operator.itemgetter(0), state[q]) for q in range(B)]
    return SolverResult(embedding=embedding, objective_history=history, time_history=times,
                        n_iter=k if max_iter > 0 else 0, converged=converged,
                        interrupted=done and not converged,
                        info={"primal_residual_history": primal_hist,
                              "dual_residual_history": dual_hist, "rho_history": rho_hist,
                              "comm_history": comm})
