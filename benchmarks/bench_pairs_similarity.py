"""Which decision value ranks pairs better for PairsClassifier: the cosine of the learned
embeddings or minus their distance.

Run: ``python benchmarks/bench_pairs_similarity.py [--seeds 10]``. Writes
``benchmarks/results/pairs_similarity.{md,json}``.

Protocols, per data set and seed (labels used only to draw pairs and score):

- ``held-out pairs`` (transductive, the ``GridSearchCV`` setting): ``0.6 n`` similar and
  ``0.6 n`` dissimilar pairs from the labels (``PairwiseConstraints.from_labels``), split
  by ``ConstraintKFold(3, groups="components", shuffle=True)``; the learner is fitted on the
  training pairs with ``preprocessor`` = every point, and the held-out pairs are scored.
- ``unseen points``: the points are split 70 / 30 (stratified); pairs are drawn among the
  training points for fitting (``(m, 2, d)`` arrays) and among the test points for scoring,
  as many as above in proportion.

Score: ROC AUC of ``decision_function`` (``PairsClassifier.score``) with
``similarity="cosine"`` and ``similarity="distance"`` on the same fit.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.model_selection import train_test_split

import psdlearn as pl
from psdlearn.model_selection import ConstraintKFold

SETS = ("iris", "wine", "glass", "heart", "soybean", "sonar")
LEARNERS = {
    "NPKL": lambda s: pl.NPKL(random_state=s),
    "KernelMetricLearner": lambda s: pl.KernelMetricLearner(random_state=s),
    "GeneralizedNystroem": lambda s: pl.GeneralizedNystroem(random_state=s),
    "RCA": lambda s: pl.RCA(),
    "PSDBoost": lambda s: pl.PSDBoost(),
}
RESULTS = Path(__file__).resolve().parent / "results"


def _both(clf, pairs, y):
    out = {}
    for sim in ("cosine", "distance"):
        clf.similarity_ = sim
        out[sim] = clf.score(pairs, y)
    return out


def held_out(X, y, make, seed):
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=seed)
    scores = {"cosine": [], "distance": []}
    for tr, te in ConstraintKFold(3, groups="components", shuffle=True,
                                  random_state=seed).split(C.pairs, C.signs):
        clf = pl.PairsClassifier(make(seed), preprocessor=X).fit(C.pairs[tr], C.signs[tr])
        for k, v in _both(clf, C.pairs[te], C.signs[te]).items():
            scores[k].append(v)
    return {k: float(np.mean(v)) for k, v in scores.items()}


def unseen(X, y, make, seed):
    i_tr, i_te = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y,
                                  random_state=seed)
    C_tr = pl.PairwiseConstraints.from_labels(y[i_tr], 0.6, 0.6, random_state=seed)
    C_te = pl.PairwiseConstraints.from_labels(y[i_te], 0.6, 0.6, random_state=seed + 1000)
    P_tr, P_te = X[i_tr][C_tr.pairs], X[i_te][C_te.pairs]
    clf = pl.PairsClassifier(make(seed)).fit(P_tr, C_tr.signs)
    return _both(clf, P_te, C_te.signs)


def write_table(rows, env):
    """``results/pairs_similarity.md`` from the rows: per-learner summary, then the table."""
    seeds = env["seeds"]
    lines = ["# PairsClassifier: cosine against minus the distance (ROC AUC)", "",
             f"{seeds} seeds; protocol in `bench_pairs_similarity.py`. "
             "diff = AUC(cosine) - AUC(distance), mean ± standard error over the seeds; "
             "wins = seeds where the cosine ranks better.", "",
             "## Summary: mean diff over the sets (sets where the cosine is better)", "",
             "| learner | held-out pairs | unseen points |", "|---|---|---|"]
    for learner in LEARNERS:
        cells = []
        for protocol in ("held-out pairs", "unseen points"):
            d = [r["diff_mean"] for r in rows
                 if r["learner"] == learner and r["protocol"] == protocol]
            cells.append(f"{np.mean(d):+.4f} ({sum(x > 0 for x in d)}/{len(d)})")
        lines.append(f"| {learner} | {cells[0]} | {cells[1]} |")
    lines += ["", "## Per set", "",
              "| set | learner | protocol | AUC cosine | AUC distance | diff | wins |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['learner']} | {r['protocol']} | "
                     f"{r['auc_cosine']:.4f} | {r['auc_distance']:.4f} | "
                     f"{r['diff_mean']:+.4f} ± {r['diff_se']:.4f} | "
                     f"{r['cosine_wins']}/{seeds} |")
    lines += ["", "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items())]
    if env.get("note"):
        lines += ["", env["note"]]
    (RESULTS / "pairs_similarity.md").write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--sets", default=",".join(SETS),
                        help="comma-separated sets; their rows replace those already in "
                             "the JSON results, the others are kept")
    parser.add_argument("--table-only", action="store_true",
                        help="rewrite the markdown table from the JSON results")
    args = parser.parse_args()
    sets = args.sets.split(",")
    out = RESULTS / "pairs_similarity.json"
    if args.table_only:
        saved = json.loads(out.read_text())
        write_table(saved["rows"], saved["env"])
        return
    kept = json.loads(out.read_text())["rows"] if out.exists() else []
    rows = [r for r in kept if r["set"] not in sets]
    start = time.perf_counter()
    for name in sets:
        X, y = pl.datasets.load(name)
        for learner, make in LEARNERS.items():
            for protocol, run in (("held-out pairs", held_out), ("unseen points", unseen)):
                per_seed = []
                for seed in range(args.seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        per_seed.append(run(X, y, make, seed))
                cos = np.array([r["cosine"] for r in per_seed])
                dist = np.array([r["distance"] for r in per_seed])
                diff = cos - dist
                rows.append({"set": name, "learner": learner, "protocol": protocol,
                             "auc_cosine": float(cos.mean()),
                             "auc_distance": float(dist.mean()),
                             "diff_mean": float(diff.mean()),
                             "diff_se": float(diff.std(ddof=1) / np.sqrt(len(diff))),
                             "cosine_wins": int(np.sum(diff > 0))})
                print(rows[-1], flush=True)
                out.write_text(json.dumps({"rows": rows}, indent=1))  # progress
    env = {"python": platform.python_version(), "numpy": np.__version__,
           "scikit-learn": sklearn.__version__, "psdlearn": pl.__version__,
           "machine": platform.machine(), "processor": platform.processor(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "seeds": args.seeds, "seconds": round(time.perf_counter() - start, 1)}
    rows.sort(key=lambda r: (SETS.index(r["set"]), list(LEARNERS).index(r["learner"])))
    RESULTS.mkdir(exist_ok=True)
    out.write_text(json.dumps({"env": env, "rows": rows}, indent=1))
    write_table(rows, env)


if __name__ == "__main__":
    main()
