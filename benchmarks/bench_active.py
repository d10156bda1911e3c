"""Learning curves of active pair selection: Rand index against the number of questions.

For each data set and seed, every strategy of ``psdlearn.active`` asks a simulated oracle
(``LabelOracle``, no mistakes) in rounds of ``BATCH`` pairs; ``ConstrainedClustering``
(NPKL, then kernel k-means) is fitted on the answers and its Rand index against the true
classes is recorded at each checkpoint. The model-free strategies (random, Explore &
Consolidate, Min-Max) are fitted at the checkpoints only; the learned-kernel strategy
needs the model of the previous round and is fitted every round.

Each strategy runs as the loop ``active_learning(..., closure=False)`` would fit it, on
the answers as given; the rows marked ``+closure`` fit on their transitive closure
(``closure=True``), which the neighbourhood strategies' chained answers feed.

Goal (issue 37): a learned-kernel strategy reaches random's Rand index at 400 pairs
with at most 200 queries, on every set. The verdict per set compares means over seeds,
for each learned-kernel row, against random with the same fit (as given / closure).

Run: ``PYTHONPATH=src:. python benchmarks/bench_active.py [n_seeds]``. On a shared machine
the data sets can run in separate processes: ``... bench_active.py N --only iris wine
--raw DIR`` writes the raw curves to ``DIR/<dataset>.json``, and ``... bench_active.py N
--raw DIR --report`` writes the tables from them, with the peer's curves from
``DIR/peer_<dataset>.json`` when present (``/work/venv-peers/bin/python
benchmarks/_active_peer.py DATA.npz N 20 60 100 200 300 400``, ``DATA.npz`` holding the
data set's ``X`` and ``y``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _common import RESULTS, load_note, write_results
from sklearn.metrics import rand_score

import psdlearn as pl
from psdlearn.active import STRATEGIES, LabelOracle

DATASETS = ("iris", "wine", "glass", "chessboard")
CHECKPOINTS = (20, 60, 100, 200, 300, 400)
BATCH = 20
#: row name -> (strategy, fit on the closure of the answers)
VARIANTS = {
    "random": ("random", False),
    "explore_consolidate": ("explore_consolidate", False),
    "min_max": ("min_max", False),
    "uncertainty": ("uncertainty", False),
    "placement": ("placement", False),
    "random+closure": ("random", True),
    "min_max+closure": ("min_max", True),
    "placement+closure": ("placement", True),
}
ORDER = tuple(VARIANTS)
#: the learned-kernel rows checked against the goal, with their random baseline
OURS = {"uncertainty": "random", "placement": "random",
        "placement+closure": "random+closure"}


def _model(k, seed):
    # certificate_tol=None: the optimality certificate is not needed for the clustering
    return pl.ConstrainedClustering(k, estimator=pl.NPKL(certificate_tol=None),
                                    random_state=seed)


def curve(X, y, name, seed):
    """Rand index at each checkpoint for strategy ``name``."""
    k = len(np.unique(y))
    key, closure = VARIANTS[name]
    strategy = STRATEGIES[key]() if key == "random" else STRATEGIES[key](k)
    oracle = LabelOracle(y)
    rng = np.random.RandomState(seed)
    C = pl.PairwiseConstraints(np.empty((0, 2), np.int64), np.empty(0, np.int64), len(X))
    model, out, select_time = None, {}, 0.0
    needs_model = key in ("uncertainty", "placement")
    while C.n_pairs < CHECKPOINTS[-1]:
        t0 = time.perf_counter()
        pairs = strategy.select(X, C, BATCH, model=model, random_state=rng)
        select_time += time.perf_counter() - t0
        signs = [1 if oracle.query(i, j) else -1 for i, j in pairs.tolist()]
        C = pl.PairwiseConstraints(np.vstack([C.pairs, pairs]),
                                   np.concatenate([C.signs, signs]), len(X))
        if needs_model or C.n_pairs in CHECKPOINTS:
            model = _model(k, seed).fit(X, C.closure() if closure else C)
        if C.n_pairs in CHECKPOINTS:
            out[C.n_pairs] = float(rand_score(y, model.labels_))
    return out, select_time


def _run(ds, n_seeds, variants=ORDER, first_seed=0):
    X, y = pl.datasets.load(ds)
    out = {}
    for name in variants:
        for seed in range(first_seed, n_seeds):
            t0 = time.perf_counter()
            rand, select_time = curve(X, y, name, seed)
            out.setdefault(name, []).append(
                {"seed": seed, "rand": rand, "select_s": select_time,
                 "total_s": time.perf_counter() - t0})
            print(ds, name, seed, rand, f"{time.perf_counter() - t0:.1f}s",
                  file=sys.stderr, flush=True)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("n_seeds", type=int, nargs="?", default=10)
    parser.add_argument("--only", nargs="+", default=DATASETS)
    parser.add_argument("--variants", nargs="+", default=ORDER, choices=ORDER,
                        help="with --raw: run these rows only, merged into DIR/<dataset>.json")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="with --raw: run seeds first_seed .. n_seeds - 1 only")
    parser.add_argument("--raw", type=Path)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--load", help="with --report: the load during the runs, as noted")
    parser.add_argument("--note", action="append", default=[],
                        help="with --report: a further note for the results file")
    args = parser.parse_args()
    n_seeds = args.n_seeds
    warnings.filterwarnings("ignore")
    start_load = os.getloadavg()[0]
    raw = {}
    if args.report:
        for ds in DATASETS:
            raw[ds] = {k: [{**r, "rand": {int(c): v for c, v in r["rand"].items()}}
                           for r in runs]
                       for k, runs in json.loads((args.raw / f"{ds}.json").read_text()).items()}
    else:
        for ds in args.only:
            raw[ds] = _run(ds, n_seeds, args.variants, args.first_seed)
            if args.raw:
                args.raw.mkdir(parents=True, exist_ok=True)
                path = args.raw / f"{ds}.json"
                kept = json.loads(path.read_text()) if path.exists() else {}
                path.write_text(json.dumps({**kept, **raw[ds]}))
        if args.raw:
            return
    rows, verdicts, peer_failures = [], [], []
    for ds in DATASETS:
        means = {}
        for name in ORDER:
            runs = raw[ds][name]
            m = {c: float(np.mean([r["rand"][c] for r in runs])) for c in CHECKPOINTS}
            means[name] = m
            row = {"dataset": ds, "strategy": name}
            row.update({f"rand@{c}": m[c] for c in CHECKPOINTS})
            timed = [r["select_s"] for r in runs if r["select_s"] is not None]
            row["select_s"] = float(np.median(timed)) if timed else None
            row["seeds"] = len(runs)
            rows.append(row)
        peer_file = args.raw / f"peer_{ds}.json" if args.raw else None
        if peer_file is not None and peer_file.exists():
            peer = json.loads(peer_file.read_text())
            raw[ds]["peer"] = peer
            row = {"dataset": ds, "strategy": "peer: PCKMeans + its ExploreConsolidate"}
            failed = []
            for c in CHECKPOINTS:
                vals = [v[str(c)] for v in peer.values()]
                ok = [v for v in vals if isinstance(v, float)]
                row[f"rand@{c}"] = float(np.mean(ok)) if ok else None
                if len(ok) < len(vals):
                    failed.append(f"{c}: {len(vals) - len(ok)}/{len(vals)}")
            rows.append(row)
            if failed:
                peer_failures.append(f"{ds} (" + ", ".join(failed) + ")")
        for ours, base in OURS.items():
            target = means[base][400]
            per_seed = [u["rand"][200] >= r["rand"][400] for u, r in
                        zip(raw[ds][ours], raw[ds][base], strict=True)]
            reached = [c for c in CHECKPOINTS if means[ours][c] >= target]
            first = reached[0] if reached else None
            verdicts.append({"dataset": ds, "strategy": ours, "baseline": base,
                             "baseline@400": target, "first_checkpoint_reaching_it": first,
                             "goal_met": first is not None and first <= 200,
                             "seeds_where_it@200_reaches_baseline@400":
                                 f"{sum(per_seed)}/{len(per_seed)}"})
    notes = [
        f"{n_seeds} seeds per data set and strategy; means over seeds. Oracle without "
        f"mistakes; rounds of {BATCH} pairs; ConstrainedClustering(n_clusters = number of "
        "classes, estimator=NPKL(certificate_tol=None)); Rand index against the classes.",
        "select_s: median over seeds of the total time spent choosing pairs (400 pairs).",
        "Goal: a learned-kernel strategy reaches random's Rand index at 400 pairs with at "
        "most 200 queries (same fit: as given, or closure): " + "; ".join(
            f"{v['dataset']} {v['strategy']}: {v['baseline']}@400 = "
            f"{v['baseline@400']:.4f}, reached at "
            f"{v['first_checkpoint_reaching_it'] or 'no checkpoint'} -> "
            f"{'met' if v['goal_met'] else 'NOT met'} (same seed, @200 >= baseline@400 on "
            f"{v['seeds_where_it@200_reaches_baseline@400']} seeds)"
            for v in verdicts),
        "Peer row: active-semi-supervised-clustering 0.0.1, its ExploreConsolidate (with its "
        "ExampleOracle and a budget of q queries, run afresh per budget) and PCKMeans on "
        "the constraints it derives from its neighbourhoods (all pairs within and across "
        "them, more than the q pairs asked), in its own interpreter (_active_peer.py); "
        "means over the seeds where it ran. Failures (seeds): "
        + ("; ".join(peer_failures) or "none")
        + ". Its consolidation raises ValueError once every point is placed.",
        (f"Runs in separate processes beside other jobs: "
         f"1-minute load average {args.load} on {os.cpu_count()} cores; times inflated."
         if args.report else load_note(start_load)),
    ]
    notes += args.note
    columns = ["dataset", "strategy", *[f"rand@{c}" for c in CHECKPOINTS], "select_s",
               "seeds"]
    write_results("active", columns, rows, notes)
    payload = json.loads((RESULTS / "active.json").read_text())
    payload.update({"raw": raw, "verdicts": verdicts, "n_seeds": n_seeds})
    (RESULTS / "active.json").write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
