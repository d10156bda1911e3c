"""Pair verification on points unseen in training: ``pl.PairsClassifier`` against
metric-learn's ITML and MMC pairs classifiers and the Euclidean distance.

Run (from the repository root, in psdlearn's environment)::

    PYTHONPATH=src:. python benchmarks/bench_pair_verification.py \
        --peers-python /work/venv-peers/bin/python [--sets iris,wine] [--seeds 10] \
        [--reuse-peers [--retime-seeds 2]]

Writes ``benchmarks/results/pair_verification.{md,json}``. The peers run in their own
interpreter (``_peers.py``; metric-learn 0.7 needs scikit-learn < 1.8); without it they are
reported as skipped. ``--sets`` runs those sets only and merges them into the results
already there. ``--reuse-peers`` takes the peers' per-seed records from the JSON already
there (same sets, pairs and seeds, peers unchanged) and reruns psdlearn and the Euclidean
baseline; the peers then run again on the first ``--retime-seeds`` seeds only, and
``pair_verification_retime.{md,json}`` compares the time ratios with the peers' reused and
new times.

Protocol, fixed before measuring:

- Sets: those of the constrained-clustering benchmark (every bundled or generated set of
  ``psdlearn.datasets`` with at least 100 points), as ``load`` gives them.
- Per seed ``s`` in 0-9: the points are split 70/30, stratified by class
  (``train_test_split(..., random_state=s)``). ``m`` in {100, 400} training pairs are drawn
  uniformly among the pairs of training points and labelled +1 (same class) or -1; a
  random quarter of them is held out as the validation pairs, the rest are the fit pairs.
  The test pairs are all pairs of test points: no learner sees a test point.
- psdlearn: ``PairsClassifier(NPKL(certificate_tol=None, tol=1e-3, random_state=s),
  preprocessor=X_train)``: the default learner with a seed (its semi-supervised set is
  every training point).
- metric-learn: ``ITML`` and ``MMC`` with ``preprocessor=X_train, random_state=s`` and their
  defaults. Euclidean: the score is minus the distance, no fit.
- Every method is fitted on the fit pairs, its threshold set by
  ``calibrate_threshold(val_pairs, val_y, strategy="accuracy")`` (for the Euclidean
  distance the same rule, written here), and it is scored on the test pairs given as an
  ``(m, 2, d)`` array: ROC AUC of ``decision_function`` and accuracy of ``predict``, in
  percent.
- Time: wall seconds of ``fit``, median over the seeds, every method limited to one thread
  (``--threads``; the machine is shared); psdlearn and the peers alternate in order from
  seed to seed. One untimed fit of psdlearn first compiles its numba kernels. Since
  2026-11-29 every timed fit follows an untimed warm-up fit of the same method on 20 of
  the fit pairs, in the process that times it (``_warmup.py``: after the other process's
  long fit a fit ran about twice as long; before, psdlearn paid it on the odd seeds).
- Goal (issue 36): psdlearn's mean AUC and mean accuracy each at least the best method's
  minus 1 point, and its fit time at most that of the best learning peer (ITML or MMC, by
  AUC; the Euclidean distance learns nothing and takes no time).
"""

from __future__ import annotations

import os
import time

import numpy as np
from _common import RESULTS, write_results
from _peers_client import (
    SETS,
    accuracy_threshold,
    close_run,
    finish,
    load_set,
    log,
    mean_sd,
    median,
    retime_rows,
    reused_results,
    sample_pairs,
    share_peers,
    start_run,
    write_retime,
)
from _warmup import warmup_indices
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split

import psdlearn as pl

NAME = "pair_verification"
PAIR_COUNTS = (100, 400)
VAL_FRACTION = 0.25
PEERS = ["itml", "mmc"]
METHODS = ["psdlearn", *PEERS, "euclidean"]
LABELS = {"psdlearn": "psdlearn", "itml": "ITML", "mmc": "MMC", "euclidean": "Euclidean"}


def split(X, y, m, seed):
    """Training points, fit/validation pairs (indices into them) and test pairs."""
    idx_train, idx_test = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y,
                                           random_state=seed)
    X_train, y_train, X_test, y_test = X[idx_train], y[idx_train], X[idx_test], y[idx_test]
    rng = np.random.default_rng([seed, m])
    pairs = sample_pairs(len(y_train), m, rng)
    signs = np.where(y_train[pairs[:, 0]] == y_train[pairs[:, 1]], 1, -1)
    val = np.zeros(m, dtype=bool)
    val[rng.choice(m, size=int(round(VAL_FRACTION * m)), replace=False)] = True
    test_pairs = np.column_stack(np.triu_indices(len(y_test), 1))
    test_y = np.where(y_test[test_pairs[:, 0]] == y_test[test_pairs[:, 1]], 1, -1)
    return {"X": X_train, "fit_pairs": pairs[~val], "fit_y": signs[~val],
            "val_pairs": pairs[val], "val_y": signs[val],
            "test_points": np.stack([X_test[test_pairs[:, 0]], X_test[test_pairs[:, 1]]], 1),
            "test_y": test_y}


