"""Noisy constraints: clustering Rand at 0%, 10% and 20% flipped signs, for psdlearn with
and without the pairs it finds suspicious, against PCKMeans and ITML + k-means; and how
well the wrong pairs are found.

Run (from the repository root, in psdlearn's environment)::

    PYTHONPATH=src:. python benchmarks/bench_noisy_constraints.py \
        --peers-python /work/venv-peers/bin/python [--sets iris,wine] [--seeds 10]

Writes ``benchmarks/results/noisy_constraints.{md,json}``. The peers run in their own
interpreter (``_peers.py``); without it they are reported as skipped.

Protocol, fixed before measuring:

- Sets: the sets of the task benchmarks (``_peers_client.SETS``), as
  ``psdlearn.datasets.load`` gives them; ``k`` = the number of classes.
- Side information, per seed ``s`` in 0-9: 400 distinct pairs drawn uniformly among all
  pairs of points, each labelled must-link (same class) or cannot-link; then 0%, 10% or 20%
  of the signs (drawn at random) flipped. Every method gets the same pairs.
- psdlearn: ``ConstrainedClustering(n_clusters=k, random_state=s)`` with its defaults.
  "suspects dropped": ``cross_val_constraint_scores(NPKL(certificate_tol=None,
  random_state=s), X, pairs, cv=5, random_state=s)``; each pair's out-of-fold similarity
  ``c = -T s`` (the mean cosine of its rows and of its neighbours' rows, in a kernel
  learned without it) is thresholded at the value that agrees best with the given signs,
  and the pairs it predicts with the other sign are dropped (a rule that needs no noise
  rate); then the same ``ConstrainedClustering`` on the rest. (Dropping every pair with a
  positive score, tried first on iris, seed 0, dropped 25 correct pairs of 400 at 0% noise:
  correct cannot-links between clusters that the kernel makes orthogonal score near 0.)
- Peers, with their defaults: PCKMeans (active-semi-supervised-clustering, a fit that hits
  an empty cluster repeated up to 3 times) and metric-learn's ITML on the pairs followed by
  ``KMeans(k, n_init=10)`` on ``transform(X)``.
- Detection: ROC AUC of telling the flipped pairs from the others, for the in-fit score
  (``constraint_scores_`` of the fitted learner) and the cross-fitted one. Reference: the
  same AUC for a detector that knows the classes of 80% of the points: 5-fold
  out-of-fold class probabilities of a classifier trained on the true labels (the best of
  logistic regression, an RBF SVM, a random forest and 10-NN, chosen per set on the
  results), scoring a pair ``-T_ij (2 p_i . p_j - 1)``. It says how much the features
  themselves tell the classes apart; it is not a bound (a kernel learned from the pairs
  can see structure, such as the double spiral, that these classifiers miss).
- Score: Rand index of the labels against the classes, over all points, in percent.
- Time: wall seconds of one fit, median over the seeds, one thread for every method.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from _common import RESULTS, write_results
from _peers_client import (
    accuracy_threshold,
    close_run,
    finish,
    flip_signs,
    load_set,
    log,
    mean_sd,
    median,
    sample_pairs,
    start_run,
)
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import rand_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

import psdlearn as pl
from psdlearn.model_selection import cross_val_constraint_scores

NAME = "noisy_constraints"
N_PAIRS = 400
RATES = (0.0, 0.1, 0.2)
PEERS = ["pckmeans", "itml_kmeans"]
LABELS = {"ours": "psdlearn", "dropped": "psdlearn, suspects dropped",
          "pckmeans": "PCKMeans", "itml_kmeans": "ITML+k-means"}
CLASSIFIERS = {
    "logistic": lambda s: LogisticRegression(max_iter=2000),
    "svm": lambda s: CalibratedClassifierCV(SVC(random_state=s), ensemble=False),
    "forest": lambda s: RandomForestClassifier(300, random_state=s),
    "10-NN": lambda s: KNeighborsClassifier(10),
}


def side_information(y, seed):
    """The 400 pairs of seed ``seed``, their true signs, and the noisy signs per rate."""
    rng = np.random.default_rng([seed, N_PAIRS])
    pairs = np.sort(sample_pairs(len(y), N_PAIRS, rng), axis=1)
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]  # PairwiseConstraints' order
    signs = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    return pairs, signs, {r: flip_signs(signs, r, np.random.default_rng([seed, int(100 * r)]))
                          for r in RATES}


def class_probabilities(X, y, seed):
    """Out-of-fold class probabilities of each classifier trained on the true labels."""
    cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    return {name: cross_val_predict(make(seed), X, y, cv=cv, method="predict_proba")
            for name, make in CLASSIFIERS.items()}


def auc(flipped, scores):
    return float(roc_auc_score(flipped, scores)) if 0 < flipped.sum() < len(flipped) else None


def cluster(X, k, pairs, signs, seed):
    C = pl.PairwiseConstraints(pairs, signs, n_samples=len(X))
    model = pl.ConstrainedClustering(n_clusters=k, random_state=seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.ConstraintConflictWarning)
        model.fit(X, C)
    return model, time.perf_counter() - t0


def run_ours(X, y, k, pairs, signs, flipped, seed):
    out = {}
    model, t = cluster(X, k, pairs, signs, seed)
    out["ours"] = {"rand": 100 * rand_score(y, model.labels_), "time": t, "error": None}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.ConstraintConflictWarning)
        scores = cross_val_constraint_scores(
            pl.NPKL(certificate_tol=None, random_state=seed), X,
            pl.PairwiseConstraints(pairs, signs, n_samples=len(X)), cv=5, random_state=seed)
    keep = ~contradicted(scores, signs)
    dropped, t2 = cluster(X, k, pairs[keep], signs[keep], seed)
    out["dropped"] = {"rand": 100 * rand_score(y, dropped.labels_),
                      "time": time.perf_counter() - t0, "error": None}
    detection = {"auc_fit": auc(flipped, model.estimator_.constraint_scores_),
                 "auc_cv": auc(flipped, scores), "n_dropped": int((~keep).sum()),
                 "wrong_among_dropped": int(flipped[~keep].sum())}
    return out, detection


def contradicted(scores, signs):
    """The pairs whose out-of-fold prediction has the other sign: the predicted similarity
    ``c = -T s`` (the mean of the two cosines) thresholded at the ``t`` that agrees best
    with the given signs (most of them are right, so ``t`` is near the clean one)."""
    similarity = -signs * scores
    t = accuracy_threshold(similarity, signs)
    return np.where(similarity >= t, 1, -1) != signs


def ceiling(probas, pairs, signs, flipped):
    """The label-trained detector's AUC per classifier."""
    out = {}
    for name, P in probas.items():
        same = np.einsum("ij,ij->i", P[pairs[:, 0]], P[pairs[:, 1]])
        out[name] = auc(flipped, -signs * (2.0 * same - 1.0))
    return out


