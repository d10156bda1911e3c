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


def reused_results(args, key):
    """``{key(run): results}`` of the reused run's per-seed records (``--reuse-peers``),
    or None."""
    if args.reused is None:
        return None
    return {key(r): r["results"] for r in args.reused["runs"]}


def share_peers(out, peers, request, reused, retime, make):
    """The peers' records of one seed: asked of ``peers`` (``make(name, answer)`` builds
    each record into ``out``), or, with ``reused`` (that seed's old records), copied from
    them; with ``reused`` and ``retime`` the peers also run now, and their fresh records
    are returned (else None)."""
    if reused is not None:
        out.update({name: reused[name] for name in request["methods"] if name in reused})
    if not peers.available or (reused is not None and not retime):
        return None
    fresh = {name: make(name, res) for name, res in peers.ask(request).items()}
    if reused is None:
        out.update(fresh)
        return None
    return fresh


def retime_rows(runs, key_fields, best_peer, score):
    """The check of reused peer times (``--retime-seeds``): per condition, over the seeds
    where the peers ran again, psdlearn's median time over the best peer's median, with
    the reused times and with the times of this run, and whether the peer's scores came
    out the same. ``best_peer(condition)`` names the peer of the main table's ratio,
    ``score(record)`` reads a record's score."""
    rows = []
    conditions = {tuple(r[f] for f in key_fields) for r in runs if r.get("retimed")}
    for cond in sorted(conditions, key=lambda t: (SETS.index(t[0]) if t[0] in SETS else 99,
                                                  *t[1:])):
        cell = [r for r in runs
                if r.get("retimed") and tuple(r[f] for f in key_fields) == cond]
        best = best_peer(cond)
        if best is None:
            continue
        ours = median([r["results"]["psdlearn"]["time"] for r in cell])
        old = median([r["results"][best]["time"] for r in cell])
        new = median([r["retimed"][best]["time"] for r in cell])
        same = sum(score(r["results"][best]) == score(r["retimed"][best]) for r in cell)
        rows.append({**dict(zip(key_fields, cond, strict=True)), "peer": best,
                     "seeds": len(cell), "t psdlearn": ours, "t peer reused": old,
                     "t peer this run": new, "ratio reused": round(ours / old, 2),
                     "ratio this run": round(ours / new, 2),
                     "peer scores equal": f"{same}/{len(cell)}"})
    return rows


def write_retime(write_results, name, check, what, no_write, run_notes):
    """Write (or, with ``no_write``, print) the :func:`retime_rows` table ``check`` as
    ``<name>_retime``; ``what`` names the time and the score compared."""
    if check and no_write:
        print(json.dumps(check, indent=1, default=float))
    elif check:
        write_results(f"{name}_retime", list(check[0]), check, notes=[
            "The check of the reused peer times (--reuse-peers): on the seeds where the "
            "peers ran again in this run, interleaved with psdlearn, psdlearn's median "
            f"{what[0]} over that of the best peer of the main table, with the peer's "
            "reused times and with its times of this run; `peer scores equal`: seeds "
            f"where its {what[1]} came out the same in both runs.",
            *run_notes])


def close_run(peers, args, runs, sets, path, start_load, t_start):
    """Close the peer process; merge the records of the sets not rerun from ``path``;
    return ``(runs, run_notes, extra)`` for the tables and the JSON."""
    import time

    peer_versions, peer_reason = peers.versions, peers.reason
    peers.close()
    if set(sets) != set(SETS) and path.exists() and not args.no_write:
        old = json.loads(path.read_text())
        runs = [r for r in old.get("runs", []) if r["set"] not in sets] + runs
    loads = [r["load"] for r in runs if "load" in r]
    run_notes = [
        "Peers ran in " + (f"their own interpreter ({args.peers_python}): " + ", ".join(
            f"{k} {v}" for k, v in peer_versions.items()) if peer_versions else
            f"no interpreter: skipped ({peer_reason})") + ".",
        f"Every method ran with {args.threads} thread(s) (BLAS, OpenMP, numba). "
        f"Shared machine: 1-minute load average {start_load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end"
        + (f" (at the seeds: {min(loads):.1f} to {max(loads):.1f}, median "
           f"{statistics.median(loads):.1f})" if loads else "")
        + f", on {os.cpu_count()} cores; other jobs ran "
        "beside this one, so times are inflated alike for all methods (they are "
        "interleaved per seed) and the ratios are the figures to read.",
    ]
    if args.reused is not None:
        run_notes.append(
            f"--reuse-peers: the peers' per-seed records (scores and times) are those of "
            f"the run of {args.reused['date']}, reused as the peers and their inputs are "
            f"unchanged; psdlearn and the no-fit baselines ran in this run. That run's "
            f"notes: {' '.join(args.reused['run_notes'][1:])} Its times and ours come "
            f"from two runs at different loads: on seeds 0-{args.retime_seeds - 1} the "
            "peers ran again in this run, interleaved with psdlearn, and the `_retime` "
            "table compares the ratios with their reused and their new times.")
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
    args.reused = None
    if args.reuse_peers:
        old = json.loads(Path(path).read_text())
        args.reused = {"runs": old["runs"], "date": old["environment"]["date"],
                       "run_notes": old["run_notes"]}
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
    ap.add_argument("--reuse-peers", action="store_true",
                    help="take the peers' per-seed records (scores and times) from the JSON "
                         "already there, whose inputs and peers are unchanged, and rerun "
                         "psdlearn and the no-fit baselines only")
    ap.add_argument("--retime-seeds", type=int, default=2,
                    help="with --reuse-peers: on seeds 0 .. N-1 the peers also run again, "
                         "interleaved with psdlearn as usual, to check the time ratios "
                         "against the reused times (<name>_retime.md)")
    return ap


def log(msg):
    """Progress to stderr (stdout carries the tables)."""
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()