def _classifier(task, seed):
    return pl.PairsClassifier(pl.NPKL(certificate_tol=None, tol=1e-3, random_state=seed),
                              preprocessor=task["X"])


def run_ours(task, seed):
    w = warmup_indices(task["fit_y"])
    _classifier(task, seed).fit(task["fit_pairs"][w], task["fit_y"][w])  # _warmup.py
    clf = _classifier(task, seed)
    t0 = time.perf_counter()
    clf.fit(task["fit_pairs"], task["fit_y"])
    elapsed = time.perf_counter() - t0
    clf.calibrate_threshold(task["val_pairs"], task["val_y"], strategy="accuracy")
    return clf.decision_function(task["test_points"]), clf.predict(task["test_points"]), elapsed


def run_euclidean(task):
    X = task["X"]

    def score(pairs):
        return -np.linalg.norm(pairs[:, 0] - pairs[:, 1], axis=1)

    t0 = time.perf_counter()
    val = score(np.stack([X[task["val_pairs"][:, 0]], X[task["val_pairs"][:, 1]]], 1))
    threshold = accuracy_threshold(val, task["val_y"])
    scores = score(task["test_points"])
    return scores, np.where(scores >= threshold, 1, -1), time.perf_counter() - t0


def record(test_y, scores, predictions, elapsed, error=None):
    if error is not None:
        return {"auc": None, "accuracy": None, "time": elapsed, "error": error}
    return {"auc": 100 * roc_auc_score(test_y, scores),
            "accuracy": 100 * accuracy_score(test_y, predictions), "time": elapsed,
            "error": None}


def run_cell(peers, task, seed, reused=None, retime=False):
    """One seed of one condition: every method on the same pairs, order alternating.

    With ``reused`` (that seed's records of an earlier run, ``--reuse-peers``) the peers'
    records are copied from it, and with ``retime`` the peers also run again; returns the
    records and the peers' new ones (None when they did not run again)."""
    out, fresh = {}, None
    y = task["test_y"]

    def ours():
        out["psdlearn"] = record(y, *run_ours(task, seed))

    def others():
        nonlocal fresh
        fresh = share_peers(
            out, peers, {"op": "pairs", "seed": seed, "methods": PEERS, "warmup": True,
                         **{k: v.tolist() for k, v in task.items() if k != "test_y"}},
            reused, retime,
            lambda name, res: record(y, res["scores"], res["predictions"], res["time"],
                                     res["error"]))
        out["euclidean"] = record(y, *run_euclidean(task))

    for step in ((ours, others) if seed % 2 == 0 else (others, ours)):
        step()
    return out, fresh


def summarize(runs, peers_available):
    """One table row per (set, pairs) from the per-seed records."""
    rows = []
    keys = sorted({(r["set"], r["pairs"]) for r in runs},
                  key=lambda t: (SETS.index(t[0]) if t[0] in SETS else 99, t[1]))
    for set_name, m in keys:
        cell = [r for r in runs if (r["set"], r["pairs"]) == (set_name, m)]
        row = {"set": set_name, "pairs": m, "test pairs": cell[0]["test_pairs"]}
        stats = {}
        for meth in METHODS:
            recs = [r["results"][meth] for r in cell if meth in r["results"]]
            if not recs:
                row[f"AUC {LABELS[meth]}"] = row[f"acc {LABELS[meth]}"] = "skipped"
                continue
            ok = [x for x in recs if x["error"] is None]
            fails = len(recs) - len(ok)
            for metric, short in (("auc", "AUC"), ("accuracy", "acc")):
                text = mean_sd([x[metric] for x in ok])
                if fails:
                    text += f" (fails {fails}/{len(recs)})"
                row[f"{short} {LABELS[meth]}"] = text
            stats[meth] = (np.mean([x["auc"] for x in ok]) if ok else None,
                           np.mean([x["accuracy"] for x in ok]) if ok else None, fails,
                           median([x["time"] for x in recs]))
            if meth != "euclidean":
                row[f"t {LABELS[meth]}"] = stats[meth][3]
        auc, acc, _, t_ours = stats["psdlearn"]
        complete = [p for p in METHODS[1:] if p in stats and stats[p][2] == 0]
        learners = [p for p in PEERS if p in complete]
        if not peers_available or not learners:
            row["verdict"] = "peers skipped" if not peers_available else "every peer fails"
        best_auc = max(stats[p][0] for p in complete)
        best_acc = max(stats[p][1] for p in complete)
        row["AUC gap"] = round(auc - best_auc, 1)
        row["acc gap"] = round(acc - best_acc, 1)
        row["_best"] = max(learners, key=lambda p: stats[p][0]) if learners else None
        if learners:
            best = max(learners, key=lambda p: stats[p][0])
            row["time ratio"] = round(t_ours / stats[best][3], 2)
            row["time vs"] = LABELS[best]
            quality = row["AUC gap"] >= -1.0 and row["acc gap"] >= -1.0
            speed = row["time ratio"] <= 1.0
            row["verdict"] = ("met" if quality and speed else "quality met, slower"
                              if quality else "quality missed" + ("" if speed else ", slower"))
        rows.append(row)
    return rows