def run_cell(peers, X, y, k, pairs, signs, flipped, seed):
    out = {}
    detection = {}

    def ours():
        res, det = run_ours(X, y, k, pairs, signs, flipped, seed)
        out.update(res)
        detection.update(det)

    def others():
        if not peers.available:
            return
        ans = peers.ask({"op": "cluster", "X": X.tolist(), "n_clusters": k,
                         "pairs": pairs.tolist(), "signs": signs.tolist(), "seed": seed,
                         "methods": PEERS})
        for name, res in ans.items():
            rand = None if res["labels"] is None else 100 * rand_score(y, res["labels"])
            out[name] = {"rand": rand, "time": res["time"], "error": res["error"]}

    for step in ((ours, others) if seed % 2 == 0 else (others, ours)):
        step()
    return out, detection


def _mean(values, digits=3):
    v = [x for x in values if x is not None]
    return round(float(np.mean(v)), digits) if v else None


def summarize(runs):
    rows = []
    keys = sorted({(r["set"], r["rate"]) for r in runs},
                  key=lambda t: ([r["set"] for r in runs].index(t[0]), t[1]))
    for set_name, rate in keys:
        cell = [r for r in runs if (r["set"], r["rate"]) == (set_name, rate)]
        row = {"set": set_name, "flipped": f"{int(round(100 * rate))}%"}
        for meth, label in LABELS.items():
            recs = [r["results"].get(meth) for r in cell if meth in r["results"]]
            if not recs:
                row[label] = "skipped"
                continue
            rands = [x["rand"] for x in recs if x["rand"] is not None]
            fails = len(recs) - len(rands)
            text = mean_sd(rands)
            if fails:
                text = f"{text} (fails {fails}/{len(recs)})" if rands else \
                    f"fails {fails}/{len(recs)}"
            row[label] = text
            row[f"t {label}"] = median([x["time"] for x in recs])
        det = [r["detection"] for r in cell]
        row["AUC in-fit"] = _mean([d["auc_fit"] for d in det])
        row["AUC cross-fit"] = _mean([d["auc_cv"] for d in det])
        ceil = {name: _mean([r["ceiling"].get(name) for r in cell]) for name in CLASSIFIERS}
        best = max((c for c in ceil if ceil[c] is not None), key=ceil.get, default=None)
        row["AUC label-trained"] = f"{ceil[best]:.3f} ({best})" if best else None
        row["dropped"] = _mean([d["n_dropped"] for d in det], 1)
        n_drop = sum(d["n_dropped"] for d in det)
        row["wrong among dropped"] = (round(sum(d["wrong_among_dropped"] for d in det)
                                            / n_drop, 2) if n_drop else None)
        rows.append(row)
    return rows


