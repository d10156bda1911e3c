"""NPKL's ``rank="auto"`` when the side information is labels: the pair-count rule against
the label rule (issue 36, item 5).

Run: ``python benchmarks/bench_npkl_rank_auto.py [--sets iris,wine] [--seeds 10]``.
Writes ``benchmarks/results/npkl_rank_auto.{md,json}``; ``--sets`` runs those sets only
and merges them into the JSON already there, then rewrites the table from all of it. To
split a run between processes: ``--sets A,B --records /tmp/part1.json`` in each, then
``--merge /tmp/part1.json /tmp/part2.json``.

The two rules (``r`` the largest integer with ``r (r + 1) / 2 <= m``, at most ``n``):

- ``pairs`` (the rule before): ``m`` = every pair the labels imply, ``l (l - 1) / 2`` for
  ``l`` labelled points (Hu & Kwok 2015 section IV-A count the given pairs);
- ``labels`` (proposed): ``m = (l - c) + c (c - 1) / 2`` for ``c`` classes among the
  labelled points, the size of the smallest set of pairs that implies the same labels (a
  spanning tree of must-links in each class and one cannot-link between each two
  classes).

Protocol, per set, fraction of labelled points and seed ``s`` (0-9): ``round(f n)`` points
drawn at random (``numpy.random.default_rng(s)``, at least two) keep their label, the others
get ``-1``; ``NPKL(rank=r, random_state=s)`` with every other parameter at its default
(hinge loss, BCD, ``gamma="auto"``) is fitted with ``fit(X, y_partial)`` for the ``r`` of
each rule; kernel k-means (``psdlearn.kernel_kmeans``, the number of classes, 20 restarts,
``random_state=s``) runs on ``embedding_``, and the score is ``sklearn.metrics.rand_score``
against the true labels of all ``n`` points. Fit time is the wall time of ``fit``
(``time.perf_counter``); the ratio is the median over seeds of ``pairs / labels`` time,
both measured in the same run. Sets: the small sets of ``psdlearn.datasets.load``
(bundled and generated); fractions 0.1 and 0.3 on all, 1.0 (full labels) on the sets of at
most 180 points (a full-label fit of the pair rule on heart took about 4 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import sklearn
from sklearn.metrics import rand_score

import psdlearn as pl
from psdlearn.npkl.problem import auto_rank

RESULTS = Path(__file__).resolve().parent / "results"
NAME = "npkl_rank_auto"
SETS = ("iris", "wine", "glass", "heart", "sonar", "soybean", "chessboard", "double-spiral")
FRACTIONS = (0.1, 0.3, 1.0)
FULL_LABELS_MAX_N = 180


def rank_pairs(n_lab, n_cls, n):
    return min(auto_rank(n_lab * (n_lab - 1) // 2), n)


def rank_labels(n_lab, n_cls, n):
    return min(auto_rank((n_lab - n_cls) + n_cls * (n_cls - 1) // 2), n)


RULES = {"pairs": rank_pairs, "labels": rank_labels}


def partial_labels(y, fraction, seed):
    rng = np.random.default_rng(seed)
    k = max(2, round(fraction * len(y)))
    keep = rng.choice(len(y), size=k, replace=False)
    out = np.full_like(y, -1)
    out[keep] = y[keep]
    return out


def run_cell(X, y, fraction, seed):
    y_part = partial_labels(y, fraction, seed)
    labelled = y_part[y_part >= 0]
    n_lab, n_cls, n = len(labelled), len(np.unique(labelled)), len(y)
    rows = []
    for rule, fn in RULES.items():
        r = fn(n_lab, n_cls, n)
        model = pl.NPKL(rank=r, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            model.fit(X, y_part)
            seconds = time.perf_counter() - t0
        labels = pl.kernel_kmeans(model.embedding_, len(np.unique(y)), random_state=seed)
        cert = model.certificate_
        rows.append({"rule": rule, "fraction": fraction, "seed": seed, "n_labelled": n_lab,
                     "n_classes_labelled": n_cls, "rank": r, "rand": 100 * rand_score(y, labels),
                     "seconds": seconds, "n_iter": int(model.n_iter_),
                     "relative_gap": None if cert is None else float(cert.relative_gap),
                     "certified": None if cert is None else bool(cert.certified)})
    return rows


def environment():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__,
            "psdlearn": getattr(pl, "__version__", "unknown"), "cpu": cpu,
            "cores": os.cpu_count(), "platform": platform.platform(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def summarize(records):
    """One row per (set, fraction): mean Rand of each rule, paired difference and its
    standard error, ranks, median fit times and their ratio."""
    rows = []
    keys = sorted({(r["set"], r["fraction"]) for r in records},
                  key=lambda k: (SETS.index(k[0]) if k[0] in SETS else 99, k[1]))
    for name, frac in keys:
        cell = [r for r in records if r["set"] == name and r["fraction"] == frac]
        by = {rule: sorted((r for r in cell if r["rule"] == rule), key=lambda r: r["seed"])
              for rule in RULES}
        old, new = by["pairs"], by["labels"]
        diff = np.array([b["rand"] - a["rand"] for a, b in zip(old, new, strict=True)])
        se = float(np.std(diff, ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else 0.0
        ratio = statistics.median(a["seconds"] / b["seconds"]
                                  for a, b in zip(old, new, strict=True))
        verdict = ("within noise" if abs(diff.mean()) <= 2 * se
                   else "labels better" if diff.mean() > 0 else "labels worse")
        rows.append({
            "set": name, "fraction": frac, "seeds": len(diff),
            "rank pairs": f"{statistics.median(r['rank'] for r in old):g}",
            "rank labels": f"{statistics.median(r['rank'] for r in new):g}",
            "Rand pairs": f"{np.mean([r['rand'] for r in old]):.2f}",
            "Rand labels": f"{np.mean([r['rand'] for r in new]):.2f}",
            "difference (labels - pairs)": f"{diff.mean():+.2f} ± {se:.2f}",
            "verdict": verdict,
            "fit s pairs": f"{statistics.median(r['seconds'] for r in old):.2f}",
            "fit s labels": f"{statistics.median(r['seconds'] for r in new):.2f}",
            "time ratio pairs / labels": f"{ratio:.2f}",
            "certified pairs / labels": (f"{sum(bool(r['certified']) for r in old)}/"
                                         f"{sum(bool(r['certified']) for r in new)}"),
        })
    return rows


def write(records, env, notes, extra_notes=()):
    """The JSON (records, summary, environment) and the markdown table; ``extra_notes``
    (the verdict, written by hand into the JSON) are kept across reruns."""
    RESULTS.mkdir(exist_ok=True)
    rows = summarize(records)
    notes = list(notes) + list(extra_notes)
    (RESULTS / f"{NAME}.json").write_text(json.dumps(
        {"environment": env, "records": records, "summary": rows, "notes": notes,
         "extra_notes": list(extra_notes)}, indent=1))
    head = list(rows[0]) if rows else []
    lines = ["# NPKL rank=\"auto\" from labels: pair rule against label rule\n",
             "Written by `benchmarks/bench_npkl_rank_auto.py` (protocol in its docstring). "
             "Rand index of kernel k-means on the learned embedding, in percent, mean over "
             "the seeds; the difference is paired per seed, ± its standard error; "
             "\"within noise\" means within two standard errors.\n",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(r[h]) for h in head) + " |" for r in rows]
    lines += ["", "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items()) + ".", ""]
    lines += [f"- {note}" for note in notes]
    (RESULTS / f"{NAME}.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--records", default=None,
                        help="write the records here after every cell (JSON list) instead "
                             "of writing the results; to split a run between processes")
    parser.add_argument("--merge", nargs="*", default=None,
                        help="record files of --records runs: write the results from them")
    args = parser.parse_args(argv)
    path = RESULTS / f"{NAME}.json"
    old = json.loads(path.read_text()) if path.exists() else {"records": []}
    if args.merge is not None:
        records = [r for f in args.merge for r in json.loads(Path(f).read_text())["records"]]
        loads = [json.loads(Path(f).read_text())["load"] for f in args.merge]
        merged = {r["set"] for r in records}
        records = [r for r in old["records"] if r["set"] not in merged] + records
        notes = [f"Run split between {len(loads)} processes; 1-minute load average at the "
                 "start / end of each: " + ", ".join(f"{a:.1f} / {b:.1f}" for a, b in loads)
                 + f" on {os.cpu_count()} cores (the machine was shared with other jobs: "
                 "absolute times are inflated, the ratios are paired within one process)."]
        write(records, environment(), notes, old.get("extra_notes", []))
        return
    sets = [s for s in args.sets.split(",") if s]
    records = [] if args.records else [r for r in old["records"] if r["set"] not in sets]
    start_load = os.getloadavg()[0]
    for name in sets:
        X, y = pl.datasets.load(name)
        for frac in FRACTIONS:
            if frac == 1.0 and len(y) > FULL_LABELS_MAX_N:
                continue
            for seed in range(args.seeds):
                for row in run_cell(X, y, frac, seed):
                    records.append({"set": name, **row})
            print(f"{name} {frac}: done", flush=True)
            if args.records:
                Path(args.records).write_text(json.dumps(
                    {"records": records, "load": [start_load, os.getloadavg()[0]]}))
    if args.records:
        return
    notes = [f"1-minute load average at the start / end of the run: {start_load:.1f} / "
             f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (the machine was shared: "
             "absolute times are inflated, the ratios are paired within one run)."]
    write(records, environment(), notes, old.get("extra_notes", []))


if __name__ == "__main__":
    main()
