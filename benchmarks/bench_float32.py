"""NPKL(dtype=np.float32) against float64: time per BCD sweep, final objective, Rand index.

Run: ``python benchmarks/bench_float32.py [--sizes 100000,1000000] [--repeats 5]
[--repeats-large 3] [--sweeps 25] [--seeds 3] [--gauss-accuracy 100000]
[--large-accuracy]``. Writes
``benchmarks/results/float32.{md,json}``.

**Time per sweep.** Two Gaussians in 10-d (``make_two_gaussians``), the kNN Laplacian
(``k = 10``) built once by this process and handed to the workers as an ``.npz`` file,
1000 must-links and 1000 cannot-links from the labels; square loss, ``gamma = 1``, rank 20
and 50, 1 and 2 numba threads. Each measurement is a fresh worker process (BLAS threads 1)
that compiles the kernels on a small fit of the same type, then fits with 5 and with
``sweeps`` BCD sweeps (``tol = 0``, no certificate, no multilevel start: the plain
sweeps) and reports the solver's own wall seconds per sweep of the second fit
(``time_history_``, the exact objective evaluations excluded) and the process-CPU
seconds per sweep from the difference of the two fits; the two types alternate,
``repeats`` times each, and the table gives the medians and their ratios.

**Accuracy.** Fits with the defaults (``gamma="auto"``, certificate, multilevel start where
it applies) in float32 and in float64 from the same seed: the relative gap of the final
objectives (both :meth:`NPKL.objective`, on ``L`` in float64), the certificate's relative
gap of each, the sweeps, and the Rand index and adjusted Rand index of kernel k-means on
the embedding (20 restarts) against the true classes. The six bundled UCI sets with the
papers' protocol (``0.6 n`` must-links and ``0.6 n`` cannot-links, ``seeds`` draws;
hinge and square losses), and 10^5 Gaussians as above (square loss, rank 20 and 50;
``--large-accuracy`` adds 10^6 at rank 20).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import RESULTS, load_note
from sklearn.metrics import adjusted_rand_score, rand_score

import psdlearn as pl
from psdlearn.graph import knn_laplacian
from reproductions.experiments.report import _fmt
from reproductions.experiments.report import write_results as _write

SRC = Path(__file__).resolve().parents[1] / "src"
BUNDLED = ("iris", "wine", "glass", "heart", "sonar", "soybean")
DTYPES = {"float64": np.float64, "float32": np.float32}

WORKER = r"""
import json, sys, time, warnings
import numpy as np, scipy.sparse as sp
import psdlearn as pl
warnings.simplefilter("ignore")
path, rank, sweeps, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dtype = {"float64": np.float64, "float32": np.float32}[dtype]
def fit(L, C, rank, max_iter):
    return pl.NPKL(loss="square", graph="precomputed", rank=rank, gamma=1.0,
                   max_iter=max_iter, tol=0.0, certificate_tol=None, dtype=dtype,
                   random_state=0, solver_options={"multilevel": False}).fit(L, C)
Xw, yw = pl.datasets.make_two_gaussians(300, random_state=0)
fit(pl.graph.knn_laplacian(Xw), pl.PairwiseConstraints.from_labels(yw, random_state=0), 4, 3)
data = np.load(path)
L = sp.csr_matrix((data["Lx"], data["Li"], data["Lp"]), shape=tuple(data["shape"]))
C = pl.PairwiseConstraints(data["pairs"], data["signs"], n_samples=L.shape[0])
cpu = []
for max_iter in (SHORT, sweeps):  # the same set-up and objective evaluations, more sweeps
    c0 = time.process_time()
    model = fit(L, C, rank, max_iter)
    cpu.append(time.process_time() - c0)
print(json.dumps({"s_per_sweep": model.time_history_[-1] / model.n_iter_,
                  "cpu_per_sweep": (cpu[1] - cpu[0]) / (sweeps - SHORT),
                  "objective": float(model.objective()),
                  "dtype": str(model.embedding_.dtype)}))
