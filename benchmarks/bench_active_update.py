"""Learning curves of the query loop: the model updated by partial_fit, or refitted.

Run: ``python benchmarks/bench_active_update.py [n_seeds] [--only iris wine ...]`` writes
``results/active_update.{md,json}``.

``active_learning`` updates a ``ConstrainedClustering`` by ``partial_fit`` each round:
the learner keeps the kNN graph, ``gamma_`` and ``rank_`` of its first fit (20 answers),
where a refit would choose ``gamma="auto"`` and ``rank="auto"`` again from all the answers.
This measures what that costs in Rand index: the learned-kernel strategies of
``bench_active.py`` (uncertainty, placement; clean oracle, rounds of 20 pairs, same
seeds, ``ConstrainedClustering(k, estimator=NPKL(certificate_tol=None))``), each with the
model refitted on all the answers every round (``refit``, as in ``bench_active.py``) and
updated by ``partial_fit`` with the round's answers (``partial_fit``, as in
``active_learning``). Columns: mean Rand index at each checkpoint, the mean difference
``partial_fit - refit`` over the checkpoints, and the median seconds of the fits of a
whole curve (one thread).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from _common import load_note, write_results  # noqa: E402
from sklearn.metrics import rand_score  # noqa: E402

import psdlearn as pl  # noqa: E402
from psdlearn.active import STRATEGIES, LabelOracle  # noqa: E402

DATASETS = ("iris", "wine", "glass", "chessboard")
STRATEGY_NAMES = ("uncertainty", "placement")
CHECKPOINTS = (20, 60, 100, 200, 300, 400)
BATCH = 20


def curve(X, y, key, seed, update):
    """Rand index at each checkpoint, and the seconds spent fitting."""
    k = len(np.unique(y))
    strategy = STRATEGIES[key](k)
    oracle, rng = LabelOracle(y), np.random.RandomState(seed)
    C = pl.PairwiseConstraints(np.empty((0, 2), np.int64), np.empty(0, np.int64), len(X))
    model, out, fit_s = None, {}, 0.0
    while C.n_pairs < CHECKPOINTS[-1]:
        pairs = strategy.select(X, C, BATCH, model=model, random_state=rng)
        signs = np.array([1 if oracle.query(i, j) else -1 for i, j in pairs.tolist()])
        C = pl.PairwiseConstraints(np.vstack([C.pairs, pairs]),
                                   np.concatenate([C.signs, signs]), len(X))
        t0 = time.perf_counter()
        if update == "partial_fit" and model is not None:
            model.partial_fit(X, pl.PairwiseConstraints(pairs, signs, len(X)))
        else:
            model = pl.ConstrainedClustering(k, estimator=pl.NPKL(certificate_tol=None),
                                             random_state=seed).fit(X, C)
        fit_s += time.perf_counter() - t0
        if C.n_pairs in CHECKPOINTS:
            out[C.n_pairs] = float(rand_score(y, model.labels_))
    return out, fit_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n_seeds", type=int, nargs="?", default=10)
    parser.add_argument("--only", nargs="+", default=DATASETS)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    load = os.getloadavg()[0]
    rows = []
    for ds in args.only:
        X, y = pl.datasets.load(ds)
        for key in STRATEGY_NAMES:
            means = {}
            for update in ("refit", "partial_fit"):
                runs = [curve(X, y, key, seed, update) for seed in range(args.n_seeds)]
                means[update] = {c: float(np.mean([r[c] for r, _ in runs]))
                                 for c in CHECKPOINTS}
                row = {"dataset": ds, "strategy": key, "update": update}
                row.update({f"rand@{c}": means[update][c] for c in CHECKPOINTS})
                row["fit_s"] = float(np.median([s for _, s in runs]))
                row["seeds"] = args.n_seeds
                rows.append(row)
                print(row, flush=True)
            rows[-1]["diff"] = float(np.mean([means["partial_fit"][c] - means["refit"][c]
                                              for c in CHECKPOINTS]))
    notes = [f"{args.n_seeds} seeds; means over seeds; clean oracle, rounds of {BATCH}; "
             "diff: mean over the checkpoints of partial_fit's Rand minus refit's.",
             "fit_s: median over seeds of the seconds spent in fit / partial_fit along a "
             "whole curve (400 answers), one thread.",
             load_note(load)]
    write_results("active_update",
                  ["dataset", "strategy", "update", *[f"rand@{c}" for c in CHECKPOINTS],
                   "diff", "fit_s", "seeds"], rows, notes)


if __name__ == "__main__":
    main()
