"""NPKL on a Dask LocalCluster against the single-machine solver, and the P-machine model.

For each n and solver (BCD square, ADMM pcp; rank 50, 1000 pairs, 3-d two-Gaussian data so
that the blockwise kNN search is an exact kd-tree), the single-machine fit runs in a fresh
process and the distributed fit on a LocalCluster of ``--workers`` processes (one thread
each), both for a fixed number of iterations (``tol=0``), so that the seconds per
iteration compare the same work. Recorded: graph and solve seconds, seconds per iteration
(distributed: median over iterations of the client's wall time, its compute part and its
communication + scheduling part), halo bytes per iteration, edge cut, peak resident memory
per worker (``ru_maxrss``, minus nothing: the idle worker's is given beside it).

Then the time per iteration at n = 1e8 on P = 1 .. 64 machines by
:func:`psdlearn.npkl.distributed.timemodel.model_time`, from the numbers measured at the
largest n. Run: ``python benchmarks/bench_npkl_distributed.py --quick`` (1e5), then the
default (1e6).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from _common import load_note, write_results

import psdlearn as pl
from psdlearn.npkl.distributed.timemodel import Measured, model_time

RANK = 50
SOLVERS = {"bcd": dict(solver="bcd", loss="square"), "admm": dict(solver="admm", loss="pcp")}
COLUMNS = ["n", "solver", "where", "workers", "blocks", "iters", "graph_s", "solve_s",
           "s_per_iter", "compute_s_per_iter", "comm_s_per_iter", "halo_s_per_iter",
           "reduce_s_per_iter", "halo_MB_per_iter",
           "edge_cut", "peak_MiB_per_worker", "idle_MiB_per_worker", "objective"]


def _data(n):
    X, y = pl.datasets.make_two_gaussians(n, n_features=3, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)
    return X, C


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _model(solver, iters):
    return pl.NPKL(**SOLVERS[solver], rank=RANK, max_iter=iters, tol=0.0, random_state=0)


def single(n, solver, iters):
    """The single-machine fit (run in a fresh process, for its peak memory)."""
    warnings.simplefilter("ignore")
    X, C = _data(n)
    m = _model(solver, iters).fit(X, C)
    return {"n": n, "solver": solver, "where": "single", "workers": 1, "blocks": 1,
            "iters": m.n_iter_, "graph_s": m.graph_time_, "solve_s": m.fit_time_,
            "s_per_iter": statistics.median(np.diff(m.time_history_)),
            "compute_s_per_iter": None, "comm_s_per_iter": None, "halo_s_per_iter": None,
            "reduce_s_per_iter": None, "halo_MB_per_iter": 0.0, "edge_cut": 0.0,
            "peak_MiB_per_worker": _peak_mib(), "idle_MiB_per_worker": None,
            "objective": m.objective_history_[-1]}


def distributed(client, n, solver, iters):
    import dask.array as da
    from distributed import wait

    warnings.simplefilter("ignore")
    X, C = _data(n)
    Xd = da.from_array(X, chunks=-(-n // 8))
    idle = client.run(_peak_mib)
    m = _model(solver, iters).fit(Xd, C)
    wait(m.embedding_.persist())
    peak = client.run(_peak_mib)
    hist = m.comm_history_[1:] or m.comm_history_
    med = {k: statistics.median(r[k] for r in hist)
           for k in ("wall_s", "compute_s", "comm_s", "compute_sum_s", "halo_s", "reduce_s")}
    info = m.partition_info_
    row = {"n": n, "solver": solver, "where": "dask", "workers": len(client.nthreads()),
           "blocks": info["n_blocks"], "iters": m.n_iter_, "graph_s": m.graph_time_,
           "solve_s": m.fit_time_, "s_per_iter": med["wall_s"],
           "compute_s_per_iter": med["compute_s"], "comm_s_per_iter": med["comm_s"],
           "halo_s_per_iter": med["halo_s"], "reduce_s_per_iter": med["reduce_s"],
           "halo_MB_per_iter": hist[-1]["halo_bytes"] / 1e6, "edge_cut": info["edge_cut"],
           "peak_MiB_per_worker": max(peak.values()),
           "idle_MiB_per_worker": max(idle.values()), "objective": m.objective_history_[-1]}
    extra = {"compute_sum_s": med["compute_sum_s"], "halo_rows": info["halo_rows"],
             "block_sizes": info["block_sizes"]}
    return row, extra


def measured_inputs(solver, row, extra, n):
    """The inputs of the time model from one distributed run (see timemodel)."""
    P = row["blocks"]
    slabs = extra["halo_rows"][:P]
    boundaries = 2 * (P - 1)  # slab boundaries seen from both sides
    tasks = {"admm": 2 + 2 * 2 + 1, "bcd": 1 + 2 + 1}[solver]
    return Measured(row_s=extra["compute_sum_s"] / n, boundary_rows=sum(slabs) / boundaries,
                    n0=n, dim=3.0, task_s=row["comm_s_per_iter"] / (tasks * P),
                    tasks_per_block=tasks, exchanges={"admm": 2, "bcd": 1}[solver], rank=RANK)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--quick", action="store_true", help="n = 1e5 only")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bcd-iters", type=int, default=20)
    ap.add_argument("--admm-iters", type=int, default=10)
    ap.add_argument("--name", default="npkl_distributed")
    args = ap.parse_args()
    ns = [100_000] if args.quick else args.n
    load0 = os.getloadavg()[0]
    from distributed import Client, LocalCluster

    rows, models = [], []
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit=0)
    with Client(cluster) as client:
        # compile the kernels in every process first (numba cache) on a small problem
        distributed(client, 2000, "bcd", 2)
        distributed(client, 2000, "admm", 2)
        for n in ns:
            for solver in SOLVERS:
                iters = args.bcd_iters if solver == "bcd" else args.admm_iters
                # a fresh process for its own peak memory (spawn: OpenMP forbids fork)
                spawn = multiprocessing.get_context("spawn")
                with ProcessPoolExecutor(1, mp_context=spawn) as pool:
                    rows.append(pool.submit(single, n, solver, iters).result())
                row, extra = distributed(client, n, solver, iters)
                rows.append(row)
                print(rows[-2], rows[-1], flush=True)
                if n == max(ns):
                    models.append((solver, measured_inputs(solver, row, extra, n)))
    cluster.close()
    notes = [load_note(load0),
             "solve_s: the solver call (single: with its set-up, RCM renumbering and split); "
             "s_per_iter: median seconds of one iteration (single: from time_history_, "
             "distributed: the client's wall time per iteration from comm_history_); the same "
             "number of iterations (tol = 0) on both sides; the overhead of the distributed "
             "solver is the ratio of the s_per_iter rows.",
             "comm_s_per_iter = client wall time - critical-path kernel time: halo transfers, "
             "the reductions and Dask's scheduling of the tasks (on one machine, the transfers "
             "are local TCP).",
             "halo_s_per_iter: seconds of the incoming transfers of halo pieces, summed over "
             "the workers, from Dask's transfer logs; reduce_s_per_iter: the client's fetch "
             "of the reduced scalars once they are ready.",
             "peak_MiB_per_worker: ru_maxrss of each worker process (max over workers); the "
             "idle column is the same process before the fit (Python, numpy, numba, dask)."]
    for solver, meas in models:
        for P in (1, 2, 4, 8, 16, 32, 64):
            t = model_time(P, 100_000_000, meas)
            rows.append({"n": 100_000_000, "solver": solver, "where": f"model P={P}",
                         "workers": P, "blocks": P, "iters": 1, "graph_s": None,
                         "solve_s": None, "s_per_iter": t["total"],
                         "compute_s_per_iter": t["compute"],
                         "comm_s_per_iter": t["halo"] + t["reduction"] + t["scheduler"],
                         "halo_s_per_iter": t["halo"], "reduce_s_per_iter": t["reduction"],
                         "halo_MB_per_iter": t["halo_bytes"] / 1e6, "edge_cut": None,
                         "peak_MiB_per_worker": None, "idle_MiB_per_worker": None,
                         "objective": None})
        notes.append(f"model ({solver}) from the run at n = {max(ns)}: {meas}; assumed network "
                     "10 Gbit/s, latency 100 us; the scheduler share is task_s * tasks * P.")
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
