r"""Block coordinate descent over a Dask cluster: block Gauss-Seidel (Hu & Kwok 2015 Alg. 1).

Rows and order. The constrained samples (those in some pair, about ``2 m``) are coupled
by random pairs, so they live together on one block, the *coordinator* (block ``P``);
the unconstrained samples stay in their slabs ``0 .. P - 1``. A sweep updates

1. every constrained row, in a fresh random order, on the coordinator (the dual QPs /
   closed forms of :func:`psdlearn.npkl._kernels.sweep_constrained`), given the
   current rows of its neighbours in the slabs (halo);
2. then the unconstrained rows colour by colour: the slabs of colour 0 in parallel, each
   in its own row order (:func:`psdlearn.npkl._kernels.sweep_unconstrained`, eq. 13 with
   the over-relaxation ``omega``), then colour 1, and so on. Before each phase a block
   receives the newest rows of its halo (the coordinator's of this sweep, the other
   colours' of this or the last sweep).

The hinge loss runs the stages of ``NPKL(hinge_smoothing=...)`` (:func:`solve_bcd_stages`,
as :func:`psdlearn.npkl.bcd.fit_bcd`): the coordinator's rows solve the Huber-smoothed
or exact per-row dual QPs of :mod:`psdlearn.npkl._qp` through the same kernel.

Slabs of one colour share no edge of ``L`` (:func:`psdlearn.npkl.distributed.layout.block_colors`),
so updating them in parallel is the same as updating them one after the other: a sweep
is a Gauss-Seidel pass over all rows in one fixed order, every row update is the exact
minimizer of its (strictly convex) row problem, and the objective never increases, as
in the single-machine solver. Its fixed points are the same: the points where every row
is optimal given the others.
"""

from __future__ import annotations

import operator
import time

import numpy as np

from psdlearn._solver import SolverResult
from psdlearn.npkl import _kernels as K
from psdlearn.npkl import bcd as _bcd
from psdlearn.npkl.bcd import VANISHED, _project_rows
from psdlearn.npkl.losses import get_loss
from psdlearn.npkl.problem import loss_values

from ._runtime import CommRecord
from .layout import stack

__all__ = ["solve_bcd_distributed", "solve_bcd_stages"]


def _init_state(static, E0, radius, coordinator):
    E = E0  # the tasks never write into their inputs: no copy unless projected
    if np.isfinite(radius):
        E = E0.copy()
        _project_rows(E, radius)
    alpha = np.zeros(len(static["Ti"])) if coordinator else None
    return E, alpha, None


def _take_rows(state, index):
    return state[0][index]


def _sweep_free(static, state, radius, omega, *pieces):
    t0 = time.perf_counter()
    s = static
    E = stack(state[0], *pieces)
    acc = np.zeros(3)
    change = K.sweep_unconstrained(np.arange(s["n"], dtype=np.int64), E, s["Lp"], s["Li"],
                                   s["Lx"], s["diag"], radius, acc, omega)
    return E[:s["n"]], None, (change, acc[0], acc[2], time.perf_counter() - t0)


def _sweep_constrained(static, state, loss, gamma, param, omega, seed, *pieces):
    t0 = time.perf_counter()
    s = static
    E = stack(state[0], *pieces)
    alpha = state[1].copy()
    acc = np.zeros(3)
    order = np.random.default_rng(seed).permutation(s["n"]).astype(np.int64)
    change = K.sweep_constrained(order, E, s["Lp"], s["Li"], s["Lx"], s["diag"], s["Tp"],
                                 s["Ti"], s["Tt"], loss, gamma, param, alpha, K.SQUARE_AUTO,
                                 acc, omega)
    return E[:s["n"]], alpha, (change, acc[0], acc[2], time.perf_counter() - t0)


