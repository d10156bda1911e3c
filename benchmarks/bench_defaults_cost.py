"""Cost of today's defaults against the first release, and the certificate's share at large n.

Run: ``python benchmarks/bench_defaults_cost.py [--seeds S] [--cases ...] [--first REF]
[--before REF] [--versions ...] [--threads 0|1] [--warm] [--cert-n N] [--name NAME]``.
Writes ``benchmarks/results/<NAME>.{md,json}`` (default ``defaults_cost``).

Each version of the package runs in its own process on the same data, through the public
API only: ``first`` (the first release, ``--first``, extracted with ``git archive``),
``before`` (``--before``, the tree before this work) and ``after`` (this checkout). The
processes alternate version by version for every seed, so that a change of load hits all
of them alike; the table gives medians and the ratios to ``first``.

Cases (the defaults of each version; what issue 40, item 6 measured):

- ``gn_mnist``: ``GeneralizedNystroem(n_landmarks=100, random_state=seed)``, fit +
  transform on mnist (70,000 x 784, 100 labels evenly over the classes); accuracy (%) of
  ``LinearSVC(C=1)`` trained on the labelled points, on the others.
- ``gn_digits``: ``GeneralizedNystroem(random_state=seed)`` on scikit-learn's digits
  (1,797 x 64, 10% labelled, the protocol of ``bench_defaults_nystroem.py``); same accuracy.
- ``npkl_a1a``: ``NPKL(loss="hinge", n_neighbors=50, random_state=0)`` on a1a with
  ``PairwiseConstraints.from_labels(y, random_state=seed)``, after one warm-up fit (numba
  compilation); the adjusted Rand index of 2-means on the embedding against the labels.
- ``cert``: ``NPKL(loss="square", rank=20, n_neighbors=10)`` on ``--cert-n`` 10-d two
  Gaussians with 2,000 labelled points (``before`` and ``after`` only): the certificate's
  seconds (``certificate_time_``) against the fit.

``gn_<set>``: the defaults on any set of ``bench_defaults_nystroem.py`` (10% labelled, its
protocol), to check the accuracy of a change of the lambda search against the tree before.

Wall and process-CPU seconds are both recorded: on the shared 2-core machine the CPU time
(the work done, all threads) is inflated much less by other jobs than the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import load_note, write_results

REPO = Path(__file__).resolve().parent.parent
CASES = ("gn_mnist", "gn_digits", "npkl_a1a", "cert")
#: The first release: the last commit of the first wave (before the side-information API of
#: the second).
FIRST_REF = "3db46c3"
#: The tree before this work: main when it was run (the notes give its commit).
BEFORE_REF = "main"
COLUMNS = ["case", "version", "seeds", "wall_s", "cpu_s", "wall_ratio", "cpu_ratio",
           "cpu_warm_s", "warm_ratio", "quality", "quality_name", "same_lambda", "detail"]
#: Environment variables that set one thread per process (``--threads 1``).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")
#: Run every gn_* fit a second time in its process (``--warm``): the time without the
#: imports and numba's start-up that the first fit of a process pays.
WARM = os.environ.get("PSDLEARN_BENCH_WARM", "0") == "1"
ONE_THREAD = False


# ----------------------------------------------------------------------------- workers
def _worker(case, data_path, seed):
    """Run one case on the psdlearn found on ``sys.path``; print a JSON record."""
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score
    from sklearn.svm import LinearSVC

    import psdlearn as pl

    warnings.simplefilter("ignore")
    if case == "warmup":  # fills the numba caches of a freshly extracted tree
        Xw, yw = pl.datasets.make_two_gaussians(200, random_state=0)
        pl.NPKL(loss="hinge", random_state=0).fit(
            Xw, pl.PairwiseConstraints.from_labels(yw, random_state=0))
        yp = np.where(np.arange(200) % 5 == 0, yw, -1)
        pl.GeneralizedNystroem(n_landmarks=20, random_state=0).fit(Xw, yp)
        print(json.dumps({}))
        return
    data = np.load(data_path)
    X, y = data["X"], data["y"]
    rec = {}
    if case.startswith("gn_"):
        yp = data["yp"]
        kw = {"n_landmarks": 100} if case == "gn_mnist" else {}
        for key in ("", "_warm")[:1 + WARM]:  # the same fit again: imports and JIT paid
            t0, c0 = time.perf_counter(), time.process_time()
            model = pl.GeneralizedNystroem(random_state=seed, **kw).fit(X, yp)
            Q = model.transform(X)
            rec["wall" + key + "_s"] = time.perf_counter() - t0
            rec["cpu" + key + "_s"] = time.process_time() - c0
        lab = yp != -1
        clf = LinearSVC(C=1.0).fit(Q[lab], y[lab])
        rec["quality"] = 100.0 * float(np.mean(clf.predict(Q[~lab]) == y[~lab]))
        rec["lambda"] = float(model.lambda_) if model.lambda_ is not None else None
        rec["detail"] = f"lambda {rec['lambda']}"
    elif case == "npkl_a1a":
        warm, wy = pl.datasets.make_two_gaussians(300, random_state=0)
        pl.NPKL(loss="hinge", random_state=0).fit(
            warm, pl.PairwiseConstraints.from_labels(wy, random_state=0))
        C = pl.PairwiseConstraints.from_labels(y, random_state=seed)
        t0, c0 = time.perf_counter(), time.process_time()
        model = pl.NPKL(loss="hinge", n_neighbors=50, random_state=0).fit(X, C)
        rec["wall_s"], rec["cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        labels = KMeans(2, n_init=10, random_state=0).fit_predict(model.embedding_)
        rec["quality"] = float(adjusted_rand_score(y, labels))
        # a deferred certificate is computed here, on first read: its cost, apart
        c0 = time.process_time()
        cert = getattr(model, "certificate_", None)
        rec["certificate_read_cpu_s"] = time.process_time() - c0
        # the transform's neighbourhood: chosen in fit before, on first use after
        c0 = time.process_time()
        k_new = getattr(model, "n_neighbors_transform_", None)
        rec["first_use_cpu_s"] = time.process_time() - c0
        rec["detail"] = (f"rank {model.rank_}, sweeps {model.n_iter_}, certificate "
                         f"{getattr(model, 'certificate_time_', 0.0):.2f} s"
                         + (f", gap {cert.relative_gap:.1e}" if cert is not None else "")
                         + (f", read {rec['certificate_read_cpu_s']:.2f} CPU s"
                            if rec["certificate_read_cpu_s"] > 1e-3 else "")
                         + (f", k' {k_new} on first use {rec['first_use_cpu_s']:.2f} CPU s"
                            if k_new is not None else ""))
    elif case == "cert":
        yp = data["yp"]
        warm, wy = pl.datasets.make_two_gaussians(500, n_features=10, random_state=0)
        pl.NPKL(loss="square", rank=20).fit(warm, wy)
        t0, c0 = time.perf_counter(), time.process_time()
        model = pl.NPKL(loss="square", rank=20, n_neighbors=10).fit(X, yp)
        rec["wall_s"], rec["cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        cert_s = float(model.certificate_time_)
        rec["quality"] = cert_s / rec["wall_s"]
        cert = model.certificate_
        note = getattr(cert, "note", "") if cert is not None else "none"
        rec["detail"] = (f"certificate {cert_s:.2f} s, sweeps {model.n_iter_}"
                         + (f", gap {cert.relative_gap:.1e}" if cert is not None
                            and np.isfinite(cert.relative_gap) else "")
                         + (f", {note}" if note else ""))
    print(json.dumps(rec))


# ----------------------------------------------------------------------------- driver
def short_ref(ref):
    """The short hash of the commit ``ref``."""
    return subprocess.run(["git", "rev-parse", "--short", ref], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout.strip()


def _extract(ref, root):
    """``src`` of the commit ``ref`` under ``root`` (``git archive``)."""
    out = Path(root) / ref
    out.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", "--format=tar", ref, "src"], cwd=REPO,
                             check=True, capture_output=True).stdout
    tar_path = out / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(out, filter="data")
    return out / "src"


def _data(case, tmp, seed, cert_n):
    """Write the data of ``case`` to an ``.npz`` and return its path."""
    import psdlearn as pl
    from reproductions.experiments.nystrom_table1 import labelled_split, load_protocol_set

    path = Path(tmp) / f"{case}_{seed}.npz"
    if case == "gn_mnist":
        X, y = load_protocol_set("mnist")
        np.savez(path, X=X, y=y, yp=labelled_split(y, 100, np.random.default_rng(seed)))
    elif case.startswith("gn_"):  # digits, or a set of bench_defaults_nystroem.py
        from bench_defaults_nystroem import load

        X, y = load(case[3:])
        yp = labelled_split(y, int(round(0.1 * len(y))), np.random.default_rng(seed))
        np.savez(path, X=np.asarray(X, dtype=np.float64), y=y, yp=yp)
    elif case == "npkl_a1a":
        X, y = pl.datasets.load("a1a")
        np.savez(path, X=np.asarray(X.toarray() if hasattr(X, "toarray") else X), y=y)
    else:
        X, y = pl.datasets.make_two_gaussians(cert_n, n_features=10, random_state=seed)
        rng = np.random.default_rng(seed)
        yp = np.full(cert_n, -1)
        lab = rng.choice(cert_n, 2000, replace=False)
        yp[lab] = y[lab]
        np.savez(path, X=X, y=y, yp=yp)
    return path


def _run(src, case, data_path, seed):
    env = {**os.environ, "PYTHONPATH": str(src), "PSDLEARN_BENCH_WARM": str(int(WARM))}
    if ONE_THREAD:
        env.update({k: "1" for k in THREAD_VARIABLES})
    out = subprocess.run([sys.executable, __file__, "--worker", case, str(data_path),
                          str(seed)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--cases", nargs="+", default=list(CASES),
                    help=f"{CASES}, or gn_<set> for a set of bench_defaults_nystroem.py")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first", default=FIRST_REF)
    ap.add_argument("--before", default=BEFORE_REF)
    ap.add_argument("--cert-n", type=int, default=200_000)
    ap.add_argument("--after-src", default=None,
                    help="the 'after' tree (default: this checkout's src), e.g. a copy "
                         "taken before the run, so that edits during it do not leak in")
    ap.add_argument("--name", default="defaults_cost")
    ap.add_argument("--versions", nargs="+", default=["first", "before", "after"],
                    choices=["first", "before", "after"],
                    help="versions to run (the ratios are to the first one given)")
    ap.add_argument("--threads", type=int, choices=[0, 1], default=1,
                    help="1: one BLAS, OpenMP and numba thread per process; 0: the defaults")
    ap.add_argument("--warm", action="store_true",
                    help="gn_* cases: also time a second fit in the same process")
    args = ap.parse_args()
    global ONE_THREAD, WARM
    ONE_THREAD = args.threads == 1
    WARM = WARM or args.warm
    if args.worker:
        case, path, seed = args.worker
        _worker(case, path, int(seed))
        return
    start_load = os.getloadavg()[0]
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"first": _extract(args.first, tmp), "before": _extract(args.before, tmp),
                 "after": Path(args.after_src) if args.after_src else REPO / "src"}
        for v in args.versions:  # numba compilation out of the timed runs
            _run(trees[v], "warmup", "-", 0)
        for case in args.cases:
            versions = [v for v in args.versions if case != "cert" or v != "first"]
            seeds = 1 if case == "cert" else args.seeds
            recs = {v: [] for v in versions}
            for seed in range(seeds):
                path = _data(case, tmp, seed, args.cert_n)
                # rotate the order of the versions from seed to seed
                for v in versions[seed % len(versions):] + versions[:seed % len(versions)]:
                    recs[v].append(_run(trees[v], case, path, seed))
                    print(case, v, seed, recs[v][-1], flush=True)
            base = recs[versions[0]]
            base_wall = statistics.median(r["wall_s"] for r in base)
            base_cpu = statistics.median(r["cpu_s"] for r in base)
            warm = [r["cpu_warm_s"] for r in base if "cpu_warm_s" in r]
            base_warm = statistics.median(warm) if warm else None
            for v in versions:
                wall = statistics.median(r["wall_s"] for r in recs[v])
                cpu = statistics.median(r["cpu_s"] for r in recs[v])
                warm = [r["cpu_warm_s"] for r in recs[v] if "cpu_warm_s" in r]
                warm = statistics.median(warm) if warm else None
                ref = recs["before"] if "before" in recs else base
                same = [r.get("lambda") == b.get("lambda") for r, b in zip(recs[v], ref,
                                                                         strict=True)]
                rows.append({
                    "case": case, "version": v, "seeds": seeds, "wall_s": round(wall, 2),
                    "cpu_s": round(cpu, 2), "wall_ratio": round(wall / base_wall, 2),
                    "cpu_ratio": round(cpu / base_cpu, 2),
                    "cpu_warm_s": None if warm is None else round(warm, 2),
                    "warm_ratio": (None if warm is None or not base_warm
                                   else round(warm / base_warm, 2)),
                    "quality": round(float(np.mean([r["quality"] for r in recs[v]])), 3),
                    "quality_name": ("accuracy %" if case.startswith("gn_") else
                                     {"npkl_a1a": "ARI", "cert": "certificate / fit"}[case]),
                    "same_lambda": (f"{sum(same)}/{len(same)}" if case.startswith("gn_")
                                    else ""),
                    "detail": "; ".join(r["detail"] for r in recs[v])})
    refs = {ref: short_ref(ref) for ref in (args.first, args.before)}
    notes += [
        f"Versions: first = {refs[args.first]} (first release), before = "
        f"{refs[args.before]} ({args.before}), after = this checkout. Ratios are to the "
        "first row of each case (the first release; 'before' for cert and without 'first').",
        ("One BLAS, OpenMP and numba thread per process (" + ", ".join(THREAD_VARIABLES)
         + " = 1)." if ONE_THREAD else "Threads: the libraries' defaults."),
        "cpu_warm_s (gn_* with --warm): a second fit in the same process, without the "
        "imports and numba start-up of the first; same_lambda: seeds whose lambda_ equals "
        "that of 'before' (of the first version without it).",
        "quality: mean over the seeds. gn_*: accuracy (%) of LinearSVC(C=1) on the "
        "unlabelled points; npkl_a1a: adjusted Rand index of 2-means on the embedding; "
        "cert: the certificate's share of the fit's wall time.",
        load_note(start_load)]
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
