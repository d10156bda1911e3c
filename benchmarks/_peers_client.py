"""What the task benchmarks share: the peer process (``_peers.py`` run with the peers'
interpreter), the sets, the seeded pair sampling, the threshold rule of the Euclidean
baseline and the summaries.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

import psdlearn as pl

__all__ = ["DEFAULT_PEERS_PYTHON", "SETS", "PeerProcess", "accuracy_threshold", "flip_signs",
           "limit_threads", "load_set", "log", "mean_sd", "median", "sample_pairs",
           "write_with_runs"]

DEFAULT_PEERS_PYTHON = "/work/venv-peers/bin/python"
_RUNNER = Path(__file__).resolve().parent / "_peers.py"

# Rule fixed before any measurement: every bundled or generated set of
# psdlearn.datasets with at least 100 points (soybean, 47 points, is the one left out),
# loaded with the package's documented scaling; every method gets the same X.
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS")

SETS = ["iris", "wine", "glass", "heart", "sonar", "double-spiral", "chessboard"]


def load_set(name):
    """``(X, y)`` of a benchmark set, as ``psdlearn.datasets.load`` gives it."""
    return pl.datasets.load(name)


class PeerProcess:
    """The peers' runner in a child process, one JSON request per line.

    ``available`` is False (and ``reason`` says why) when the interpreter is missing or the
    runner cannot import the peer packages; a benchmark then reports the peers as skipped.
    """

    def __init__(self, python, threads=1):
        self.python = python
        self.proc = None
        self.reason = None
        self.versions = None
        if not python or not os.path.exists(python):
            self.reason = f"peers' interpreter {python!r} not found"
            return
        env = dict(os.environ, **{v: str(threads) for v in _THREAD_VARS})
        self.proc = subprocess.Popen([python, str(_RUNNER), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)
        try:
            self.versions = self.ask({"op": "versions"})
        except (OSError, ValueError) as exc:
            self.close()
            self.reason = f"peers' runner failed to start with {python}: {exc}"

    @property
    def available(self):
        return self.proc is not None

    def ask(self, request):
        """Send one request, return the answer (a dict)."""
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise ValueError(f"the peers' runner exited (code {self.proc.poll()})")
        return json.loads(line)

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
            self.proc = None


def limit_threads(threads):
    """Limit this process's BLAS, OpenMP and numba thread pools to ``threads``; the peers'
    process gets the same limit through the environment (:class:`PeerProcess`). On a
    machine shared with other jobs, more threads than free cores make the times depend on
    the load more than on the methods."""
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return threadpool_limits(limits=threads)


def sample_pairs(n, m, rng, candidates=None):
    """``m`` distinct unordered pairs drawn uniformly among the pairs of ``candidates``
    (default: all ``n`` points), as an (m, 2) index array, ``i < j``."""
    idx = np.arange(n) if candidates is None else np.sort(np.asarray(candidates))
    iu, ju = np.triu_indices(len(idx), 1)
    pick = rng.choice(len(iu), size=m, replace=False)
    return np.column_stack([idx[iu[pick]], idx[ju[pick]]])


def flip_signs(signs, fraction, rng):
    """Copy of ``signs`` with ``round(fraction * m)`` of them, drawn at random, negated."""
    out = np.array(signs, copy=True)
    k = int(round(fraction * len(out)))
    out[rng.choice(len(out), size=k, replace=False)] *= -1
    return out


def accuracy_threshold(scores, y):
    """Threshold ``t`` maximising the accuracy of ``score >= t`` -> +1 on ``(scores, y)``
    (``y`` in {-1, +1}), among the midpoints of consecutive distinct scores and the two
    ends; the rule metric-learn's ``calibrate_threshold(strategy="accuracy")`` follows."""
    s = np.sort(np.unique(scores))
    cuts = np.concatenate([[s[0] - 1.0], (s[:-1] + s[1:]) / 2.0, [s[-1] + 1.0]])
    acc = [np.mean(np.where(scores >= t, 1, -1) == y) for t in cuts]
    return float(cuts[int(np.argmax(acc))])


