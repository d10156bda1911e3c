"""NPKL on a Dask LocalCluster against the single-machine solver, and the P-machine model.

Data: 3-d two-Gaussian points (class means +-1, Hu & Kwok 2013 §4.2), drawn chunk by chunk
from per-chunk seeds, so that the workers draw their own chunks at any n (the client
draws only the labels, for 500 must-link and 500 cannot-link pairs); in 3-d the blockwise
kNN search is an exact kd-tree. For each n and solver (BCD square, ADMM pcp), the
single-machine fit runs in a fresh process and the distributed fit on a LocalCluster of
``--workers`` processes (one thread each), both for a fixed number of iterations
(``tol=0``), so that the seconds per iteration compare the same work. ``gamma``: the
single-machine fit's ``"auto"`` (BCD: ``30 gamma_0``, which the blockwise path does not
compute), passed to the distributed fit; ``--gamma`` without a single-machine fit.

Recorded per fit: graph and solve seconds (wall, and CPU seconds of the worker processes
and of the client), seconds per iteration (distributed: median over iterations of the
client's wall time, its compute part and its communication + scheduling part), halo
bytes per iteration, edge cut, and the peak resident memory of every worker process
(``VmHWM`` of ``/proc/<pid>/status``, reset before each fit through ``clear_refs``) beside
its resident memory before the fit. A sampler thread appends the workers' resident memory
every few seconds to ``--memlog`` (JSON lines), so a run stopped early still leaves its
memory record. ``--converge`` adds a single-machine BCD fit to convergence (``tol``
default), whose sweeps give the extrapolated time of a converged distributed fit
(graph + sweeps x seconds per sweep) at every n, ``--sweeps`` passes that count instead.

Then the time per iteration at n = 1e8 on P = 1 .. 64 machines by
:func:`psdlearn.npkl.distributed.timemodel.model_time`, from the numbers measured at the
largest n. Runs: ``--quick`` (1e5), the default (1e6), and ``--n 10000000 --no-single --solvers bcd
--rank 20 --gamma G --sweeps S --name npkl_distributed_1e7`` (G, S from the 1e6 run). A
run can be split into pieces, one solver each: ``--solvers bcd --converge`` writes the
table, ``--solvers admm --merge`` then replaces that solver's rows (and notes) in it and
keeps the others; ``--note`` adds a line on how the piece ran (e.g. exclusive).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from _common import RESULTS, load_note, write_results

import psdlearn as pl
from psdlearn.npkl.distributed.timemodel import Measured, model_time

SOLVERS = {"bcd": dict(solver="bcd", loss="square"), "admm": dict(solver="admm", loss="pcp")}
N_FEATURES = 3
PAIRS = 500  # of each kind
COLUMNS = ["n", "solver", "where", "rank", "workers", "blocks", "iters", "gamma", "graph_s",
           "solve_s", "cpu_s", "s_per_iter", "compute_s_per_iter", "comm_s_per_iter",
           "halo_s_per_iter", "reduce_s_per_iter", "halo_MB_per_iter", "edge_cut",
           "peak_MiB_per_worker", "idle_MiB_per_worker", "client_peak_MiB", "sweeps_to_tol",
           "extrapolated_s", "objective"]


# ------------------------------------------------------------------------------ data
def _chunk_sizes(n, n_chunks):
    return np.diff(np.linspace(0, n, n_chunks + 1).astype(np.int64))


def _chunk_labels(rng, size):
    return rng.integers(0, 2, size)


def _chunk(size, seed):
    """Rows of one chunk: labels first (the client redraws them alone), then the points."""
    rng = np.random.default_rng(seed)
    y = _chunk_labels(rng, size)
    return rng.standard_normal((size, N_FEATURES)) + (1.0 - 2.0 * y)[:, None]


def _labels(n, n_chunks):
    return np.concatenate([_chunk_labels(np.random.default_rng(c), s)
                           for c, s in enumerate(_chunk_sizes(n, n_chunks))])


def _constraints(n, n_chunks):
    return pl.PairwiseConstraints.from_labels(_labels(n, n_chunks), n_must=PAIRS,
                                              n_cannot=PAIRS, random_state=0)


def _dask_data(n, n_chunks):
    import dask
    import dask.array as da

    parts = [da.from_delayed(dask.delayed(_chunk)(int(s), c), shape=(int(s), N_FEATURES),
                             dtype=np.float64)
             for c, s in enumerate(_chunk_sizes(n, n_chunks))]
    return da.concatenate(parts, axis=0)


# --------------------------------------------------------------------------- memory
def _status(pid, field):
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as fh:  # "5": reset VmHWM to VmRSS
        fh.write("5")


def _cpu_s(pid):
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sampler:
    """Resident memory of the worker processes every ``every`` seconds, to a JSON-lines log."""

    def __init__(self, pids, path, every=5.0):
        self.pids, self.path, self.every = pids, path, every
        self.phase = "start"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.every):
            rec = {"time": time.strftime("%H:%M:%S"), "phase": self.phase,
                   "load": os.getloadavg()[0],
                   "rss_MiB": {str(p): round(_status(p, "VmRSS")) for p in self.pids},
                   "client_rss_MiB": round(_status(os.getpid(), "VmRSS"))}
            if self.path:
                with open(self.path, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# ----------------------------------------------------------------------------- fits
def _model(solver, rank, iters, gamma, tol=0.0):
    kw = dict(SOLVERS[solver], rank=rank, max_iter=iters, tol=tol, random_state=0)
    if gamma is not None:
        kw["gamma"] = gamma
    return pl.NPKL(**kw)


def single(n, n_chunks, solver, rank, iters, tol=0.0):
    """The single-machine fit (run in a fresh process, for its peak memory and CPU)."""
    warnings.simplefilter("ignore")
    X = np.concatenate([_chunk(int(s), c) for c, s in enumerate(_chunk_sizes(n, n_chunks))])
    C = _constraints(n, n_chunks)
    _reset_peak(os.getpid())
    c0 = time.process_time()
    m = _model(solver, rank, iters, None, tol).fit(X, C)
    return {"n": n, "solver": solver, "where": "single", "rank": rank, "workers": 1,
            "blocks": 1, "iters": m.n_iter_, "gamma": m.gamma_, "graph_s": m.graph_time_,
            "solve_s": m.fit_time_, "cpu_s": time.process_time() - c0,
            "s_per_iter": statistics.median(np.diff(m.time_history_)),
            "halo_MB_per_iter": 0.0, "edge_cut": 0.0,
            "peak_MiB_per_worker": _status(os.getpid(), "VmHWM"),
            "objective": m.objective_history_[-1]}


def distributed(client, pids, sampler, n, n_chunks, solver, rank, iters, gamma):
    from distributed import wait

    warnings.simplefilter("ignore")
    Xd = _dask_data(n, n_chunks)
    C = _constraints(n, n_chunks)
    idle = {p: _status(p, "VmRSS") for p in pids}
    for p in [*pids, os.getpid()]:
        _reset_peak(p)
    cpu0 = sum(_cpu_s(p) for p in pids) + time.process_time()
    sampler.phase = f"{solver} n={n}: fit"
    model = _model(solver, rank, iters, gamma)
    model.verbose = 1 if n >= 10**6 else 0
    m = model.fit(Xd, C)
    sampler.phase = f"{solver} n={n}: embedding"
    wait(m.embedding_.persist())
    cpu = sum(_cpu_s(p) for p in pids) + time.process_time() - cpu0
    peak = {p: _status(p, "VmHWM") for p in pids}
    hist = m.comm_history_[1:] or m.comm_history_
    med = {k: statistics.median(r[k] for r in hist)
           for k in ("wall_s", "compute_s", "comm_s", "compute_sum_s", "halo_s", "reduce_s")}
    info = m.partition_info_
    row = {"n": n, "solver": solver, "where": "dask", "rank": rank, "workers": len(pids),
           "blocks": info["n_blocks"], "iters": m.n_iter_, "gamma": m.gamma_,
           "graph_s": m.graph_time_, "solve_s": m.fit_time_, "cpu_s": cpu,
           "s_per_iter": med["wall_s"], "compute_s_per_iter": med["compute_s"],
           "comm_s_per_iter": med["comm_s"], "halo_s_per_iter": med["halo_s"],
           "reduce_s_per_iter": med["reduce_s"],
           "halo_MB_per_iter": hist[-1]["halo_bytes"] / 1e6, "edge_cut": info["edge_cut"],
           "peak_MiB_per_worker": max(peak.values()), "idle_MiB_per_worker": max(idle.values()),
           "client_peak_MiB": _status(os.getpid(), "VmHWM"),
           "objective": m.objective_history_[-1]}
    extra = {"compute_sum_s": med["compute_sum_s"], "halo_rows": info["halo_rows"],
             "block_sizes": info["block_sizes"], "peak_per_worker": list(peak.values())}
    del m, model
    return row, extra


def measured_inputs(solver, row, extra, n):
    """The inputs of the time model from one distributed run (see timemodel)."""
    P = row["blocks"]
    slabs = extra["halo_rows"][:P]
    boundaries = 2 * (P - 1)  # slab boundaries seen from both sides
    tasks = {"admm": 2 + 2 * 2 + 1, "bcd": 1 + 2 + 1}[solver]
    return Measured(row_s=extra["compute_sum_s"] / n, boundary_rows=sum(slabs) / boundaries,
                    n0=n, dim=float(N_FEATURES), task_s=row["comm_s_per_iter"] / (tasks * P),
                    tasks_per_block=tasks, exchanges={"admm": 2, "bcd": 1}[solver],
                    rank=row["rank"])


def _kept(name, solvers):
    """Rows and notes of an earlier table that a piece with ``solvers`` does not replace:
    the rows of the other solvers, and the notes not tagged with one of ``solvers``."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return [], []
    with open(path) as fh:
        old = json.load(fh)
    rows = [r for r in old["rows"] if r["solver"] not in solvers]
    notes = [t for t in old["notes"]
             if not (t.startswith("[") and set(t[1:t.index("]")].split(", ")) & set(solvers))]
    return rows, notes