def write_tables(runs, run_notes, extra, no_write):
    """Summarize the per-seed records and write (or, with ``no_write``, print) the tables;
    ``extra`` holds the run's metadata and goes into the JSON."""
    rows = summarize(runs, extra.get("peers_versions") is not None)
    columns = ["set", "pairs", "test pairs",
               *(f"AUC {LABELS[m]}" for m in METHODS), *(f"acc {LABELS[m]}" for m in METHODS),
               "AUC gap", "acc gap", "time vs", "time ratio", "verdict",
               *(f"t {LABELS[m]}" for m in METHODS[:-1])]
    notes = [
        "ROC AUC and accuracy at the calibrated threshold on pairs of test points (30% of "
        "the points, never seen in training), in percent, mean ± sd over seeds 0-9; "
        "`t ...` = median wall seconds of fit.",
        "pairs = training pairs among the 70% training points, a quarter of them held out "
        "to calibrate the threshold (strategy='accuracy'), the same for every method.",
        "AUC gap / acc gap = psdlearn minus the best method (Euclidean included); time "
        "ratio = psdlearn's median fit time over that of the best learning peer by AUC "
        "(`time vs`). Goal (issue 36): both gaps >= -1 point and time ratio <= 1.",
        "psdlearn: PairsClassifier(NPKL(certificate_tol=None, tol=1e-3, random_state=seed), "
        "preprocessor=X_train), the default learner with a seed; ITML, MMC: metric-learn's "
        "classes with their defaults.",
        "A failure is a peer's exception or TimeoutError (a fit stopped at the limit of "
        "30 s: MMC's failures in this run); the per-seed errors are in the JSON.",
        f"psdlearn {extra['psdlearn_version']}; whole run {extra['wall_seconds'] / 60:.0f} "
        "min.",
        *run_notes,
    ]
    best = {(r["set"], r["pairs"]): r.pop("_best") for r in rows}
    finish(write_results, RESULTS, NAME, columns, rows, notes, extra, no_write)
    check = retime_rows(runs, ("set", "pairs"), best.get,
                        lambda rec: None if rec["auc"] is None else round(rec["auc"], 9))
    for row in check:
        row["peer"] = LABELS[row["peer"]]
    write_retime(write_results, NAME, check, ("fit time", "AUC"), no_write, run_notes)


def main():
    run = start_run(__doc__.split("\n\n")[0], RESULTS / f"{NAME}.json", write_tables)
    if run is None:
        return
    args, sets, start_load, _limits, peers = run

    X0, y0 = load_set("iris")  # untimed: compiles psdlearn's numba kernels
    run_ours(split(X0, y0, 100, 0), 0)

    runs = []
    reused = reused_results(args, lambda r: (r["set"], r["pairs"], r["seed"]))
    t_start = time.perf_counter()
    for set_name in sets:
        X, y = load_set(set_name)
        for m in PAIR_COUNTS:
            for seed in range(args.seeds):
                task = split(X, y, m, seed)
                old = None if reused is None else reused[(set_name, m, seed)]
                res, fresh = run_cell(peers, task, seed, old, seed < args.retime_seeds)
                runs.append({"set": set_name, "pairs": m, "seed": seed,
                             "test_pairs": len(task["test_y"]), "results": res,
                             "load": os.getloadavg()[0],
                             **({"retimed": fresh} if fresh else {})})
                log(f"{set_name} m={m} seed={seed} done ({time.perf_counter() - t_start:.0f} s)")
    runs, run_notes, extra = close_run(peers, args, runs, sets, RESULTS / f"{NAME}.json",
                                       start_load, t_start)
    write_tables(runs, run_notes, extra, args.no_write)


if __name__ == "__main__":
    main()