def mean_sd(values):
    """``"mean ± sd"`` of the finite values, or ``"-"``."""
    v = [x for x in values if x is not None and np.isfinite(x)]
    if not v:
        return "-"
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return f"{np.mean(v):.1f} ± {sd:.1f}"


def median(values):
    v = [x for x in values if x is not None]
    return float(statistics.median(v)) if v else None


def write_with_runs(write_results, results_dir, name, columns, rows, notes, extra):
    """``_common.write_results`` (markdown + JSON with the environment), then the per-seed
    records and the peers' versions added to the JSON."""
    write_results(name, columns, rows, notes=notes)
    path = Path(results_dir) / f"{name}.json"
    payload = json.loads(path.read_text())
    payload.update(extra)
    path.write_text(json.dumps(payload, indent=1, default=float))


#: what the per-seed JSON keeps beside the tables
RUN_KEYS = ("runs", "run_notes", "psdlearn_version", "peers_versions", "peers_python",
            "seeds", "sets_this_run", "wall_seconds")


def finish(write_results, results_dir, name, columns, rows, notes, extra, no_write):
    """Print the rows (``--no-write``) or write the tables with the per-seed records."""
    if no_write:
        print(json.dumps(rows, indent=1, default=float))
        return
    write_with_runs(write_results, results_dir, name, columns, rows, notes,
                    {key: extra[key] for key in RUN_KEYS})


def close_run(peers, args, runs, sets, path, start_load, t_start):
    """Close the peer process; merge the records of the sets not rerun from ``path``;
    return ``(runs, run_notes, extra)`` for the tables and the JSON."""
    import time

    peer_versions, peer_reason = peers.versions, peers.reason
    peers.close()
    if set(sets) != set(SETS) and path.exists() and not args.no_write:
        old = json.loads(path.read_text())
        runs = [r for r in old.get("runs", []) if r["set"] not in sets] + runs
    run_notes = [
        "Peers ran in " + (f"their own interpreter ({args.peers_python}): " + ", ".join(
            f"{k} {v}" for k, v in peer_versions.items()) if peer_versions else
            f"no interpreter: skipped ({peer_reason})") + ".",
        f"Every method ran with {args.threads} thread(s) (BLAS, OpenMP, numba). "
        f"Shared machine: 1-minute load average {start_load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores; other jobs ran "
        "beside this one, so times are inflated alike for all methods (they are "
        "interleaved per seed) and the ratios are the figures to read.",
    ]
    extra = {"runs": runs, "run_notes": run_notes, "psdlearn_version": pl.__version__,
             "peers_versions": peer_versions, "peers_python": args.peers_python,
             "seeds": args.seeds, "sets_this_run": sets,
             "wall_seconds": time.perf_counter() - t_start}
    return runs, run_notes, extra


def start_run(description, path, write_tables):
    """The start every peer benchmark shares: parse the command line; with
    ``--tables-only`` rebuild the tables from the per-seed records in ``path`` (the JSON)
    and return None; else limit the thread pools, start the peers' process and return
    ``(args, sets, start_load, limits, peers)`` (keep ``limits`` for the whole run)."""
    args = parser(description).parse_args()
    if args.tables_only:
        old = json.loads(Path(path).read_text())
        write_tables(old["runs"], old["run_notes"], old, args.no_write)
        return None
    start_load = os.getloadavg()[0]
    limits = limit_threads(args.threads)
    peers = PeerProcess(args.peers_python, threads=args.threads)
    if not peers.available:
        log(f"peers skipped: {peers.reason}")
    return args, args.sets.split(","), start_load, limits, peers


def parser(description):
    """The command line shared by the peer benchmarks."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--peers-python", default=DEFAULT_PEERS_PYTHON)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1,
                    help="thread pools of every method (BLAS, OpenMP, numba)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--tables-only", action="store_true",
                    help="rebuild the tables from the per-seed records of the JSON, no fit")
    return ap


def log(msg):
    """Progress to stderr (stdout carries the tables)."""
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()