""".replace("SHORT", "5")


def gaussians(n, seed=0):
    X, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=seed)
    C = pl.PairwiseConstraints.from_labels(y, n_must=1000, n_cannot=1000, random_state=seed)
    return X, y, C


def run_worker(path, rank, sweeps, dtype, threads):
    env = {**os.environ, "PYTHONPATH": str(SRC), "NUMBA_NUM_THREADS": str(threads),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", WORKER, str(path), str(rank), str(sweeps),
                          dtype], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def sweep_times(sizes, repeats, repeats_large, sweeps, tmp):
    rows = []
    for n in sizes:
        X, _, C = gaussians(n)
        t0 = time.perf_counter()
        L = sp.csr_matrix(knn_laplacian(X, n_neighbors=10))
        print(f"n={n}: graph {time.perf_counter() - t0:.1f} s", flush=True)
        path = tmp / f"gauss_{n}.npz"
        np.savez(path, Lx=L.data, Li=L.indices, Lp=L.indptr, shape=np.array(L.shape),
                 pairs=C.pairs, signs=C.signs)
        del X, L
        reps = repeats if n < 10**6 else repeats_large
        for rank in (20, 50):
            for threads in (1, 2):
                per = {name: [] for name in DTYPES}
                cpu = {name: [] for name in DTYPES}
                objective = {}
                for _ in range(reps):
                    for name in DTYPES:
                        res = run_worker(path, rank, sweeps, name, threads)
                        assert res["dtype"] == name
                        per[name].append(res["s_per_sweep"])
                        cpu[name].append(res["cpu_per_sweep"])
                        objective[name] = res["objective"]
                med = {name: statistics.median(v) for name, v in per.items()}
                med_cpu = {name: statistics.median(v) for name, v in cpu.items()}
                rows.append({
                    "n": n, "rank": rank, "threads": threads, "sweeps": sweeps,
                    "float64_s": med["float64"], "float32_s": med["float32"],
                    "speedup": med["float64"] / med["float32"],
                    "float64_cpu": med_cpu["float64"], "float32_cpu": med_cpu["float32"],
                    "cpu_speedup": med_cpu["float64"] / med_cpu["float32"],
                    "spread64": max(per["float64"]) / min(per["float64"]),
                    "spread32": max(per["float32"]) / min(per["float32"]),
                    "objective_gap": abs(objective["float32"] - objective["float64"])
                    / abs(objective["float64"]),
                    "repeats": reps})
                print(rows[-1], flush=True)
    return rows


def _fit(X, C, dtype, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an uncertified fit is reported in the table
        return pl.NPKL(dtype=dtype, **params).fit(X, C)


def compare(X, y, C, label, **params):
    """One float64 / float32 pair of fits: their objectives, certificates and Rand."""
    out = {}
    for name, dtype in DTYPES.items():
        model = _fit(X, C, dtype, **params)
        labels = pl.kernel_kmeans(model.embedding_, n_clusters=len(np.unique(y)),
                                  random_state=0)
        cert = model.certificate_
        out[name] = {"objective": model.objective(), "sweeps": model.n_iter_,
                     "cert_gap": cert.relative_gap if cert is not None else float("nan"),
                     "certified": bool(cert is not None and cert.certified),
                     "rand": rand_score(y, labels), "ari": adjusted_rand_score(y, labels),
                     "solve_s": model.fit_time_}
    f64, f32 = out["float64"], out["float32"]
    return {"data": label,
            "objective_gap": abs(f32["objective"] - f64["objective"]) / abs(f64["objective"]),
            "cert_gap64": f64["cert_gap"], "cert_gap32": f32["cert_gap"],
            "certified64": f64["certified"], "certified32": f32["certified"],
            "sweeps64": f64["sweeps"], "sweeps32": f32["sweeps"],
            "rand64": f64["rand"], "rand32": f32["rand"],
            "ari64": f64["ari"], "ari32": f32["ari"],
            "solve64_s": f64["solve_s"], "solve32_s": f32["solve_s"]}


def _aggregate(rows, label, loss):
    """Seeds of one set and loss: worst objective gap, certified counts, mean Rand."""
    def mean(key):
        return float(np.mean([r[key] for r in rows]))

    return {"data": label, "loss": loss, "seeds": len(rows),
            "objective_gap": max(r["objective_gap"] for r in rows),
            "cert_gap64": max(r["cert_gap64"] for r in rows),
            "cert_gap32": max(r["cert_gap32"] for r in rows),
            "certified64": sum(r["certified64"] for r in rows),
            "certified32": sum(r["certified32"] for r in rows),
            "sweeps64": mean("sweeps64"), "sweeps32": mean("sweeps32"),
            "rand64": mean("rand64"), "rand32": mean("rand32"),
            "ari64": mean("ari64"), "ari32": mean("ari32"),
            "solve64_s": mean("solve64_s"), "solve32_s": mean("solve32_s")}


def accuracy(seeds, large, n_gauss):
    rows = []
    for name in BUNDLED:
        X, y = pl.datasets.load(name)
        for loss in ("hinge", "square"):
            per_seed = []
            for seed in range(seeds):
                C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6,
                                                       random_state=seed)
                per_seed.append(compare(X, y, C, name, loss=loss, random_state=seed))
            rows.append(_aggregate(per_seed, name, loss))
            print(rows[-1], flush=True)
    for n, ranks in [(n_gauss, (20, 50))] + ([(10**6, (20,))] if large else []):
        X, y, C = gaussians(n)
        for rank in ranks:
            res = compare(X, y, C, f"gauss10 {n:.0e}", loss="square", rank=rank,
                          n_neighbors=10, random_state=0)
            rows.append(_aggregate([res], f"gauss10 {n:.0e} rank {rank}", "square"))
            print(rows[-1], flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--repeats-large", type=int, default=3)
    ap.add_argument("--sweeps", type=int, default=25)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--gauss-accuracy", type=int, default=100_000,
                    help="points of the Gaussians of the accuracy table")
    ap.add_argument("--large-accuracy", action="store_true")
    args = ap.parse_args()
    start_load = os.getloadavg()[0]
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory() as tmp:
        speed = sweep_times(sizes, args.repeats, args.repeats_large, args.sweeps, Path(tmp))
    quality = accuracy(args.seeds, args.large_accuracy, args.gauss_accuracy)
    speed_cols = ["n", "rank", "threads", "sweeps", "float64_s", "float32_s", "speedup",
                  "float64_cpu", "float32_cpu", "cpu_speedup", "spread64", "spread32",
                  "objective_gap", "repeats"]
    quality_cols = ["data", "loss", "seeds", "objective_gap", "cert_gap64", "cert_gap32",
                    "certified64", "certified32", "sweeps64", "sweeps32", "rand64",
                    "rand32", "ari64", "ari32", "solve64_s", "solve32_s"]
    notes = [
        "Time per sweep: float64_s / float32_s are the medians of the solver's seconds per "
        "BCD sweep (wall clock, exact objective evaluations excluded) over fresh worker "
        "processes, the two types alternating; speedup = float64_s / float32_s; "
        "float64_cpu / float32_cpu: process-CPU seconds per sweep, the difference of a fit "
        "of `sweeps` sweeps and one of 5 in the same worker (all threads counted: with 2 "
        "threads the wall column is the one that matters); spread = max / min of one type's "
        "wall repeats (the machine's noise); objective_gap = relative difference of the "
        "objectives after the same sweeps from the same start.",
        "Accuracy (second table): fits with the defaults from the same seed; objective_gap "
        "and cert_gap are the worst over the seeds, certified counts the seeds, the other "
        "columns are means. rand / ari: Rand index and adjusted Rand index of kernel "
        "k-means (20 restarts) on the embedding against the true classes.",
        load_note(start_load),
    ]
    _write(RESULTS, "float32", speed_cols, speed, notes,
           title="NPKL dtype=np.float32 against float64",
           extra={"accuracy_columns": quality_cols, "accuracy_rows": quality,
                  "args": vars(args)})
    md = RESULTS / "float32.md"
    table = ["", "## Accuracy of the float32 fits", "",
             "| " + " | ".join(quality_cols) + " |", "|" + "---|" * len(quality_cols)]
    table += ["| " + " | ".join(_fmt(r.get(c)) for c in quality_cols) + " |"
              for r in quality]
    text = md.read_text().splitlines()
    # the second table goes after the first one's notes, before the machine lines
    cut = next(k for k, line in enumerate(text) if line.startswith("Machine:"))
    md.write_text("\n".join(text[:cut] + table + [""] + text[cut:]) + "\n")
    print(md.read_text())


if __name__ == "__main__":
    main()