def _in_fresh_process(fn, *args):
    spawn = multiprocessing.get_context("spawn")  # OpenMP forbids fork
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        return pool.submit(fn, *args).result()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--quick", action="store_true", help="n = 1e5 only")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=8, help="row chunks of X")
    ap.add_argument("--rank", type=int, default=50)
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=list(SOLVERS))
    ap.add_argument("--no-single", action="store_true")
    ap.add_argument("--gamma", type=float, default=None,
                    help="BCD gamma without a single-machine fit")
    ap.add_argument("--converge", action="store_true",
                    help="also a single-machine BCD fit to convergence (its sweeps)")
    ap.add_argument("--sweeps", type=int, default=None,
                    help="sweeps to convergence for the extrapolation (else --converge)")
    ap.add_argument("--bcd-iters", type=int, default=20)
    ap.add_argument("--admm-iters", type=int, default=10)
    ap.add_argument("--name", default="npkl_distributed")
    ap.add_argument("--memlog", default=None, help="JSON-lines memory log (default: none)")
    ap.add_argument("--merge", action="store_true",
                    help="replace this run's solvers' rows and notes in the existing table")
    ap.add_argument("--note", default="", help="how this run ran, added to its load note")
    args = ap.parse_args()
    ns = [100_000] if args.quick else args.n
    load0 = os.getloadavg()[0]
    from distributed import Client, LocalCluster

    rows, models = [], []
    tag = f"[{', '.join(args.solvers)}] "  # the notes of this piece, for --merge
    notes = [tag + load_note(load0) + args.note,
             "gamma: the single-machine fit's 'auto' (BCD square: 30 gamma_0), passed to the "
             "distributed fit; given (--gamma) where no single-machine fit ran.",
             "solve_s: the solver call (single: with its set-up, RCM renumbering and split); "
             "cpu_s: CPU seconds of graph + solve (single: the process; dask: the worker "
             "processes and the client, which runs the scheduler); s_per_iter: median seconds "
             "of one iteration (single: from time_history_, distributed: the client's wall "
             "time per iteration from comm_history_); the same number of iterations (tol = 0) "
             "on both sides; the overhead of the distributed solver is the ratio of the "
             "s_per_iter rows.",
             "comm_s_per_iter = client wall time - critical-path kernel time: halo transfers, "
             "the reductions and Dask's scheduling of the tasks (on one machine, the transfers "
             "are local TCP).",
             "halo_s_per_iter: seconds of the incoming transfers of halo pieces, summed over "
             "the workers, from Dask's transfer logs; halo_MB_per_iter: the payload of the halo "
             "exchanges of one iteration (8 r bytes per row); reduce_s_per_iter: the client's "
             "fetch of the reduced scalars once they are ready.",
             "peak_MiB_per_worker: VmHWM of each worker process during the fit (max over the "
             "workers; reset before the fit); idle: its VmRSS before the fit (Python, numpy, "
             "numba, dask and what earlier fits left); client_peak_MiB: the client process, "
             "which also runs the scheduler."]
    sweeps = {n: args.sweeps for n in ns}

    kept_rows, kept_notes = _kept(args.name, args.solvers) if args.merge else ([], [])

    def flush():
        merged = sorted(kept_rows + rows, key=lambda r: (r["n"], list(SOLVERS).index(r["solver"])))
        write_results(args.name, COLUMNS, merged,
                      [t for t in kept_notes if t not in notes] + notes)

    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit=0)
    with Client(cluster) as client:
        pids = list(client.run(os.getpid).values())
        with Sampler(pids, args.memlog) as sampler:
            # compile the kernels in every process first (numba cache) on a small problem
            for solver in args.solvers:
                distributed(client, pids, sampler, 2000, 2, solver, args.rank, 2, 1.0)
            for n in ns:
                if args.converge and not args.no_single and "bcd" in args.solvers:
                    sampler.phase = f"single bcd n={n}: to tol"
                    conv = _in_fresh_process(single, n, args.chunks, "bcd", args.rank, 1000,
                                             1e-5)
                    conv["where"] = "single, to tol=1e-5"
                    sweeps[n] = conv["sweeps_to_tol"] = conv["iters"]
                    rows.append(conv)
                    print(conv, flush=True)
                    flush()
                for solver in args.solvers:
                    iters = args.bcd_iters if solver == "bcd" else args.admm_iters
                    gamma = args.gamma if solver == "bcd" else None
                    if not args.no_single:
                        sampler.phase = f"single {solver} n={n}"
                        rows.append(_in_fresh_process(single, n, args.chunks, solver,
                                                      args.rank, iters))
                        gamma = rows[-1]["gamma"]
                        print(rows[-1], flush=True)
                        flush()
                    row, extra = distributed(client, pids, sampler, n, args.chunks, solver,
                                             args.rank, iters, gamma)
                    if solver == "bcd" and sweeps[n]:
                        row["sweeps_to_tol"] = sweeps[n]
                        row["extrapolated_s"] = row["graph_s"] + sweeps[n] * row["s_per_iter"]
                    rows.append(row)
                    print(row, extra, flush=True)
                    notes.append(f"{tag}n = {n}, {solver}: block sizes {extra['block_sizes']}, "
                                 f"halo rows per block {extra['halo_rows']}, peak MiB per "
                                 f"worker {[round(p) for p in extra['peak_per_worker']]}.")
                    flush()
                    if n == max(ns):
                        models.append((solver, measured_inputs(solver, row, extra, n)))
            sampler.phase = "done"
    cluster.close()
    if any(sweeps.values()):
        notes.append(tag + "sweeps_to_tol: sweeps of the single-machine BCD fit to tol = 1e-5 (the "
                     "default) on the same problem (at 1e7: the count measured at 1e6, passed "
                     "as --sweeps); extrapolated_s = graph_s + sweeps_to_tol x s_per_iter, the "
                     "time of a converged distributed fit if it needs as many sweeps "
                     "(measured: iters sweeps only).")
    for solver, meas in models:
        for P in (1, 2, 4, 8, 16, 32, 64):
            t = model_time(P, 100_000_000, meas)
            rows.append({"n": 100_000_000, "solver": solver, "where": f"model P={P}",
                         "rank": meas.rank, "workers": P, "blocks": P, "iters": 1,
                         "s_per_iter": t["total"], "compute_s_per_iter": t["compute"],
                         "comm_s_per_iter": t["halo"] + t["reduction"] + t["scheduler"],
                         "halo_s_per_iter": t["halo"], "reduce_s_per_iter": t["reduction"],
                         "halo_MB_per_iter": t["halo_bytes"] / 1e6})
        notes.append(f"{tag}model ({solver}) from the run at n = {max(ns)}: {meas}; assumed "
                     "network 10 Gbit/s, latency 100 us; the scheduler share is "
                     "task_s * tasks * P.")
    notes[0] = tag + load_note(load0) + args.note
    flush()


if __name__ == "__main__":
    main()
