"""KernelMetricLearner with its defaults against the baseline it extends: k-means on the
learned embedding versus k-means on the inputs (Rand index); RCA + k-means for context.

Run: ``python benchmarks/bench_defaults_kml.py [--quick] [--sets iris,wine] [--closure]``.
Writes ``benchmarks/results/defaults_kml.{md,json}``; ``--sets`` runs those sets only and
merges them into the table already there (so a long run can be split by set). ``--closure``
runs only the check of one more candidate rule, ``S`` = the transitive closure of the
similar pairs (every pair of points in one chunklet, as the estimator reads partial labels
and as RCA groups pairs), against the defaults on seeds 0-9 and on 20 fresh seeds 10-29,
and writes ``benchmarks/results/defaults_kml_closure.{md,json}``. ``--width-rules`` writes
``benchmarks/results/defaults_kml_widths.{md,json}``: the widths that two more label-free
rules would give, as factors of the default ``kernel_gamma`` (no fit, no label).
``--kernel-rules FIRST-LAST [--sets ...]`` runs only six base-kernel rules (multi-scale
RBF averages and the self-tuning kernel of Zelnik-Manor & Perona 2004, see
:func:`rule_kernel`) on those seeds, merges them into
``benchmarks/results/defaults_kml_kernels.json`` and rewrites its table. ``--signed
[--sets ...]`` runs only the defaults given must-links and cannot-links (50 of each), whose
width is then chosen by cross-validation over the pairs (:func:`run_signed`), against
k-means on X and, for the cost, against the label-free fit on the same must-links; it
writes ``benchmarks/results/defaults_kml_signed.{md,json}``.

Protocol (that of the Table 2 reproduction, ``reproductions.experiments.yeung_table2``): per
seed, ``|S| = 50`` similar pairs drawn at random among the same-class pairs of the true
labels (``PairwiseConstraints.from_labels(y, n_must=50, n_cannot=0, random_state=seed)``);
``KernelMetricLearner(random_state=seed)`` (defaults: full version, RBF kernel with the
median-heuristic width, ``rank="auto"``) is fitted with ``fit(X, S)``; k-means
(``n_clusters`` = number of classes, 10 restarts, ``random_state=seed``) runs on
``embedding_`` and, for the baseline, on ``X``; the score is
``sklearn.metrics.rand_score`` against the true labels, which are used for nothing else.
Beside the defaults: the former default width (``kernel_gamma`` twice the default, the
inverse median squared distance), the paper's choice of every positive eigenvalue
(``rank=None``, an earlier default; full run only), the defaults and k-means on the
features divided by their standard deviations (``kml_std``, ``kmeans_std``: the RBF width
set per feature, a candidate rule that does not depend on the units), two further
label-free candidate rules (``kml_pair_cv``: the width among 1/4 ... 4 times the default
whose embedding, learned from one half of ``S``, gives the other half the smallest mean
squared distance relative to all pairs, 2-fold; ``kml_eigengap``: the default width with
``q`` at the largest eigenvalue ratio ``lambda_r / lambda_{r+1}``, ``r < 50``) and
``RCA()`` on the same pairs.
Seeds 0-9 (0-2 with ``--quick``).

Oracle (diagnosis only, full run, on the sets where the defaults miss the target): the
best mean Rand index over the grid ``kernel_gamma`` = 1/4 ... 8 times the default's times
``rank`` in {"auto", 3, 10}, chosen with the true labels. If even it misses, the
method itself loses on that set.

Sets. scikit-learn's iris, wine, breast_cancer and digits, as loaded (unscaled: both
sides see the same ``X``); the protocol sets of the Yeung et al. reproductions: XOR
(``make_xor(400)``, the set of Fig. 1) and the MNIST digit sets {1, 7} and {3, 4, 5, 6} of
Table 2, with 300 training images per digit (drawn once, seed 0; pixels / 255) instead of
2,000 so that the full version stays cheap; and, full run only, the bundled UCI sets glass,
heart and sonar of the other estimators' protocols (``psdlearn.datasets.load`` scaling).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from _common import RESULTS, defaults_verdict
from scipy.spatial.distance import pdist
from sklearn.cluster import KMeans
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.metrics import rand_score
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import KernelCenterer
from threadpoolctl import threadpool_info

import psdlearn as pl
from psdlearn.kml.beta import centered_eigenpairs, optimal_beta, participation_ratio
from reproductions.experiments.report import write_results

COLUMNS = ["set", "n", "d", "classes", "kmeans_X", "kml_default", "kml_former_width",
           "difference", "std_diff", "target_met", "oracle_diff", "oracle_setting", "verdict",
           "q_auto", "kml_every_eigenvalue", "q_every", "kmeans_std", "kml_std",
           "kml_pair_cv", "pair_cv_factor", "kml_eigengap", "q_eigengap", "rca", "fit_s",
           "fit_cpu_s", "seeds"]
QUICK_SETS = ["iris", "wine", "breast_cancer", "digits", "xor", "mnist-17", "mnist-3456"]
FULL_SETS = [*QUICK_SETS, "glass", "heart", "sonar"]
N_PAIRS = 50
MNIST_PER_DIGIT = 300
#: Oracle grid: factors of the default kernel_gamma_ and rank.
ORACLE_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
ORACLE_COMPONENTS = ("auto", 3, 10)
#: Widths (factors of the default kernel_gamma_) of the held-out pair rule.
PAIR_CV_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
#: Largest number of eigenpairs the eigengap rule considers.
EIGENGAP_MAX = 50
#: Seeds of the closure check: those of the table, then fresh ones to tell a change from
#: noise.
CLOSURE_SEEDS = {"0-9": range(10), "10-29": range(10, 30)}
#: Grid (factors of the default kernel_gamma) of the maximum-variance width rule.
MAXVAR_FACTORS = 2.0 ** np.arange(-4.0, 4.01, 0.5)
#: Base-kernel rules (issue 22, third round): width factors of the default kernel_gamma
#: averaged by the multi-scale kernels, and the neighbour whose distance is the local
#: scale of the self-tuning kernel (Zelnik-Manor & Perona 2004).
MULTISCALE_FACTORS = {"multiscale": (0.25, 1.0, 4.0),
                      "multiscale5": (0.25, 0.5, 1.0, 2.0, 4.0)}
LOCAL_NEIGHBOR = 7
#: Fourth round: "local_sqrt", the self-tuning kernel with sigma_i at the ceil(sqrt(n))-th
#: neighbour; "rbf_local", the mean of the default RBF kernel and the "local" kernel.
#: Fifth round: "lin_rbf", the centered linear kernel and the default RBF kernel, each
#: scaled to unit trace after centering, summed; "poly2", the paper's other kernel, the
#: degree-2 polynomial (<x_i - m, x_j - m> / s + 1)^2, m the mean and s the mean squared
#: norm of the centered points.
KERNEL_RULES = (*MULTISCALE_FACTORS, "local", "local_pr", "local_sqrt", "rbf_local",
                "lin_rbf", "poly2")


def load(name):
    """``(X, y)`` of a benchmark set."""
    sklearn_sets = {"iris": load_iris, "wine": load_wine, "breast_cancer": load_breast_cancer,
                    "digits": load_digits}
    if name in sklearn_sets:
        X, y = sklearn_sets[name](return_X_y=True)
    elif name == "xor":
        X, y = pl.datasets.make_xor(400, random_state=0)
    elif name.startswith("mnist-"):
        X_all, y_all = pl.datasets.load("mnist", split="train")
        rng = np.random.default_rng(0)
        idx = np.concatenate([rng.choice(np.flatnonzero(y_all == int(d)), MNIST_PER_DIGIT,
                                         replace=False) for d in name[len("mnist-"):]])
        X, y = X_all[idx], y_all[idx]
    else:
        X, y = pl.datasets.load(name)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def kmeans_rand(Z, y, seed):
    k = len(np.unique(y))
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(Z)
    return 100.0 * rand_score(y, labels)


def pair_ratio(Z, pairs):
    """Mean squared distance over ``pairs`` in ``Z`` over the mean over all pairs."""
    within = np.mean(np.sum((Z[pairs[:, 0]] - Z[pairs[:, 1]]) ** 2, axis=1))
    return within / (2.0 * np.mean(np.sum((Z - Z.mean(axis=0)) ** 2, axis=1)))


def pair_cv_factor(X, S, kernel_gamma, seed):
    """Candidate rule: the width factor whose embedding, learned from one half of the
    similar pairs, keeps the other half closest relative to all pairs (2-fold; no label)."""
    perm = np.random.default_rng(seed).permutation(S.n_pairs)
    halves = [S.pairs[perm[: S.n_pairs // 2]], S.pairs[perm[S.n_pairs // 2:]]]
    scores = []
    for factor in PAIR_CV_FACTORS:
        score = 0.0
        for learn, held in ((0, 1), (1, 0)):
            half = pl.PairwiseConstraints(halves[learn], np.ones(len(halves[learn])),
                                          n_samples=len(X))
            Z = pl.KernelMetricLearner(kernel_gamma=factor * kernel_gamma,
                                       random_state=seed).fit(X, half).embedding_
            score += pair_ratio(Z, halves[held])
        scores.append(score)
    return PAIR_CV_FACTORS[int(np.argmin(scores))]


def eigengap_q(X, S, kernel_gamma, seed):
    """Candidate rule: ``q`` at the largest ratio of consecutive eigenvalues of the
    centered kernel (no label)."""
    top = pl.KernelMetricLearner(kernel_gamma=kernel_gamma,
                                 rank=min(EIGENGAP_MAX + 1, len(X) - 1),
                                 random_state=seed).fit(X, S).eigenvalues_
    r = min(EIGENGAP_MAX, len(top) - 1)
    return int(np.argmax(top[:r] / top[1:r + 1])) + 1


def chunklet_codes(S):
    """The transitive closure of the similar pairs as partial labels: one code per
    chunklet (connected component of two points or more), -1 for a point in no pair."""
    components = S.must_link_components()
    codes = components.copy()
    codes[np.bincount(components)[components] < 2] = -1
    return codes


def run_closure_check():
    """Defaults against the closure rule, both against k-means on X, per set and seed
    half; writes ``defaults_kml_closure.{md,json}``."""
    rows, per_set = [], {}
    for name in FULL_SETS:
        X, y = load(name)
        records = []
        for seed in range(max(CLOSURE_SEEDS["10-29"]) + 1):
            S = pl.PairwiseConstraints.from_labels(y, n_must=N_PAIRS, n_cannot=0,
                                                   random_state=seed)
            closure = pl.KernelMetricLearner(random_state=seed).fit(X, chunklet_codes(S))
            records.append({
                "seed": seed, "kmeans_X": kmeans_rand(X, y, seed),
                "kml_default": kmeans_rand(pl.KernelMetricLearner(random_state=seed).fit(
                    X, S).embedding_, y, seed),
                "kml_closure": kmeans_rand(closure.embedding_, y, seed),
                "closure_pairs": closure.n_similar_pairs_})
        row = {"set": name}
        for label, seeds in CLOSURE_SEEDS.items():
            part = [r for r in records if r["seed"] in seeds]
            d = np.array([r["kml_default"] - r["kmeans_X"] for r in part])
            c = np.array([r["kml_closure"] - r["kmeans_X"] for r in part])
            row[f"default_{label}"], row[f"closure_{label}"] = d.mean(), c.mean()
            row[f"paired_{label}"] = (f"{(c - d).mean():+.2f} ± "
                                      f"{(c - d).std(ddof=1) / np.sqrt(len(d)):.2f}")
            row[f"verdicts_{label}"] = (f"{defaults_verdict(d, 0.0)} / "
                                        f"{defaults_verdict(c, 0.0)}")
        row["closure_pairs"] = float(np.mean([r["closure_pairs"] for r in records]))
        print(row, flush=True)
        rows.append(row)
        per_set[name] = records
    columns = ["set", *[f"{key}_{label}" for label in CLOSURE_SEEDS
                        for key in ("default", "closure", "paired", "verdicts")],
               "closure_pairs"]

    def met(label, which):
        return [r["set"] for r in rows if r[f"verdicts_{label}"].split(" / ")[which] == "met"]

    notes = [
        "Columns: Rand index differences in % to k-means on X, means over the seeds of each "
        "half (0-9: those of defaults_kml.md; 10-29: fresh); default: KernelMetricLearner "
        "defaults on the 50 similar pairs as drawn; closure: the same estimator on their "
        "transitive closure (every pair within a chunklet, passed as partial labels); "
        "paired: closure - default, mean ± standard error over the seeds; verdicts: "
        "default / closure, as in defaults_kml.md; closure_pairs: mean |S| of the closure "
        "(50 before it).",
        *[f"Seeds {label}: the defaults meet the target on {len(met(label, 0))} of "
          f"{len(rows)} ({', '.join(met(label, 0))}), the closure on {len(met(label, 1))} "
          f"({', '.join(met(label, 1))})." for label in CLOSURE_SEEDS],
    ]
    print(write_results(RESULTS, "defaults_kml_closure", columns, rows, notes,
                        title="KernelMetricLearner: similar pairs as drawn against their "
                              "transitive closure (k-means Rand index - k-means on X)",
                        extra={"per_seed": per_set}))


def run_width_rules():
    """Widths of two label-free rules as factors of the default ``kernel_gamma``: the one
    maximizing the variance of the kernel entries ``exp(-gamma d_ij^2)`` over the pairs
    (grid ``MAXVAR_FACTORS``), and ``gamma = 1 / (2 q)`` with ``q`` the median, 90th
    percentile or largest squared distance of the similar pairs (mean over seeds 0-9);
    writes ``defaults_kml_widths.{md,json}``."""
    rows = []
    for name in FULL_SETS:
        X, y = load(name)
        sample = X[np.random.default_rng(0).permutation(len(X))[:1000]]
        dist = pdist(sample, "sqeuclidean")
        median = float(np.median(dist[dist > 0]))
        default = 0.5 / median
        variance = [np.var(np.exp(-f * default * dist)) for f in MAXVAR_FACTORS]
        quantiles = []
        for seed in range(10):
            pairs = pl.PairwiseConstraints.from_labels(y, n_must=N_PAIRS, n_cannot=0,
                                                       random_state=seed).must_link
            d_s = np.sum((X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2, axis=1)
            quantiles.append([median / np.quantile(d_s, q) for q in (0.5, 0.9, 1.0)])
        row = {"set": name, "max_variance": float(MAXVAR_FACTORS[np.argmax(variance)])}
        row.update(zip(("S_median", "S_q90", "S_max"), np.mean(quantiles, axis=0).tolist(),
                       strict=True))
        rows.append(row)
        print(row, flush=True)
    notes = [
        "Factors of the default kernel_gamma = 1 / (2 median squared distance) (median "
        "over a random sample of at most 1000 points); max_variance: the factor (grid "
        "2^-4 ... 2^4 in steps of 2^0.5) maximizing the variance of exp(-gamma d^2) over "
        "the pairs of that sample; S_median, S_q90, S_max: gamma = 1 / (2 q) with q the "
        "median, 90th percentile or largest squared distance over the 50 similar pairs, "
        "mean over seeds 0-9.",
        "On the oracle grid of defaults_kml.md (1/4 ... 8 times the default, "
        "rank='auto', seeds 0-9; a diagnostic run with the true labels, not "
        "recomputed here) iris meets the target only at 1/4 (+3.3; 1/2: -0.15, 1: -4.3) "
        "and digits only at 4 times (+0.5; 2: -0.3, 8: -2.5): a width rule that meets "
        "both must give digits a factor several times that of iris (16 times on the "
        "grid). Ratio digits / iris of these rules: " + ", ".join(
            f"{key} {rows[FULL_SETS.index('digits')][key] / rows[0][key]:.2f}"
            for key in ("max_variance", "S_median", "S_q90", "S_max"))
        + ". None is adopted: no ratio is near the one needed (the similar-pair rules "
        "even give iris the narrower kernel), and the maximum-variance width, twice the "
        "default on iris and glass, is there the former width of defaults_kml.md, below "
        "k-means on X on both.",
    ]
    print(write_results(RESULTS, "defaults_kml_widths",
                        ["set", "max_variance", "S_median", "S_q90", "S_max"], rows, notes,
                        title="KernelMetricLearner: widths of two label-free rules, as "
                              "factors of the default kernel_gamma"))


def rule_kernel(X, rule, kernel_gamma):
    """Base kernel of a candidate rule on the training points.

    ``multiscale*``: ``mean_s exp(-f_s gamma d_ij^2)`` over the factors ``f_s`` of
    ``MULTISCALE_FACTORS``; ``local``: ``exp(-d_ij^2 / (sigma_i sigma_j))`` with
    ``sigma_i`` the distance from ``x_i`` to its ``LOCAL_NEIGHBOR``-th nearest other
    point (floored at the smallest positive one, for duplicates); ``local_sqrt``: the same
    with the ``ceil(sqrt(n))``-th neighbour; ``rbf_local``: the mean of
    ``exp(-gamma d_ij^2)`` and the ``local`` kernel; ``lin_rbf``: ``G / tr(G) + R /
    tr(H R H)`` with ``G`` the linear kernel of the centered points, ``R`` the default RBF
    kernel and ``H`` the centering matrix; ``poly2``: ``(G / s + 1)^2``, ``s = tr(G) / n``."""
    if rule in ("lin_rbf", "poly2"):
        Xc = X - X.mean(axis=0)
        G = Xc @ Xc.T
        if rule == "poly2":
            return (G / (np.trace(G) / len(X)) + 1.0) ** 2
        R = np.exp(-kernel_gamma * euclidean_distances(X, squared=True))
        return G / np.trace(G) + R / np.trace(KernelCenterer().fit_transform(R))
    D2 = euclidean_distances(X, squared=True)
    if rule in MULTISCALE_FACTORS:  # "local_pr" is the kernel of "local"
        factors = MULTISCALE_FACTORS[rule]
        return sum(np.exp(-f * kernel_gamma * D2) for f in factors) / len(factors)
    neighbor = int(np.ceil(np.sqrt(len(X)))) if rule == "local_sqrt" else LOCAL_NEIGHBOR
    dist, _ = NearestNeighbors(n_neighbors=neighbor).fit(X).kneighbors()
    sigma = dist[:, -1]
    sigma = np.maximum(sigma, sigma[sigma > 0].min())
    K = np.exp(-D2 / np.outer(sigma, sigma))
    return (K + np.exp(-kernel_gamma * D2)) / 2.0 if rule == "rbf_local" else K


def kml_embedding(K, S, q=None):
    """KernelMetricLearner's full version (eps=1e-8) on a given base kernel ``K``, from
    the package's own steps, with ``q`` eigenpairs (None: rank='auto', the
    participation ratio of the centered ``K``)."""
    Kc = KernelCenterer().fit_transform(K)
    lam, V = centered_eigenpairs(Kc, participation_ratio(Kc) if q is None else q)
    pairs = S.must_link  # D_S (eq. 2): mean squared difference over the similar pairs
    dispersion = np.mean((V[pairs[:, 0]] - V[pairs[:, 1]]) ** 2, axis=0)
    beta = optimal_beta(dispersion, float(np.sqrt(lam).sum()), 1e-8)
    return V * beta


def run_kernel_rules(names, seeds):
    """The base-kernel rules against k-means on X and against the defaults, per set and
    seed; merges the per-seed records into ``defaults_kml_kernels.json`` (a record there
    gets only the rules it lacks) and rewrites ``defaults_kml_kernels.md`` from every
    record there."""
    saved = RESULTS / "defaults_kml_kernels.json"
    records = json.loads(saved.read_text())["per_seed"] if saved.exists() else {}
    for name in names:
        X, y = load(name)
        by_seed = {r["seed"]: r for r in records.setdefault(name, [])}
        start_load = os.getloadavg()[0]
        for seed in seeds:
            record = by_seed.get(seed)
            if record is not None and all(rule in record for rule in KERNEL_RULES):
                continue
            S = pl.PairwiseConstraints.from_labels(y, n_must=N_PAIRS, n_cannot=0,
                                                   random_state=seed)
            model = pl.KernelMetricLearner(random_state=seed).fit(X, S)
            if record is None:
                record = {"seed": seed, "kmeans_X": kmeans_rand(X, y, seed),
                          "kml_default": kmeans_rand(model.embedding_, y, seed),
                          "default_q": model.rank_,
                          "default_s": model.fit_time_}
                records[name].append(record)
            for rule in KERNEL_RULES:
                if rule in record:
                    continue
                t0, c0 = time.perf_counter(), time.process_time()
                K = rule_kernel(X, rule, model.kernel_gamma_)
                # local_pr: as many eigenpairs as 'auto' keeps for the default RBF kernel
                Z = kml_embedding(K, S, model.rank_ if rule == "local_pr" else None)
                record[f"{rule}_s"] = time.perf_counter() - t0
                record[f"{rule}_cpu_s"] = time.process_time() - c0
                record[rule] = kmeans_rand(Z, y, seed)
                record[f"{rule}_q"] = Z.shape[1]
            record["load"] = [start_load, os.getloadavg()[0]]
            print(name, record, flush=True)
        records[name].sort(key=lambda r: r["seed"])
    write_kernel_rules(records)


def kernel_rule_summary(rows, key):
    """Sets met by ``key`` (a rule or "default") among ``rows`` (one seed range), and the
    sets it loses and gains against the defaults."""
    met = [r["set"] for r in rows if r[f"{key}_verdict"] == "met"]
    lost = [r["set"] for r in rows if r["default_verdict"] == "met"
            and r[f"{key}_verdict"] != "met"]
    gained = [r["set"] for r in rows if r["default_verdict"] != "met"
              and r[f"{key}_verdict"] == "met"]
    return (f"met on {len(met)} of {len(rows)} ({', '.join(met) or 'none'}), lost against "
            f"the defaults: {', '.join(lost) or 'none'}, gained: "
            f"{', '.join(gained) or 'none'}")


def write_kernel_rules(records):
    """Table of the base-kernel rules from the per-seed records, one row per set and
    seed range (0-4: the exploratory run; 0-9: the seeds of defaults_kml.md; 10-29: fresh
    seeds, for a rule that passes on 0-9)."""
    ranges = {"0-4": range(5), "0-9": range(10), "10-29": range(10, 30)}
    rows = []
    for label, seeds in ranges.items():
        for name in FULL_SETS:
            part = [r for r in records.get(name, []) if r["seed"] in seeds]
            if len(part) < len(seeds):
                continue
            base = np.array([r["kmeans_X"] for r in part])
            default = np.array([r["kml_default"] for r in part])
            row = {"seeds": label, "set": name, "kmeans_X": base.mean(),
                   "default": (default - base).mean(),
                   "default_verdict": defaults_verdict(default - base, 0.0)}
            for rule in KERNEL_RULES:
                if any(rule not in r for r in part):  # a rule not run on this set yet
                    continue
                value = np.array([r[rule] for r in part])
                paired = value - default
                row[rule] = (value - base).mean()
                row[f"{rule}_paired"] = (f"{paired.mean():+.2f} ± "
                                         f"{paired.std(ddof=1) / np.sqrt(len(part)):.2f}")
                row[f"{rule}_verdict"] = defaults_verdict(value - base, 0.0)
                row[f"{rule}_q"] = float(np.mean([r[f"{rule}_q"] for r in part]))
                row[f"{rule}_cpu_s"] = float(np.median([r[f"{rule}_cpu_s"] for r in part]))
            rows.append(row)
    columns = ["seeds", "set", "kmeans_X", "default", "default_verdict",
               *[f"{rule}{suffix}" for rule in KERNEL_RULES
                 for suffix in ("", "_paired", "_verdict", "_q", "_cpu_s")]]
    notes = [
        "Columns: Rand index differences in % to k-means on X, means over the seeds of the "
        "range (0-4: the exploratory run; 0-9: the seeds of defaults_kml.md; 10-29: fresh "
        "seeds, run for every rule once rbf_local passed on 0-9); default: "
        "KernelMetricLearner defaults; per rule: its difference, its paired difference "
        "to the defaults (mean ± standard error over the seeds), its verdict as in "
        "defaults_kml.md, the eigenpairs kept (mean q) and the median CPU seconds of "
        "kernel + eigendecomposition + beta (default_s in the JSON: the default fit).",
        "Rules (gamma the default kernel_gamma, 1 / (2 sigma^2), sigma the median "
        "distance; the method's own steps on the given base kernel: centering, "
        "rank='auto', beta): multiscale: K_ij = (1/3) sum_f exp(-f gamma d_ij^2), "
        "f in {1/4, 1, 4}: the directions of a wide and a narrow kernel in one "
        "eigendecomposition, for the S-driven weights to choose among; multiscale5: the "
        "same over f in {1/4, 1/2, 1, 2, 4}; local: the self-tuning kernel of Zelnik-Manor "
        "& Perona (2004), K_ij = exp(-d_ij^2 / (sigma_i sigma_j)), sigma_i the distance "
        "from x_i to its 7th nearest other point (sklearn NearestNeighbors); local_pr "
        "(our own rule, stated before it was measured): the local kernel with as many "
        "eigenpairs as 'auto' keeps for the default RBF kernel. Its rationale: 'local' "
        "gains iris and digits, but its flat spectrum makes 'auto' keep 44-346 eigenpairs "
        "(2-43 by default), and beta, which ignores lambda_r, then gives the near-null "
        "ones much of the weight (the failure of rank=None in defaults_kml.md).",
        "Fourth round, two rules stated before they were measured: local_sqrt: the local "
        "kernel with sigma_i at the ceil(sqrt(n))-th neighbour (12-43 here) instead of the "
        "7th, a neighbour count that grows with n, for rows that span more of a broad "
        "cluster while keeping the density adaptation that gained iris and digits; "
        "rbf_local: the mean of the default RBF kernel and the local kernel, the default's "
        "broad directions and the local ones in one eigendecomposition for beta to weigh.",
        "Fifth round, two rules stated before they were measured (stop 33): lin_rbf: "
        "G / tr(G) + R / tr(H R H), G the linear kernel of the centered points, R the "
        "default RBF kernel, H the centering matrix: the baseline clusters X, and beta "
        "only reweights the eigenvectors of the base kernel, so this puts the input "
        "space's principal directions (where RCA, a diagonal-free version of the same "
        "within-pair whitening, reaches 97 on iris) among them at equal trace, while the "
        "RBF half keeps the nonlinear directions of xor; poly2: the degree-2 polynomial "
        "kernel the paper names beside the RBF one, (<x_i - m, x_j - m> / s + 1)^2, m the "
        "mean and s the mean squared norm of the centered points: linear and quadratic "
        "terms (x_1 x_2 separates xor) in one kernel with no width to choose.",
        *[f"Seeds {label}, {key}: {kernel_rule_summary(part, key)}."
          for label in ranges
          for part in [[r for r in rows if r["seeds"] == label]] if part
          for key in ("default", *KERNEL_RULES)
          if all(f"{key}_verdict" in r for r in part)],
        "Verdict: no rule is adopted. Only rbf_local meets more sets than the defaults "
        "without losing one they meet, on seeds 0-9 and on the fresh seeds 10-29 (7 of 10: "
        "it gains digits, +0.89 ± 0.22 and +0.75 ± 0.17 paired), but it leaves iris where it "
        "was, turns MNIST {3, 4, 5, 6} from below within noise into a miss (paired -1.03 ± "
        "0.69 and -1.13 ± 0.61) and lowers glass (-2.30 ± 0.59 on 10-29), heart, sonar and "
        "wine: it trades one miss for another at a mean paired change of -0.29 and -0.45 "
        "points over the ten sets. local_sqrt, like local, gains iris and digits and loses "
        "wine (-11), breast cancer (-26) and xor (-46). The multi-scale kernels do not help "
        "iris "
        "(slightly below the defaults) and cost glass; "
        "multiscale is also below the defaults on MNIST {3, 4, 5, 6} and sonar. The "
        "self-tuning kernel gains iris, digits and MNIST {1, 7} by several standard "
        "errors but loses wine and breast cancer by about 20 points, also with the "
        "defaults' number of eigenpairs (local_pr), and falls 40-49 points below the "
        "defaults on xor: with sigma_i the 7th-neighbour distance, each row of the kernel "
        "is concentrated on a few neighbours (K_ij near exp(-1) at the 7th), far narrower "
        "than the median width, and its top eigenvectors follow local structure instead "
        "of the few broad clusters of those sets.",
        "Fifth round, neither adopted. lin_rbf meets iris on both seed ranges (paired "
        "+6.85 ± 0.27 and +6.99 ± 0.16: the input space's directions are what iris needs) "
        "but loses wine (-1.47 ± 0.09 and -1.16 ± 0.31 paired, now 0.1 below k-means on "
        "X) and MNIST {1, 7} (-0.63 ± 0.10, -0.54 ± 0.06), costs breast cancer 5 points "
        "(still met) and leaves digits (+0.03): 6 of 10 on 0-9 and 5 of 10 on 10-29, "
        "against the defaults' 6. poly2 meets iris and MNIST {3, 4, 5, 6} but loses wine, "
        "breast cancer, MNIST {1, 7} and glass by 1-14 points. The mixing weight of "
        "lin_rbf was fixed (equal traces) before the run and is not tuned after it.",
    ]
    print(write_results(RESULTS, "defaults_kml_kernels", columns, rows, notes,
                        title="KernelMetricLearner: base-kernel rules (k-means Rand index "
                              "- k-means on X)",
                        extra={"per_seed": records}))


def kernel_rules_note():
    """The note of defaults_kml.md on the base-kernel rules, from the seeds 0-9 of
    ``defaults_kml_kernels.json`` (empty before that run)."""
    saved = RESULTS / "defaults_kml_kernels.json"
    if not saved.exists():
        return []
    rows = [r for r in json.loads(saved.read_text())["rows"] if r["seeds"] == "0-9"]
    labels = {"multiscale": "(h) the mean of RBF kernels at 1/4, 1 and 4 times the "
                            "default kernel_gamma (multiscale)",
              "multiscale5": "(i) the same at 1/4, 1/2, 1, 2, 4 times (multiscale5)",
              "local": "(j) the self-tuning kernel of Zelnik-Manor & Perona (2004), "
                       "exp(-d_ij^2 / (sigma_i sigma_j)), sigma_i the distance to the 7th "
                       "nearest neighbour (local)",
              "local_pr": "(k) that kernel with the defaults' number of eigenpairs "
                          "(local_pr, our own rule)",
              "local_sqrt": "(l) the self-tuning kernel with sigma_i at the ceil(sqrt(n))-th "
                            "neighbour (local_sqrt, our own rule)",
              "rbf_local": "(m) the mean of the default RBF kernel and the local kernel "
                           "(rbf_local, our own rule)",
              "lin_rbf": "(n) the unit-trace linear kernel plus the unit-trace RBF kernel "
                         "(lin_rbf, our own rule)",
              "poly2": "(o) the degree-2 polynomial kernel (poly2)"}
    return [
        "Eight base-kernel rules for the wider kernel iris asks and the narrower one "
        "digits asks (python benchmarks/bench_defaults_kml.py --kernel-rules 0-9; "
        "defaults_kml_kernels.md defines them and has the exploratory seeds 0-4), against "
        "k-means on X over seeds 0-9: " + "; ".join(
            f"{label}: {kernel_rule_summary(rows, rule)} ("
            + ", ".join(f"{r['set']} {r[rule]:+.2f}" for r in rows)
            + "; paired difference to the defaults, mean ± standard error over the seeds: "
            + ", ".join(f"{r['set']} {r[f'{rule}_paired']}" for r in rows) + ")"
            for rule, label in labels.items()) + ".",
        "None is adopted. The multi-scale kernels leave iris where it was and lose glass; "
        "the self-tuning kernel meets iris and digits but loses wine and breast cancer by "
        "10-33 points, with either number of eigenpairs or neighbour count. Only (m) meets "
        "more sets without losing one the defaults meet, also on the fresh seeds 10-29 "
        "(digits gained), but it leaves iris missed, turns MNIST {3, 4, 5, 6} from below "
        "within noise into a miss and lowers glass, heart, sonar and wine: one miss traded "
        "for another at a negative mean paired change (defaults_kml_kernels.md). (n) "
        "meets iris by 7 points paired, on both seed ranges, but drops wine just below "
        "k-means on X and MNIST {1, 7} by 0.5-0.6 points, and leaves digits; (o) meets "
        "iris and loses four sets by 1-14 points.",
    ]


def run_set(name, seeds, every):
    X, y = load(name)
    per_seed = []
    for seed in seeds:
        S = pl.PairwiseConstraints.from_labels(y, n_must=N_PAIRS, n_cannot=0,
                                               random_state=seed)
        t0, c0 = time.perf_counter(), time.process_time()
        model = pl.KernelMetricLearner(random_state=seed).fit(X, S)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        former = pl.KernelMetricLearner(kernel_gamma=2.0 * model.kernel_gamma_,
                                        random_state=seed).fit(X, S)
        spread = X.std(axis=0)
        X_std = X / np.where(spread > 0, spread, 1.0)
        record = {"seed": seed, "kmeans_X": kmeans_rand(X, y, seed),
                  "kml_default": kmeans_rand(model.embedding_, y, seed),
                  "kml_former_width": kmeans_rand(former.embedding_, y, seed),
                  "kmeans_std": kmeans_rand(X_std, y, seed),
                  "kml_std": kmeans_rand(pl.KernelMetricLearner(random_state=seed).fit(
                      X_std, S).embedding_, y, seed),
                  "kernel_gamma": model.kernel_gamma_,
                  "q_auto": model.rank_, "fit_s": seconds, "fit_cpu_s": cpu,
                  "rca": kmeans_rand(pl.RCA().fit_transform(X, S), y, seed)}
        factor = pair_cv_factor(X, S, model.kernel_gamma_, seed)
        record["pair_cv_factor"] = factor
        record["kml_pair_cv"] = kmeans_rand(pl.KernelMetricLearner(
            kernel_gamma=factor * model.kernel_gamma_, random_state=seed).fit(
            X, S).embedding_, y, seed)
        q = eigengap_q(X, S, model.kernel_gamma_, seed)
        record["q_eigengap"] = q
        record["kml_eigengap"] = kmeans_rand(pl.KernelMetricLearner(
            rank=q, random_state=seed).fit(X, S).embedding_, y, seed)
        if every:
            paper = pl.KernelMetricLearner(rank=None, random_state=seed).fit(X, S)
            record["kml_every_eigenvalue"] = kmeans_rand(paper.embedding_, y, seed)
            record["q_every"] = paper.rank_
        per_seed.append(record)

    def mean(key):
        values = [r[key] for r in per_seed if key in r]
        return float(np.mean(values)) if values else None

    diff = np.array([r["kml_default"] - r["kmeans_X"] for r in per_seed])
    oracle = oracle_setting = None
    if every and diff.mean() < 0:
        oracle, oracle_setting = run_oracle(X, y, per_seed)
    row = {"set": name, "n": len(X), "d": X.shape[1], "classes": len(np.unique(y)),
           "kmeans_X": mean("kmeans_X"), "kml_default": mean("kml_default"),
           "kml_former_width": mean("kml_former_width"),
           "difference": float(diff.mean()), "std_diff": float(diff.std()),
           "target_met": bool(diff.mean() >= 0.0), "oracle_diff": oracle,
           "oracle_setting": oracle_setting,
           "verdict": defaults_verdict(diff, 0.0, oracle),
           "former_verdict": defaults_verdict(
               np.array([r["kml_former_width"] - r["kmeans_X"] for r in per_seed]), 0.0),
           "q_auto": mean("q_auto"),
           "kml_every_eigenvalue": mean("kml_every_eigenvalue"), "q_every": mean("q_every"),
           "kmeans_std": mean("kmeans_std"), "kml_std": mean("kml_std"),
           "kml_pair_cv": mean("kml_pair_cv"), "pair_cv_factor": mean("pair_cv_factor"),
           "kml_eigengap": mean("kml_eigengap"), "q_eigengap": mean("q_eigengap"),
           "pair_cv_verdict": defaults_verdict(
               np.array([r["kml_pair_cv"] - r["kmeans_X"] for r in per_seed]), 0.0),
           "eigengap_verdict": defaults_verdict(
               np.array([r["kml_eigengap"] - r["kmeans_X"] for r in per_seed]), 0.0),
           "rca": mean("rca"), "fit_s": float(np.median([r["fit_s"] for r in per_seed])),
           "fit_cpu_s": float(np.median([r["fit_cpu_s"] for r in per_seed])),
           "seeds": len(per_seed)}
    print(row, flush=True)
    return row, per_seed


def run_oracle(X, y, per_seed):
    """Best mean difference to k-means on X over the oracle grid (true labels: diagnosis
    only), and its setting."""
    best = None
    for factor in ORACLE_FACTORS:
        for q in ORACLE_COMPONENTS:
            diffs = []
            for r in per_seed:
                S = pl.PairwiseConstraints.from_labels(y, n_must=N_PAIRS, n_cannot=0,
                                                       random_state=r["seed"])
                model = pl.KernelMetricLearner(kernel_gamma=factor * r["kernel_gamma"],
                                               rank=q, random_state=r["seed"])
                Z = model.fit(X, S).embedding_
                diffs.append(kmeans_rand(Z, y, r["seed"]) - r["kmeans_X"])
            if best is None or np.mean(diffs) > best[0]:
                best = (float(np.mean(diffs)), f"{factor:g} x kernel_gamma, q={q}")
    return best


#: The rule of the signed protocol, stated before it was measured (issue 36, item 7).
SIGNED_RULE = (
    "Rule under test (stated before measuring): with must-links and cannot-links given, "
    "KernelMetricLearner() (kernel_gamma='auto') chooses the RBF width among 1/4, 1/2, 1, "
    "2 and 4 times the label-free width 1 / (2 sigma^2) (sigma the median distance) by "
    "3-fold ConstraintKFold cross-validation over the given pairs only: beta is learned "
    "from each fold's training must-links, and the width with the best mean held-out ROC "
    "AUC of minus the learned squared distance (must-links positive) wins, ties to the "
    "width nearest the label-free one. Target: k-means on the default embedding at least "
    "as good as k-means on X (mean Rand index over seeds 0-9) on every set of "
    "defaults_kml.md, at a fit cost of at most 10 times the label-free default's.")
#: Repeats of each timed fit in the signed protocol (the median is kept).
SIGNED_REPEATS = 3


def median_fit(make, X, S):
    """The fitted model of ``make()`` on ``(X, S)`` and the median wall / CPU seconds of
    ``SIGNED_REPEATS`` fits."""
    wall, cpu = [], []
    for _ in range(SIGNED_REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        model = make().fit(X, S)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return model, float(np.median(wall)), float(np.median(cpu))


def run_signed(names, seeds):
    """The defaults with both signs (``N_PAIRS`` must-links and ``N_PAIRS`` cannot-links)
    against k-means on X, and the cost of the width cross-validation against the
    label-free default on the same must-links; writes ``defaults_kml_signed.{md,json}``."""
    rows, per_set = [], {}
    for name in names:
        X, y = load(name)
        start_load = os.getloadavg()[0]
        records = []
        for seed in seeds:
            C = pl.PairwiseConstraints.from_labels(y, n_must=N_PAIRS, n_cannot=N_PAIRS,
                                                   random_state=seed)
            S = pl.PairwiseConstraints(C.must_link, np.ones(C.n_must), n_samples=len(X))
            model, wall, cpu = median_fit(
                lambda seed=seed: pl.KernelMetricLearner(random_state=seed), X, C)
            free, free_wall, free_cpu = median_fit(
                lambda seed=seed: pl.KernelMetricLearner(random_state=seed), X, S)
            factor = model.kernel_gamma_ / free.kernel_gamma_
            # diagnosis only (true labels): the best width of the same grid for this seed
            grid = {f"{g / free.kernel_gamma_:g}": kmeans_rand(pl.KernelMetricLearner(
                kernel_gamma=g, random_state=seed).fit(X, S).embedding_, y, seed)
                for g in model.cv_kernel_gammas_}
            records.append({
                "seed": seed, "kmeans_X": kmeans_rand(X, y, seed),
                "kml_signed": kmeans_rand(model.embedding_, y, seed),
                "kml_label_free": kmeans_rand(free.embedding_, y, seed),
                "factor": float(factor), "grid": grid,
                "fit_s": wall, "fit_cpu_s": cpu, "free_fit_s": free_wall,
                "free_fit_cpu_s": free_cpu})
        d = np.array([r["kml_signed"] - r["kmeans_X"] for r in records])
        free_d = np.array([r["kml_label_free"] - r["kmeans_X"] for r in records])
        factors = [f"{r['factor']:g}" for r in records]
        oracle = max(np.mean([r["grid"][f] - r["kmeans_X"] for r in records])
                     for f in records[0]["grid"])
        ratio = np.array([r["fit_cpu_s"] / r["free_fit_cpu_s"] for r in records])
        row = {"set": name, "n": len(X), "kmeans_X": float(np.mean([r["kmeans_X"]
                                                                     for r in records])),
               "kml_signed": float(np.mean([r["kml_signed"] for r in records])),
               "difference": float(d.mean()),
               "se_diff": float(d.std(ddof=1) / np.sqrt(len(d))),
               "verdict": defaults_verdict(d, 0.0, oracle),
               "label_free_diff": float(free_d.mean()),
               "grid_oracle_diff": float(oracle),
               "chosen_factors": ", ".join(f"{f} x{factors.count(f)}"
                                           for f in sorted(set(factors), key=float)),
               "fit_s": float(np.median([r["fit_s"] for r in records])),
               "free_fit_s": float(np.median([r["free_fit_s"] for r in records])),
               "cpu_ratio": float(np.median(ratio)), "max_cpu_ratio": float(ratio.max()),
               "seeds": len(records), "load": [start_load, os.getloadavg()[0]]}
        print(row, flush=True)
        rows.append(row)
        per_set[name] = records
    met = [r["set"] for r in rows if r["verdict"] == "met"]
    missed = [f"{r['set']} ({r['verdict']}, {r['difference']:+.2f})" for r in rows
              if r["verdict"] != "met"]
    columns = ["set", "n", "kmeans_X", "kml_signed", "difference", "se_diff", "verdict",
               "label_free_diff", "grid_oracle_diff", "chosen_factors", "fit_s",
               "free_fit_s", "cpu_ratio", "max_cpu_ratio", "seeds"]
    notes = [
        SIGNED_RULE,
        f"Protocol: per seed, PairwiseConstraints.from_labels(y, n_must={N_PAIRS}, "
        f"n_cannot={N_PAIRS}, random_state=seed), the sets and the k-means scoring of "
        "defaults_kml.md (n_clusters = number of classes, 10 restarts, Rand index in %, "
        "true labels used for scoring only). kml_signed: KernelMetricLearner(random_state="
        "seed).fit(X, C) with both signs; label_free_diff: the same estimator on the "
        "must-links of C alone (the label-free width), minus k-means on X.",
        "Columns: difference = kml_signed - kmeans_X, mean over seeds, se_diff its "
        "standard error; verdict as in defaults_kml.md, the oracle being grid_oracle_diff, "
        "the best mean difference over the five widths of the grid chosen WITH the true "
        "labels (diagnosis only); chosen_factors: the widths the cross-validation chose, "
        "as factors of the label-free width, with their counts over the seeds; fit_s / "
        "free_fit_s: median wall seconds of the fit with both signs / of the label-free "
        f"fit (median of {SIGNED_REPEATS} repeats per seed, then over seeds); cpu_ratio / "
        "max_cpu_ratio: median / largest over seeds of the ratio of their process CPU "
        "times (less inflated than wall time by other jobs on a shared machine).",
        f"Target met on {len(met)} of {len(rows)} sets ({', '.join(met) or 'none'}); "
        f"missed on {', '.join(missed) or 'none'}.",
        "1-minute load average at the start / end of each set's run on "
        f"{os.cpu_count()} cores: " + ", ".join(
            f"{r['set']} {r['load'][0]:.1f} / {r['load'][1]:.1f}" for r in rows) + ". "
        "Threads of the numerical libraries: " + ", ".join(
            f"{info['internal_api']} {info['num_threads']}" for info in threadpool_info())
        + " (set OPENBLAS_NUM_THREADS / OMP_NUM_THREADS: on a loaded machine, threaded "
        "BLAS oversubscribes the cores and inflates small eigendecompositions by up to "
        "100 times, which distorts the time ratio).",
    ]
    print(write_results(RESULTS, "defaults_kml_signed", columns, rows, notes,
                        title="KernelMetricLearner with must-links and cannot-links: "
                              "k-means Rand index against k-means on X (50 + 50 pairs)",
                        extra={"per_seed": per_set}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="7 sets, 3 seeds, without the every-eigenvalue column")
    parser.add_argument("--sets", help="comma-separated sets to run, merged into the "
                        "table already in benchmarks/results (full run only; a name that "
                        "is no set, e.g. 'none', rewrites the table from it)")
    parser.add_argument("--closure", action="store_true",
                        help="only the check of the transitive-closure rule (30 seeds)")
    parser.add_argument("--width-rules", action="store_true",
                        help="only the widths of the two further label-free width rules")
    parser.add_argument("--signed", action="store_true",
                        help="only the defaults with must-links and cannot-links (with "
                        "--sets), written to defaults_kml_signed")
    parser.add_argument("--kernel-rules", metavar="SEEDS",
                        help="only the base-kernel rules, on seeds FIRST-LAST (with --sets)")
    args = parser.parse_args()
    if args.signed:
        names = args.sets.split(",") if args.sets else FULL_SETS
        run_signed([n for n in FULL_SETS if n in names], range(3 if args.quick else 10))
        return
    if args.kernel_rules:
        first, last = map(int, args.kernel_rules.split("-"))
        names = args.sets.split(",") if args.sets else FULL_SETS
        run_kernel_rules([n for n in FULL_SETS if n in names], range(first, last + 1))
        return
    if args.closure or args.width_rules:
        run_closure_check() if args.closure else run_width_rules()
        return
    names = QUICK_SETS if args.quick else FULL_SETS
    seeds = range(3 if args.quick else 10)
    done, per_set = {}, {}
    if args.sets and not args.quick:
        names = [n for n in FULL_SETS if n in args.sets.split(",")]
        saved = RESULTS / "defaults_kml.json"
        if saved.exists():
            payload = json.loads(saved.read_text())
            # rows of this protocol only: every column present, the same number of seeds
            done = {r["set"]: r for r in payload["rows"]
                    if set(COLUMNS) <= set(r) and r["seeds"] == len(seeds)}
            per_set = {k: v for k, v in payload.get("per_seed", {}).items() if k in done}
    for name in names:
        start_load = os.getloadavg()[0]
        row, per_seed = run_set(name, seeds, every=not args.quick)
        row["load"] = [start_load, os.getloadavg()[0]]
        done[name], per_set[name] = row, per_seed
    rows = [done[n] for n in FULL_SETS if n in done]

    def sets(key, value):
        return [r["set"] for r in rows if r[key] == value]

    def listing(names):
        return ", ".join(names) or "none"

    def paired(records, key):
        d = np.array([r[key] - r["kml_default"] for r in records])
        return f"{d.mean():+.2f} ± {d.std(ddof=1) / np.sqrt(len(d)):.2f}"

    former_met = sets("former_verdict", "met")
    notes = [
        "Columns: Rand index in %, means over seeds; difference = KernelMetricLearner "
        "defaults - k-means on X (std over seeds); target_met: difference >= 0; "
        "kml_former_width: the same with the former default width, kernel_gamma = "
        "1 / median squared distance (twice the default); oracle_diff / oracle_setting: "
        "best mean difference over kernel_gamma = 1/4 ... 8 times the default's and "
        "rank in {auto, 3, 10}, chosen WITH the true labels (diagnosis only, on "
        "the sets that miss); verdict: 'met', 'below within noise' (mean difference "
        "negative but within two standard errors over the seeds), 'default misses "
        "(oracle meets)' or 'method loses (oracle also misses)'; q_auto / q_every: "
        "eigenpairs kept by rank='auto' (participation ratio) / None (every "
        "positive eigenvalue, the paper's choice); kmeans_std / kml_std: k-means and the "
        "defaults on the features divided by their standard deviations; kml_pair_cv / "
        "pair_cv_factor, kml_eigengap / q_eigengap: the two candidate rules of the next "
        "notes and their mean width factor / number of eigenpairs; rca: RCA() on the "
        "same pairs, then k-means; fit_s: median seconds of the default fit.",
        f"Defaults: target met on {len(sets('verdict', 'met'))} of {len(rows)} sets "
        f"({listing(sets('verdict', 'met'))}); below within noise on "
        f"{listing(sets('verdict', 'below within noise'))}; default misses (oracle meets) "
        f"on {listing(sets('verdict', 'default misses (oracle meets)'))}; method loses "
        f"on {listing(sets('verdict', 'method loses (oracle also misses)'))}.",
        f"Former width (1 / median squared distance): met on {len(former_met)} of "
        f"{len(rows)} ({listing(former_met)}); below within noise on "
        f"{listing(sets('former_verdict', 'below within noise'))}. The default width "
        "1 / (2 sigma^2), sigma the median distance (the usual form of the median "
        "heuristic), was chosen over 1/8 ... 4 times the former width and the eigenvalue "
        "cut-offs 'auto', 90/95/99% of the trace, every eigenvalue and 1 ... 50 "
        "eigenpairs, by the rule of issue 22 (more sets met, no set that passed lost), "
        "using the benchmark's Rand index but no label inside the estimator: it is the "
        "only candidate that met the target on more sets without losing one (1/8 of the "
        "former width met iris but lost mnist-17; 'auto' stayed the best cut-off).",
        "Why an earlier default lost: beta_r = c / D_rr / sum(1 / D) ignores lambda_r, so "
        "with every eigenvector kept the many near-null ones that vary little over the 50 "
        "pairs take much of the weight and the embedding is noise "
        "(kml_every_eigenvalue); rank='auto' removes them.",
        "Where the defaults miss: the method's only term shrinks the directions that vary "
        "over the similar pairs; with no term for the separation of classes, a direction "
        "that separates two overlapping classes but also varies within them is shrunk "
        "(iris: versicolor against virginica; heart). Where the oracle meets the target a "
        "wider (iris) or narrower (digits) kernel would, but no rule from the data alone "
        "was found that picks it (the ratio of similar-pair to all-pair distances in the "
        "embedding, the method's own criterion, does not track the Rand index across "
        "widths). RCA, on the same pairs, leads on iris and wine.",
        "Two more label-free rules (issue 22): (a) the width maximizing the alignment of "
        "the centered base kernel with the similar pairs, mean over S of Kc_ij divided by "
        "the root mean square of Kc, over 1/8 ... 8 times the default (exploratory run, "
        "seeds 0-4, not recomputed here): below the default on 6 of the 7 small sets "
        "(iris -6.5, breast_cancer +3.7 instead of +8.4, sonar +2.0 instead of +7.4), "
        "equal on xor; (b) a width per feature, the defaults on standardized features "
        "(kml_std, against k-means on X): " + ", ".join(
            f"{r['set']} {r['kml_std'] - r['kmeans_X']:+.1f}" for r in rows)
        + ". It helps where the features have unrelated units and hurts the pixel sets, "
        "so neither rule meets iris and digits without losing a set. Against k-means on "
        "the same standardized features (kml_std - kmeans_std): " + ", ".join(
            f"{r['set']} {r['kml_std'] - r['kmeans_std']:+.1f}" for r in rows
            if r["set"] in ("iris", "heart", "digits"))
        + "; the method loses on heart in both scalings.",
        "The paper (Yeung et al. 2007) gives no width for its RBF kernel and keeps every "
        "positive eigenvalue (section 2, c = sum_r sqrt(lambda_r)): that cut-off is "
        "kml_every_eigenvalue; it has no rule to transfer for either choice.",
        "Two further label-free rules, judged by the same rule (more sets met, no set that "
        "passed lost): " + "; ".join(
            f"{label}: met on {len(sets(key, 'met'))} of {len(rows)} "
            f"({listing(sets(key, 'met'))}), lost against the defaults: "
            + listing([r['set'] for r in rows
                       if r['verdict'] == 'met' and r[key] != 'met'])
            + ", gained: " + listing([r['set'] for r in rows
                                      if r['verdict'] != 'met' and r[key] == 'met'])
            + " (" + ", ".join(f"{r['set']} {r[col] - r['kmeans_X']:+.2f}" for r in rows)
            + "; paired difference to the defaults, mean ± standard error over the seeds: "
            + ", ".join(f"{r['set']} {paired(per_set[r['set']], col)}" for r in rows)
            + ")"
            for label, key, col in (
                ("(c) the held-out pair rule (kml_pair_cv)", "pair_cv_verdict",
                 "kml_pair_cv"),
                ("(d) the eigengap cut-off (kml_eigengap)", "eigengap_verdict",
                 "kml_eigengap"))) + ".",
        "Neither is adopted. (c) and (d) meet iris no more than the defaults; where the "
        "count moves, it moves within noise (a set whose defaults are 'below within "
        "noise', MNIST {3, 4, 5, 6} in the 10-seed run, flips to met by a paired change "
        "smaller than its standard error), while (c) is several standard errors below the "
        "defaults on wine, breast_cancer, glass and sonar and (d) loses sonar.",
        "Three more (python benchmarks/bench_defaults_kml.py --closure / --width-rules): "
        "(e) S read as the transitive closure of the similar pairs (every pair within a "
        "chunklet, as RCA groups pairs and as the estimator reads partial labels; "
        "defaults_kml_closure.md). On seeds 0-9 it meets the target on 7 of 10 and loses "
        "no set: it gains mnist-3456 (+0.59 against k-means on X; paired change to the "
        "defaults +0.70 ± 0.42), while iris stays (-0.04 ± 0.27). On 20 fresh seeds "
        "(10-29) it meets the same 6 sets as the defaults and its paired change on "
        "mnist-3456 is -0.09 ± 0.32 (iris +0.22 ± 0.18): the gain was noise, so it is not "
        "adopted. (f) the width maximizing the variance of the kernel entries and (g) "
        "widths from quantiles of the similar-pair distances (defaults_kml_widths.md): on "
        "the oracle grid iris meets the target only at 1/4 of the default width factor "
        "and digits only at 4 times, but these rules give digits at most 1.4 times the "
        "factor of iris (the similar-pair ones less than iris'); not adopted.",
        *kernel_rules_note(),
        "CPU: fit_cpu_s is the median process time of the default fit beside its wall "
        "time fit_s. 1-minute load average at the start / end of each set's run on "
        f"{os.cpu_count()} cores (above about 1, other jobs shared the machine and the "
        "times are inflated): " + ", ".join(
            f"{r['set']} {r['load'][0]:.1f} / {r['load'][1]:.1f}" for r in rows) + ".",
    ]
    print(write_results(RESULTS, "defaults_kml", COLUMNS, rows, notes,
                        title="KernelMetricLearner defaults: k-means Rand index against "
                              "k-means on X (|S| = 50 similar pairs)",
                        extra={"per_seed": per_set}))


if __name__ == "__main__":
    main()