def write_tables(runs, run_notes, extra, no_write):
    rows = summarize(runs)
    columns = ["set", "flipped", *LABELS.values(), "AUC in-fit", "AUC cross-fit",
               "AUC label-trained", "dropped", "wrong among dropped",
               *(f"t {label}" for label in LABELS.values())]
    notes = [
        f"{N_PAIRS} pairs drawn uniformly among all pairs of points, the same for every "
        "method; flipped: that share of their signs negated. Rand index in percent, mean "
        "± sd over the seeds; `t ...` = median wall seconds of one fit (for 'suspects "
        "dropped': the 5 fold fits of the scoring plus the refit).",
        "suspects dropped: the pairs whose out-of-fold similarity "
        "(`psdlearn.model_selection.cross_val_constraint_scores`, 5 folds), thresholded "
        "where it agrees best with the given signs, predicts the other sign; then "
        "ConstrainedClustering on the rest; `dropped` = mean number of pairs dropped, "
        "`wrong among dropped` = the share of flipped pairs among them.",
        "AUC: telling the flipped pairs from the others; in-fit = the fitted learner's "
        "`constraint_scores_`, cross-fit = the out-of-fold scores. AUC label-trained: a detector "
        "that knows the classes of 80% of the points (out-of-fold class probabilities of "
        "the named classifier trained on the true labels, the best of four chosen on these "
        "results): how much the features tell the classes apart, a reference and not a "
        "bound.",
        "Peers' failures are their own exceptions (PCKMeans: InconsistentConstraintsException "
        "when a flipped sign puts a cannot-link inside a must-link component).",
        f"psdlearn {extra['psdlearn_version']}; whole run {extra['wall_seconds'] / 60:.0f} "
        "min.",
        *run_notes,
    ]
    finish(write_results, RESULTS, NAME, columns, rows, notes, extra, no_write)


def main():
    run = start_run(__doc__.split("\n\n")[0], RESULTS / f"{NAME}.json", write_tables)
    if run is None:
        return
    args, sets, start_load, _limits, peers = run
    X0, y0 = load_set("iris")  # untimed: compiles psdlearn's numba kernels
    p0, s0, _ = side_information(y0, 0)
    cluster(X0, 3, p0, s0, 0)

    runs = []
    t_start = time.perf_counter()
    for set_name in sets:
        X, y = load_set(set_name)
        k = len(np.unique(y))
        for seed in range(args.seeds):
            pairs, clean, noisy = side_information(y, seed)
            probas = class_probabilities(X, y, seed)
            for rate in RATES:
                flipped = noisy[rate] != clean
                res, det = run_cell(peers, X, y, k, pairs, noisy[rate], flipped, seed)
                runs.append({"set": set_name, "rate": rate, "seed": seed, "results": res,
                             "detection": det,
                             "ceiling": ceiling(probas, pairs, noisy[rate], flipped)})
            log(f"{set_name} seed={seed} done ({time.perf_counter() - t_start:.0f} s)")
    runs, run_notes, extra = close_run(peers, args, runs, sets, RESULTS / f"{NAME}.json",
                                       start_load, t_start)
    write_tables(runs, run_notes, extra, args.no_write)


if __name__ == "__main__":
    main()