def _objective_terms(static, state, loss, gamma, *pieces):
    """The block's share of objective (10): its rows of ``tr(E^T L E)`` and its pairs."""
    s = static
    E = stack(state[0], *pieces)
    smooth = K._laplacian_rows(E, s["Lp"], s["Li"], s["Lx"], 0, s["n"])
    if len(s["Ti"]) == 0:
        return smooth
    rows = np.repeat(np.arange(s["n"]), np.diff(s["Tp"]))
    z = s["Tt"] * np.einsum("ij,ij->i", E[rows], E[s["Ti"]])
    # every unordered pair is stored in both orders on the coordinator
    return smooth + 0.5 * gamma * float(np.sum(loss_values(z, loss)))


def solve_bcd_distributed(rt, static, sizes, send, colors, start, *, rank, loss, gamma, b,
                          seed, omega=1.0, smoothing=0.0, max_iter=1000, tol=1e-5,
                          refresh=None, callback=None):
    """Minimize objective (10) by the block Gauss-Seidel sweeps of the module docstring.

    Parameters
    ----------
    rt : Runtime
    static, sizes, send
        Blocks of the BCD layout (slabs ``0 .. P - 1`` with their unconstrained rows, then
        the coordinator) and their halo plan.
    colors : list of lists
        Colouring of the slabs: the update order of the unconstrained phase.
    start : list of futures
        Starting rows of every block (projected onto the ball for the linear loss). The
        list is emptied once the states hold them.
    rank : int
    loss : {"hinge", "squared_hinge", "square", "linear"}
    gamma, b : float
    seed : int
        Seeds the order of the constrained rows in each sweep.
    omega : float, default=1.0
        Over-relaxation of the row updates (see :func:`psdlearn.npkl.bcd.solve_bcd`).
    smoothing : float, default=0.0
        Hinge loss only: ``mu > 0`` minimizes the Huber-smoothed hinge ``h_mu`` instead
        (the per-row dual QPs of :mod:`psdlearn.npkl._qp` on the coordinator either way);
        ``objective_history`` still reports the hinge objective (10), as in
        :func:`psdlearn.npkl.bcd.solve_bcd`.
    max_iter, tol
        As in :func:`psdlearn.npkl.bcd.solve_bcd`.
    refresh : int, optional
        Sweeps between exact evaluations of the objective (a halo exchange and a
        reduction; default :data:`psdlearn.npkl.bcd.REFRESH`); in between, the exact
        per-row changes are summed.
    callback : callable, optional
        ``callback(sweep, None, objective)``; returning True stops the sweeps there
        (``interrupted=True``).

    Returns
    -------
    SolverResult
        As that of :func:`psdlearn.npkl.bcd.solve_bcd`, with ``embedding`` a list of
        futures (``E`` of each block), and ``info["comm_history"]`` (the communication
        record of every sweep) and ``info["colors"]``.
    """
    B = len(static)
    P = B - 1
    code, param = K.LOSS_CODES[loss], float(b)
    if code == K.HINGE and smoothing > 0:
        code, param = K.SMOOTH_HINGE, float(smoothing)
    radius = float(b) if get_loss(loss).bounded else np.inf
    refresh = _bcd.REFRESH if refresh is None else int(refresh)
    rng = np.random.default_rng(seed)
    state = [rt.submit(q, _init_state, static[q], start[q], radius, q == P) for q in range(B)]
    start.clear()  # the states hold the starting rows: the workers free them after a sweep
    n = sum(rt.gather([rt.submit(q, operator.itemgetter("n"), static[q]) for q in range(B)]))
    halo_rows = sum(sum(v.values()) for v in sizes)

    def halo(q):
        return [rt.submit(c, _take_rows, state[c], send[(c, q)])
                for c in sorted(sizes[q]) if sizes[q][c]]

    def objective():
        return sum(rt.gather([rt.submit(q, _objective_terms, static[q], state[q], loss,
                                        float(gamma), *halo(q)) for q in range(B)]))

    obj = objective()
    history, times, comm = [obj], [0.0], []
    start = time.perf_counter()
    converged = stop = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        t0, epoch = time.perf_counter(), time.time()
        state[P] = rt.submit(P, _sweep_constrained, static[P], state[P], code, float(gamma),
                             param, float(omega), int(rng.integers(0, 2**63 - 1)), *halo(P))
        phases = [[P]]
        for color in colors:
            new = {q: rt.submit(q, _sweep_free, static[q], state[q], radius, float(omega),
                                *halo(q)) for q in color}
            for q, f in new.items():
                state[q] = f
            phases.append(color)
        stats = rt.gather([rt.submit(q, operator.itemgetter(2), state[q]) for q in range(B)])
        reduce_s = rt.fetch_s
        change = sum(s[0] for s in stats)
        norm_sq = sum(s[2] for s in stats)
        converged = change < tol * tol * norm_sq or norm_sq <= VANISHED * n
        if n_iter % refresh == 0 or converged or n_iter == max_iter:
            obj = objective()
        else:
            obj += sum(s[1] for s in stats)
        history.append(obj)
        times.append(time.perf_counter() - start)
        comm.append(CommRecord(
            iteration=n_iter, halo_rows=halo_rows, halo_bytes=halo_rows * rank * 8,
            reduce_bytes=8 * 4 * B, wall_s=time.perf_counter() - t0, reduce_s=reduce_s,
            start=epoch, stop=time.time(),
            compute_s=sum(max(stats[q][3] for q in ph) for ph in phases),
            compute_sum_s=sum(s[3] for s in stats)).as_dict())
        stop = callback is not None and callback(n_iter, None, obj) is True
        if converged or stop:
            break
    embedding = [rt.submit(q, operator.itemgetter(0), state[q]) for q in range(B)]
    return SolverResult(embedding=embedding, objective_history=history, time_history=times,
                        n_iter=n_iter, converged=bool(converged),
                        interrupted=bool(stop and not converged),
                        info={"comm_history": comm, "colors": colors})


