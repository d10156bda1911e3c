"""GeneralizedNystroem with its defaults against the baseline it extends: a linear SVM on
its features versus a linear SVM on scikit-learn's unsupervised ``Nystroem`` features.

Run: ``python benchmarks/bench_defaults_nystroem.py [--quick] [--sets SET ...]``. Writes
``benchmarks/results/defaults_nystroem.{md,json}`` (``defaults_nystroem_quick`` with
``--quick``; with ``--sets`` the rows of those sets replace theirs in the full table).

Protocol (issue 22, item 8). In each set 10% of the points are labelled, drawn evenly over
the classes (as in ``python -m reproductions nystrom-table1``, which draws 100); the others are
unlabelled (``-1``). Every method maps all points to features with ``m = round(0.1 n)``
landmarks; ``LinearSVC(C=1)`` is trained on the features of the labelled points and scored
(accuracy, %) on the unlabelled ones. The unlabelled points' labels are only used for the
score. Seeds 0-4 (0-2 with ``--quick``) draw the labels, the landmarks and the baseline's
random components. Target: ``GeneralizedNystroem()`` >= ``Nystroem`` with the same kernel
(same ``gamma``), per set, in the mean over seeds.

Columns. ``gn_defaults``: ``GeneralizedNystroem(random_state=seed).fit(X, y_partial)``
(``lambda_selection="auto"``: lambda by 3-fold cross-validation on the labelled points,
averaged over 3 draws of the folds).
``sk_same_gamma``: ``sklearn.kernel_approximation.Nystroem(gamma=gn.kernel_gamma_,
n_components=m)``, the baseline. ``sk_default_gamma``: the same with scikit-learn's own
default ``gamma = 1 / n_features``. ``gn_former``: the former default,
``lambda_selection="alignment"`` (the paper's criterion (15)). ``gn_no_labels``:
``GeneralizedNystroem().fit(X)``, the standard Nystrom kernel on the estimator's k-means
landmarks (what the method reduces to without labels).

Oracle (diagnosis only, full run, on the sets where the defaults miss the target): the
best mean accuracy over single ``lambda`` values of the grid ``10^-5 ... 10^5``
(``lambdas=(lambda,)``), chosen with the labels of the unlabelled points. If even it
misses, the method itself loses on that set.

Sets. Standard sklearn sets: digits (pixels as loaded), iris and wine (psdlearn's bundled
copies, features scaled to [-1, 1]), breast_cancer (features scaled to [-1, 1] the same
way); and the protocol sets of ``reproductions.experiments.nystrom_table1`` up to 2,310 points
(text, 11,960-d, and the sets above 3,000 points are left out to keep the run short).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np
from _common import RESULTS, defaults_verdict, load_note
from scipy import stats
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.kernel_approximation import Nystroem
from sklearn.svm import LinearSVC

import psdlearn as pl
from psdlearn.nystroem.estimator import DEFAULT_LAMBDAS
from reproductions.experiments.nystrom_table1 import labelled_split, load_protocol_set
from reproductions.experiments.report import write_results

METHODS = ("sk_same_gamma", "sk_default_gamma", "gn_defaults", "gn_former", "gn_no_labels")
COLUMNS = ["set", "n/d/C", "m", *METHODS, "difference", "std_diff", "se_diff", "t_paired",
           "p_paired", "target_met", "oracle_diff", "oracle_setting", "verdict",
           "lambda_median", "beta_median", "gn_fit_s", "seeds"]
QUICK_SETS = ["digits", "iris", "wine", "breast_cancer", "g241c"]
FULL_SETS = [*QUICK_SETS, "digit1", "ssl-usps", "coil", "coil2", "german.numer", "usps49",
             "usps27", "a1a", "dna", "segment"]


def load(name):
    """``(X, y)`` of a benchmark set (see the module docstring for the scaling)."""
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X.astype(np.float64), y
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        lo, hi = X.min(axis=0), X.max(axis=0)
        return 2.0 * (X - lo) / np.where(hi > lo, hi - lo, 1.0) - 1.0, y
    if name in ("iris", "wine"):
        return pl.datasets.load(name)
    return load_protocol_set(name)


def paired_test(recs):
    """Paired test of ``gn_defaults - sk_same_gamma`` over the seeds (same labels,
    landmarks' seed and split): the standard error of the mean difference, Student's t and
    its two-sided p-value (H0: no difference), with ``seeds - 1`` degrees of freedom."""
    diff = np.array([r["gn_defaults"] - r["sk_same_gamma"] for r in recs])
    if len(diff) < 2 or not np.any(diff != diff[0]):
        return {"se_diff": 0.0, "t_paired": None, "p_paired": None}
    test = stats.ttest_1samp(diff, 0.0)
    return {"se_diff": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 2),
            "t_paired": round(float(test.statistic), 2),
            "p_paired": round(float(test.pvalue), 3)}


def accuracy(Q, y, y_partial):
    """Accuracy (%) on the unlabelled points of a linear SVM trained on the labelled ones."""
    lab = y_partial != -1
    clf = LinearSVC(C=1.0).fit(Q[lab], y[lab])
    return 100.0 * float(np.mean(clf.predict(Q[~lab]) == y[~lab]))


def one_seed(X, y, seed):
    """The accuracies of every method, and lambda_, beta_ and the fit time of the defaults."""
    n = len(y)
    m = int(round(0.1 * n))
    y_partial = labelled_split(y, m, np.random.default_rng(seed))
    rec = {"seed": seed}
    t0 = time.perf_counter()
    gn = pl.GeneralizedNystroem(random_state=seed).fit(X, y_partial)
    Q = gn.transform(X)
    rec["gn_fit_s"] = time.perf_counter() - t0
    rec["gn_defaults"] = accuracy(Q, y, y_partial)
    rec["lambda"], rec["beta"] = gn.lambda_, gn.beta_
    for key, gamma in (("sk_same_gamma", gn.kernel_gamma_), ("sk_default_gamma", None)):
        sk = Nystroem(gamma=gamma, n_components=gn.landmarks_.shape[0], random_state=seed)
        rec[key] = accuracy(sk.fit_transform(X), y, y_partial)
    former = pl.GeneralizedNystroem(lambda_selection="alignment", random_state=seed)
    rec["gn_former"] = accuracy(former.fit(X, y_partial).transform(X), y, y_partial)
    plain = pl.GeneralizedNystroem(random_state=seed).fit(X)
    rec["gn_no_labels"] = accuracy(plain.transform(X), y, y_partial)
    return rec


def oracle(X, y, recs):
    """Best mean difference to ``sk_same_gamma`` over single lambdas of the grid (the
    unlabelled points' labels: diagnosis only), and its setting."""
    best = (None, None)
    for lam in DEFAULT_LAMBDAS:
        diffs = []
        for r in recs:
            y_partial = labelled_split(y, int(round(0.1 * len(y))),
                                       np.random.default_rng(r["seed"]))
            gn = pl.GeneralizedNystroem(lambdas=(lam,), random_state=r["seed"])
            diffs.append(accuracy(gn.fit(X, y_partial).transform(X), y, y_partial)
                         - r["sk_same_gamma"])
        if best[0] is None or np.mean(diffs) > best[0]:
            best = (round(float(np.mean(diffs)), 2), f"lambda={lam:g}")
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="5 sets, 3 seeds")
    ap.add_argument("--sets", nargs="+", choices=FULL_SETS, metavar="SET",
                    help="rerun only these sets (all seeds) and replace their rows in "
                         "the full table")
    ap.add_argument("--seeds", type=int, default=None,
                    help="seeds 0 .. SEEDS-1 (default 5, 3 with --quick)")
    args = ap.parse_args()
    start_load = os.getloadavg()[0]
    sets = args.sets or (QUICK_SETS if args.quick else FULL_SETS)
    seeds = range(args.seeds or (3 if args.quick else 5))
    rows, raw = [], {}
    for name in sets:
        data = load(name)
        if data is None:
            print(f"{name}: not available, skipped", flush=True)
            continue
        X, y = np.asarray(data[0], dtype=np.float64), data[1]
        with warnings.catch_warnings():
            # LinearSVC and the solver's max_iter warnings: the table reports accuracy
            warnings.simplefilter("ignore")
            recs = [one_seed(X, y, seed) for seed in seeds]
        raw[name] = recs
        diff = np.array([r["gn_defaults"] - r["sk_same_gamma"] for r in recs])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            best = oracle(X, y, recs) if not args.quick and diff.mean() < 0 else (None, None)
        row = {"set": name, "n/d/C": f"{X.shape[0]}/{X.shape[1]}/{len(np.unique(y))}",
               "m": int(round(0.1 * len(y)))}
        for key in METHODS:
            row[key] = round(float(np.mean([r[key] for r in recs])), 2)
        row.update({
            "difference": round(float(diff.mean()), 2), "std_diff": round(float(diff.std()), 2),
            "target_met": bool(diff.mean() >= 0), "oracle_diff": best[0],
            "oracle_setting": best[1], "verdict": defaults_verdict(diff, 0.0, best[0]),
            "former_verdict": defaults_verdict(
                np.array([r["gn_former"] - r["sk_same_gamma"] for r in recs]), 0.0),
            "no_labels_verdict": defaults_verdict(
                np.array([r["gn_no_labels"] - r["sk_same_gamma"] for r in recs]), 0.0),
            "lambda_median": float(np.median([r["lambda"] for r in recs])),
            "beta_median": round(float(np.median([r["beta"] for r in recs])), 3),
            "gn_fit_s": round(float(np.median([r["gn_fit_s"] for r in recs])), 2),
            "seeds": len(recs)})
        rows.append(row)
        print({k: row[k] for k in ("set", "sk_same_gamma", "gn_defaults", "gn_former",
                                   "gn_no_labels", "difference", "verdict")}, flush=True)

    if args.sets:  # these sets' rows replace theirs in the full table
        previous = json.loads((RESULTS / "defaults_nystroem.json").read_text())
        by_set = {r["set"]: r for r in previous["rows"]} | {r["set"]: r for r in rows}
        rows = [by_set[name] for name in FULL_SETS if name in by_set]
        raw = previous["raw"] | raw
    for row in rows:  # from the per-seed records, also for the rows kept from a former run
        row.update(paired_test(raw[row["set"]]))

    def names_with(key, value):
        return ", ".join(r["set"] for r in rows if r[key] == value) or "none"

    def count(key, value):
        return sum(r[key] == value for r in rows)

    def diff_of(name):
        return next((f"{r['difference']:+.2f}" for r in rows if r["set"] == name), "not run")

    notes = [
        "Columns: accuracy (%) of LinearSVC(C=1) on the unlabelled points, trained on the "
        "10% labelled ones, mean over seeds; difference = gn_defaults - sk_same_gamma "
        "(std over seeds); se_diff, t_paired, p_paired: the paired test of the difference "
        "over the seeds (standard error of the mean, Student's t, two-sided p-value with "
        "seeds - 1 degrees of freedom; same labels and seed on both sides); target_met: "
        "difference >= 0; oracle_diff / oracle_setting: "
        "best mean difference over single lambdas 1e-5 ... 1e5, chosen WITH the labels of "
        "the unlabelled points (diagnosis only, on the sets that miss); verdict: 'met', "
        "'below within noise' (mean difference negative but within two standard errors "
        "over the seeds), 'default misses (oracle meets)' or 'method loses (oracle also "
        "misses)'; gn_fit_s: median seconds of fit + transform of the defaults.",
        f"Defaults (lambda by 3-fold cross-validation over 3 draws of the folds): "
        f"target met on {count('verdict', 'met')} "
        f"of {len(rows)} sets ({names_with('verdict', 'met')}); below within noise on "
        f"{names_with('verdict', 'below within noise')}; default misses (oracle meets) on "
        f"{names_with('verdict', 'default misses (oracle meets)')}; method loses on "
        f"{names_with('verdict', 'method loses (oracle also misses)')}.",
        f"Former default (lambda by criterion (15), gn_former): met on "
        f"{count('former_verdict', 'met')} of {len(rows)} ({names_with('former_verdict', 'met')}); "
        f"below within noise on {names_with('former_verdict', 'below within noise')}. Without "
        f"labels (gn_no_labels): met on {count('no_labels_verdict', 'met')}.",
        "How the default was chosen (labelled points only inside the estimator; the "
        "benchmark's accuracy over these sets and seeds to compare rules): criterion (15), "
        "3-fold CV with ties to the smaller or the larger lambda, CV that may also pick "
        "the unsupervised kernel W^+ or the prior beta W^+, and the CV accuracy from 1 or "
        "3 draws of the folds. CV with ties to the larger lambda met the target on the "
        "most sets and lost none beyond noise; offering the unsupervised kernel as a "
        "candidate changed nothing (CV rarely prefers it). Criterion (15) is measured on "
        "the points that fit S, so it favours a small lambda that fits the few labelled "
        "points at the expense of the others; held-out folds do not.",
        "1 against 3 draws of the folds (CV_REPEATS). With 1 draw (the table of commit "
        "cba5177, same sets and seeds): met on 10 of 15; digits (-0.71) and iris (-0.59) "
        "missed beyond noise (oracle meets), wine (-0.25), german.numer (-0.78) and a1a "
        "(-0.11) below within noise; median gn_fit_s e.g. 15.8 (digits), 10.8 (a1a). With "
        f"3 draws (this table): digits {diff_of('digits')}, wine {diff_of('wine')}, iris "
        f"{diff_of('iris')}, german.numer {diff_of('german.numer')}, a1a "
        f"{diff_of('a1a')}; the fit costs about 2.5 times as much (10 instead of 4 fits "
        "per candidate lambda).",
        "Paired test on the sets below the target: " + ("; ".join(
            f"{r['set']} {r['difference']:+.2f} ± {r['se_diff']:.2f} (t = {r['t_paired']}, "
            f"p = {r['p_paired']}, {r['seeds']} seeds)" for r in rows
            if r["difference"] < 0) or "none") + ". Below the target at the 5% level "
        "(p_paired < 0.05): " + (", ".join(
            r["set"] for r in rows if r["difference"] < 0 and r["p_paired"] is not None
            and r["p_paired"] < 0.05) or "none") + ".",
        "Where the defaults stay below: with 15 (iris) or 18 (wine) labelled points a "
        "held-out fold has 5 or 6 points, the accuracies are coarse and noisy, and the "
        "chosen lambda varies by seed; the oracle column shows whether a single lambda "
        "would do.",
        load_note(start_load),
    ]
    print(write_results(RESULTS, "defaults_nystroem" + ("_quick" if args.quick else ""),
                        COLUMNS, rows, notes,
                        title="GeneralizedNystroem defaults: linear SVM accuracy against "
                              "scikit-learn Nystroem", extra={"raw": raw}))


if __name__ == "__main__":
    main()