def solve_bcd_stages(rt, static, sizes, send, colors, start, *, loss, hinge_smoothing, tol,
                     max_iter, callback=None, **kwargs):
    """The stages of ``NPKL(hinge_smoothing=...)`` by :func:`solve_bcd_distributed`.

    As :func:`psdlearn.npkl.bcd.fit_bcd`: the stages of
    :func:`psdlearn.npkl.bcd.smoothing_schedule` (one exact stage for the losses other
    than the hinge), each from the previous one's rows, the smoothed ones stopping at
    ``SMOOTHING_TOL_FACTOR * tol``, each with up to ``max_iter`` sweeps. ``kwargs`` are
    those of :func:`solve_bcd_distributed`.

    Returns
    -------
    SolverResult
        The stages' histories joined (a stage starts where the previous one ended; the
        ``iteration`` of the communication records counts the sweeps of all stages),
        ``n_iter`` their sweeps, ``converged`` that of the last stage, and
        ``info["smoothing_stages"]`` (``(mu, sweeps)`` per stage).
    """
    history, times, comm, stages = [], [], [], []
    for mu in _bcd.smoothing_schedule(loss, hinge_smoothing):
        done = sum(n for _, n in stages)
        res = solve_bcd_distributed(
            rt, static, sizes, send, colors, start, loss=loss, smoothing=mu,
            tol=tol * _bcd.SMOOTHING_TOL_FACTOR if mu > 0 else tol, max_iter=max_iter,
            callback=None if callback is None else
            (lambda it, e, obj, done=done: callback(done + it, e, obj)), **kwargs)
        offset = times[-1] if times else 0.0
        history += res.objective_history[1 if history else 0:]
        times += [offset + t for t in res.time_history[1 if times else 0:]]
        comm += [dict(rec, iteration=done + rec["iteration"])
                 for rec in res.info["comm_history"]]
        stages.append((mu, res.n_iter))
        start = list(res.embedding)
        if res.interrupted:
            break
    return SolverResult(embedding=res.embedding, objective_history=history,
                        time_history=times, n_iter=sum(n for _, n in stages),
                        converged=res.converged, interrupted=res.interrupted,
                        info={"comm_history": comm, "colors": res.info["colors"],
                              "smoothing_stages": stages})
