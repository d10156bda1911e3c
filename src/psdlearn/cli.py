"""The ``psdlearn`` command: learn a kernel from must-link / cannot-link pairs on files.

Each command is a thin layer over the public API (:class:`psdlearn.NPKL`,
:class:`psdlearn.ConstrainedClustering`, :mod:`psdlearn.datasets`); ``psdlearn COMMAND
--help`` describes its options and gives an example.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

__all__ = ["main"]

DESCRIPTION = """\
Learn a kernel (a similarity between points) from pairs of points that must or
must not be grouped together, and cluster with it.

Input files:
  features     one row per point: a CSV of numbers without a header (.csv),
               a NumPy array (.npy), or LIBSVM text (any other name)
  constraints  a CSV of rows i,j,label: i and j are row numbers of the
               features file, counted from 0 (the first row is 0; use
               --one-based for a file that counts from 1); label is +1 or
               'must' (same group), -1 or 'cannot' (different groups);
               a header line i,j,label is optional
"""

EPILOG = """\
examples:
  psdlearn demo
  psdlearn datasets
  psdlearn cluster features.csv constraints.csv --n-clusters 3 -o labels.csv
  psdlearn fit features.csv constraints.csv -o embedding.npy --n-clusters 3
  psdlearn query features.csv constraints.csv --n 20 -k 3 -o next_pairs.csv
  psdlearn suspects features.csv constraints.csv --top 10 -o suspects.csv

Run 'psdlearn COMMAND --help' for the options of a command.
"""

FEATURES_HELP = "features file: .csv (numbers, no header), .npy, or LIBSVM text"
CONSTRAINTS_HELP = ("constraints file: CSV rows i,j,label (i, j: row numbers of the features "
                    "file, from 0; label +1/must or -1/cannot)")
ONE_BASED_HELP = ("the constraints file counts rows from 1 (the first row of the features "
                  "file is 1); default: from 0")
SOLVER_HELP = ("optimization algorithm (default: bcd): bcd, block coordinate descent, fast, "
               "every loss but pcp; admm, for the pcp and square losses; mfpc and simplenpkl, "
               "the papers' baselines; sdp, the exact convex problem for a few hundred points "
               "(needs the 'sdp' extra)")
LOSS_HELP = ("how violated pairs are penalized (default: hinge): hinge, squared_hinge, "
             "square, linear; pcp, the constraints of Hu & Kwok (2013), for the admm, mfpc, "
             "simplenpkl and sdp algorithms")


def _cmd_datasets(args):
    from psdlearn import datasets

    rows = datasets.list_datasets()
    print(f"{'name':<16}{'n':>8}{'d':>8}{'classes':>9}  {'source':<10}{'available':<10}")
    for info in rows:
        n, d, c = info.n_samples, info.n_features, info.n_classes
        print(
            f"{info.name:<16}{'' if n is None else n:>8}{'' if d is None else d:>8}"
            f"{'' if c is None else c:>9}  {info.source:<10}"
            f"{'yes' if info.available else 'no':<10}"
        )
    return 0


def _cmd_demo(args):
    from sklearn.cluster import KMeans

    import psdlearn as pl

    X, y = pl.datasets.load(args.dataset)
    n_classes = len(np.unique(y))
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6,
                                           random_state=args.seed)
    print(f"data set {args.dataset}: n={X.shape[0]}, d={X.shape[1]}, classes={n_classes}; "
          f"{C.n_must} must-link + {C.n_cannot} cannot-link pairs (0.6n each, the protocol "
          "of Hu & Kwok 2015)")
    t0 = time.perf_counter()
    km = KMeans(n_clusters=n_classes, n_init=20, random_state=args.seed).fit_predict(X)
    t_km = time.perf_counter() - t0
    print(f"{'method':<34}{'Rand index':>11}{'time (s)':>10}")
    print(f"{'k-means on X':<34}{pl.metrics.pairwise_accuracy(y, km):>11.4f}{t_km:>10.3f}")
    # the demo reports clustering quality, not the duality certificate (``fit`` does)
    model = pl.NPKL(loss=args.loss, solver="bcd", certificate_tol=None,
                    random_state=args.seed)
    t0 = time.perf_counter()
    model.fit(X, C)
    labels = pl.kernel_kmeans(model.embedding_, n_classes, n_init=20, random_state=args.seed)
    t_npkl = time.perf_counter() - t0
    name = f"NPKL-BCD ({args.loss}, r={model.rank_}) + k-means"
    print(f"{name:<34}{pl.metrics.pairwise_accuracy(y, labels):>11.4f}{t_npkl:>10.3f}")
    print(f"BCD: {model.n_iter_} sweeps, objective {model.objective_history_[0]:.4g} -> "
          f"{model.objective_history_[-1]:.4g} (fit {model.fit_time_:.3f} s incl. compilation "
          "on first use)")
    return 0


def _read_features(path):
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".npy"):
        try:
            X = np.load(path)
        except (ValueError, EOFError) as exc:
            raise ValueError(f"{path}: not a valid .npy file ({exc}).") from None
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{path}: features must be real numbers, got dtype {X.dtype}.")
    elif name.endswith((".csv", ".csv.gz", ".txt")):
        try:
            X = np.loadtxt(path, delimiter=",", ndmin=2, encoding="utf-8-sig")
        except ValueError as exc:
            raise ValueError(f"{path}: could not read a numeric CSV matrix ({exc}).") from None
    else:
        from sklearn.datasets import load_svmlight_file

        try:
            X, _ = load_svmlight_file(str(path))
        except ValueError as exc:
            raise ValueError(f"{path}: not a valid LIBSVM file ({exc}).") from None
        if not np.all(np.isfinite(X.data)):
            raise ValueError(f"{path}: every feature must be a finite number.")
        # LIBSVM files stay sparse: the neighbour search takes CSR input as it is
        return X.tocsr().astype(np.float64)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{path}: features must be a 2-D matrix, got shape {X.shape}.")
    bad = ~np.isfinite(X)
    if bad.any():
        row, col = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(f"{path}: row {row + 1}, column {col + 1} is {X[row, col]}; every "
                         "feature must be a finite number.")
    return X


def _read_constraints(args, n_samples):
    import psdlearn as pl

    try:
        return pl.PairwiseConstraints.from_csv(args.constraints, n_samples=n_samples,
                                               one_based=args.one_based)
    except ValueError as exc:
        hint = ""
        if "out of range" in str(exc):
            hint = (" If the file counts rows from 1, pass --one-based." if not args.one_based
                    else " Without --one-based, rows are counted from 0.")
        raise ValueError(f"{exc}{hint}") from None


def _write_matrix(path, E):
    path = Path(path)
    if path.suffix == ".npy":
        np.save(path, E)
    elif path.suffix in (".csv", ".txt"):
        np.savetxt(path, E, delimiter=",")
    else:
        raise ValueError(f"--output must end in .npy or .csv, got {path}.")


def _write_labels(path, labels):
    np.savetxt(path, np.asarray(labels, dtype=np.int64), fmt="%d")


def _labels_path(args):
    if args.labels:
        return Path(args.labels)
    out = Path(args.output)
    return out.with_name(f"{out.stem}-labels.csv")


def _cmd_fit(args):
    import psdlearn as pl

    X = _read_features(args.features)
    C = _read_constraints(args, X.shape[0])
    if args.n_clusters is not None and args.n_clusters < 1:
        raise ValueError(f"--n-clusters must be at least 1, got {args.n_clusters}.")
    model = pl.NPKL(loss=args.loss, solver=args.solver, rank=args.rank, gamma=args.gamma,
                    n_neighbors=args.n_neighbors, knn_method=args.knn_method,
                    max_iter=args.max_iter, tol=args.tol, random_state=args.seed,
                    verbose=0 if args.quiet else 1)
    t0 = time.perf_counter()
    model.fit(X, C)
    elapsed = time.perf_counter() - t0
    _write_matrix(args.output, model.embedding_)
    summary = {
        "objective": model.objective_history_[-1],
        "n_iter": model.n_iter_,
        "rank": model.rank_,
        "time_s": elapsed,
        "solver": args.solver,
        "loss": args.loss,
        "gamma": model.gamma_,
        "n_samples": int(X.shape[0]),
        "n_constraints": C.n_pairs,
        "graph": model.graph_info_,
        "graph_time_s": model.graph_time_,
        "embedding": str(args.output),
        # duality certificate of the low-rank fit (bcd, admm): gap bound to the convex optimum
        "certificate": (model.certificate_.as_dict()
                        if getattr(model, "certificate_", None) is not None else None),
    }
    if args.n_clusters is not None:
        labels = pl.kernel_kmeans(model.embedding_, args.n_clusters, random_state=args.seed)
        labels_path = _labels_path(args)
        _write_labels(labels_path, labels)
        summary["n_clusters"] = args.n_clusters
        summary["labels"] = str(labels_path)
    summary_path = Path(args.summary or Path(args.output).with_suffix(".json"))
    summary_path.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_cluster(args):
    import psdlearn as pl

    if not hasattr(pl, "ConstrainedClustering"):
        raise ImportError("this version of psdlearn has no ConstrainedClustering.")
    X = _read_features(args.features)
    C = _read_constraints(args, X.shape[0])
    t0 = time.perf_counter()
    model = pl.ConstrainedClustering(n_clusters=args.n_clusters, random_state=args.seed,
                                     verbose=0 if args.quiet else 1)
    labels = model.fit(X, C).labels_
    elapsed = time.perf_counter() - t0
    _write_labels(args.output, labels)
    sizes = np.bincount(np.asarray(labels, dtype=np.int64), minlength=args.n_clusters)
    print(f"{X.shape[0]} points, {C.n_must} must-link and {C.n_cannot} cannot-link pairs: "
          f"{args.n_clusters} clusters of sizes {', '.join(map(str, sizes))} "
          f"in {elapsed:.2f} s; labels written to {args.output}")
    return 0


def _cmd_query(args):
    from psdlearn import active

    X = _read_features(args.features)
    C = _read_constraints(args, X.shape[0])
    if args.n < 1:
        raise ValueError(f"--n must be at least 1, got {args.n}.")
    if args.n_clusters is not None and args.n_clusters < 1:
        raise ValueError(f"--n-clusters must be at least 1, got {args.n_clusters}.")
    model = None
    if args.strategy in ("uncertainty", "placement") and C.n_pairs:
        model = _query_model(args, X, C)
    cls = active.STRATEGIES[args.strategy]
    strategy = cls() if args.strategy == "random" else cls(args.n_clusters)
    pairs = strategy.select(X, C, args.n, model=model, random_state=args.seed)
    base = 1 if args.one_based else 0
    with open(args.output, "w", encoding="utf-8") as fh:
        fh.write("i,j,label\n")
        fh.writelines(f"{i + base},{j + base},\n" for i, j in pairs.tolist())
    print(f"{len(pairs)} pairs to answer ({args.strategy}, after {C.n_pairs} answered) "
          f"written to {args.output}: fill the label column with must or cannot and append "
          "the rows to the constraints file")
    return 0


def _cmd_suspects(args):
    X = _read_features(args.features)
    C = _read_constraints(args, X.shape[0])
    if args.top < 1:
        raise ValueError(f"--top must be at least 1, got {args.top}.")
    if args.cross_fit and args.cv < 2:
        raise ValueError(f"--cv must be at least 2, got {args.cv}.")
    if C.n_must == 0 or C.n_cannot == 0:
        raise ValueError("suspects needs must-link and cannot-link answers (a kernel learned "
                         "from one kind only disagrees with none of them).")
    if args.cross_fit:
        import psdlearn as pl
        from psdlearn.model_selection import cross_val_constraint_scores

        rows, scores = C.to_array(), cross_val_constraint_scores(
            pl.NPKL(certificate_tol=None, tol=1e-3, random_state=args.seed), X, C,
            cv=args.cv, random_state=args.seed)
    else:
        learner = _query_model(args, X, C).estimator_
        rows, scores = learner.side_info_.to_array(), learner.constraint_scores_
    top = np.argsort(-scores, kind="stable")[:args.top]
    base = 1 if args.one_based else 0
    with open(args.output, "w", encoding="utf-8") as fh:
        fh.write("i,j,label,score\n")
        fh.writelines(f"{i + base},{j + base},{'must' if sign > 0 else 'cannot'},"
                      f"{score:.4f}\n"
                      for (i, j, sign), score in zip(rows[top].tolist(), scores[top].tolist(),
                                                     strict=True))
    how = f"{args.cv}-fold cross-fitted" if args.cross_fit else "learned"
    # a positive score: the kernel puts the pair on the other side of its answer
    against = int((scores > 0).sum())
    print(f"the {len(top)} of {C.n_pairs} answers the {how} kernel disagrees with most "
          f"written to {args.output}, most suspicious first; it contradicts {against} of "
          "them (score > 0): check those again")
    return 0


def _fingerprint(X, args):
    """What a saved model must match: the features' values and the options of the fit."""
    h = hashlib.sha256()
    parts = (X.data, X.indices, X.indptr) if hasattr(X, "indptr") else (X,)
    for a in parts:
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(repr((X.shape, args.n_clusters or 2, args.seed)).encode())
    return h.hexdigest()


def _query_model(args, X, C):
    """The clustering of the answers ``C``: with ``--state``, the saved model updated by
    ``partial_fit`` with the answers added since it was saved (a fit when there is none,
    when the features or options differ, or when a saved answer was removed or changed),
    saved again."""
    import psdlearn as pl

    key = _fingerprint(X, args)
    model, why = None, "no saved model"
    if args.state and Path(args.state).exists():
        with open(args.state, "rb") as fh:
            saved = pickle.load(fh)
        why = "the features or options differ from the saved model's"
        if isinstance(saved, dict) and saved.get("fingerprint") == key:
            model, why = saved["model"], None
    if model is not None:
        from psdlearn.active import _new_pairs

        new = _new_pairs(model.estimator_.side_info_, C)
        if new is None:
            model, why = None, "a saved answer was removed or changed"
        elif new.n_pairs:
            model.partial_fit(X, new)
    if model is None:
        if args.state:
            print(f"fitting on {C.n_pairs} answers ({why})")
        model = pl.ConstrainedClustering(n_clusters=args.n_clusters or 2,
                                         random_state=args.seed, verbose=0).fit(X, C)
    if args.state:
        with open(args.state, "wb") as fh:
            pickle.dump({"fingerprint": key, "model": model}, fh)
    return model


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the line breaks of descriptions and epilogs (the examples)."""


def _add_parser(sub, name, help, description, examples):
    heading = "example:" if len(examples) == 1 else "examples:"
    return sub.add_parser(name, help=help, description=textwrap.fill(description, 79),
                          epilog=heading + "\n" + "".join(f"  {e}\n" for e in examples),
                          formatter_class=_Formatter)


def _add_common_input(s):
    s.add_argument("features", help=FEATURES_HELP)
    s.add_argument("constraints", help=CONSTRAINTS_HELP)
    s.add_argument("--one-based", action="store_true", help=ONE_BASED_HELP)


def _parser():
    p = argparse.ArgumentParser(prog="psdlearn", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=_version(),
                   help="print the version of psdlearn and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           title="commands")

    s = _add_parser(sub, "datasets", "list the data sets, their sizes and availability",
                    "List the data sets psdlearn can load: the bundled ones and those read "
                    "from the directory of $PSDLEARN_DATA.", ["psdlearn datasets"])
    s.set_defaults(func=_cmd_datasets)

    s = _add_parser(sub, "demo", "learn a kernel on a bundled data set and cluster with it",
                    "Draw must-link and cannot-link pairs from the classes of a bundled data "
                    "set, learn a kernel from them, cluster with it, and compare the Rand "
                    "index with k-means on the raw features.",
                    ["psdlearn demo", "psdlearn demo --dataset wine --loss square"])
    s.add_argument("--dataset", default="iris",
                   help="bundled data set, see 'psdlearn datasets' (default: iris)")
    s.add_argument("--loss", default="hinge",
                   choices=["hinge", "squared_hinge", "square", "linear"],
                   help="how violated pairs are penalized (default: hinge)")
    s.add_argument("--seed", type=int, default=0,
                   help="random seed of the pairs drawn and of k-means (default: 0)")
    s.set_defaults(func=_cmd_demo)

    s = _add_parser(sub, "cluster", "cluster points under must-link / cannot-link pairs",
                    "Cluster the points of a features file so that must-link pairs tend to "
                    "share a cluster and cannot-link pairs not: learn a kernel from the "
                    "pairs, then run k-means on its embedding. Writes one cluster number "
                    "(0 to K-1) per line, in the order of the rows of the features file.",
                    ["psdlearn cluster features.csv constraints.csv --n-clusters 3 "
                     "-o labels.csv",
                     "psdlearn cluster features.csv pairs-from-1.csv --one-based "
                     "--n-clusters 3"])
    _add_common_input(s)
    s.add_argument("-k", "--n-clusters", type=int, required=True,
                   help="number of clusters K (required)")
    s.add_argument("-o", "--output", default="labels.csv",
                   help="labels file, one integer per line (default: labels.csv)")
    s.add_argument("--seed", type=int, default=0,
                   help="random seed, for results that repeat exactly (default: 0)")
    s.add_argument("-q", "--quiet", action="store_true",
                   help="no progress messages on the terminal")
    s.set_defaults(func=_cmd_cluster)

    s = _add_parser(sub, "fit", "learn a kernel from a features file and a constraints file",
                    "Learn a low-rank kernel from must-link and cannot-link pairs (NPKL, Hu & "
                    "Kwok 2015) and write its embedding E (one row per point; the kernel is "
                    "E E^T) and a JSON summary of the fit. With --n-clusters K it also "
                    "clusters the points by k-means on E and writes their labels.",
                    ["psdlearn fit features.csv constraints.csv -o embedding.npy",
                     "psdlearn fit features.csv constraints.csv -o embedding.csv "
                     "--n-clusters 3 --labels labels.csv"])
    _add_common_input(s)
    s.add_argument("-o", "--output", default="embedding.npy",
                   help="embedding file, .npy or .csv (default: embedding.npy)")
    s.add_argument("--summary", help="JSON summary file (default: the output file's name "
                   "with .json)")
    s.add_argument("-k", "--n-clusters", type=int,
                   help="also cluster the points into K clusters and write their labels")
    s.add_argument("--labels", help="labels file of --n-clusters, one integer per line "
                   "(default: the output file's name with -labels.csv, e.g. "
                   "embedding-labels.csv)")
    s.add_argument("--solver", default="bcd", choices=_solver_names(), help=SOLVER_HELP)
    s.add_argument("--loss", default="hinge", choices=_loss_names(), help=LOSS_HELP)
    s.add_argument("--rank", default="auto",
                   type=lambda v: v if v in ("auto", "adaptive") else int(v),
                   help="number of columns of the embedding: an integer, 'auto' (from the "
                   "number of pairs) or 'adaptive' (grown until the fit is certified "
                   "optimal) (default: auto)")
    s.add_argument("--gamma", default="auto", type=lambda v: v if v == "auto" else float(v),
                   help="weight of the pairs against the smoothness over neighbours: a "
                   "number, or 'auto' (default: auto)")
    s.add_argument("--n-neighbors", type=int, default=5,
                   help="neighbours per point in the nearest-neighbour graph (default: 5)")
    s.add_argument("--knn-method", choices=("auto", "exact", "approximate"), default="auto",
                   help="nearest-neighbour search (default: auto, exact up to 20,000 points "
                   "and approximate above)")
    s.add_argument("--max-iter", type=int, default=1000,
                   help="maximum number of sweeps over the points, or iterations of the "
                   "algorithm (default: 1000)")
    s.add_argument("--tol", type=float, default=1e-5,
                   help="stop when the embedding changes by less than this, relative to "
                   "its size (default: 1e-5)")
    s.add_argument("--seed", type=int, default=0,
                   help="random seed, for results that repeat exactly (default: 0)")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=_cmd_fit)

    s = _add_parser(sub, "query", "choose the next pairs to ask about",
                    "Choose the next pairs of points to ask a person about (active "
                    "learning), given the answers so far in the constraints file. Writes a "
                    "CSV i,j,label with the label column empty: fill it with must or cannot, "
                    "append the rows to the constraints file and run query again. Row "
                    "numbers are counted as in the constraints file (from 0, or from 1 "
                    "with --one-based).",
                    ["psdlearn query features.csv constraints.csv --n 20 -k 3 "
                     "-o next_pairs.csv",
                     "psdlearn query features.csv constraints.csv --n 20 -k 3 "
                     "--state model.pkl",
                     "psdlearn query features.csv constraints.csv --n 10 "
                     "--strategy explore_consolidate -k 4"])
    _add_common_input(s)
    s.add_argument("--n", type=int, default=20,
                   help="number of pairs to choose (default: 20)")
    s.add_argument("-k", "--n-clusters", type=int,
                   help="number of groups expected; used by explore_consolidate, min_max, "
                   "uncertainty and placement (default: unknown; uncertainty and "
                   "placement then assume 2)")
    s.add_argument("--strategy", default="uncertainty", choices=_strategy_names(),
                   help="how pairs are chosen (default: uncertainty): uncertainty, the "
                   "pairs the kernel learned from the answers is least sure of; "
                   "placement, the points it cannot place, each asked against the group "
                   "it ranks first; explore_consolidate (Basu et al. 2004) and min_max "
                   "(Mallapragada et al. 2008), one point per group first, then the "
                   "others; random")
    s.add_argument("-o", "--output", default="next_pairs.csv",
                   help="CSV of the chosen pairs (default: next_pairs.csv)")
    s.add_argument("--state", metavar="FILE",
                   help="keep the model learned from the answers in FILE between runs "
                   "(uncertainty and placement): the next run updates it with the new "
                   "answers instead of learning from all of them again, which saves the "
                   "neighbour graph and most of the fit; it is refitted when the "
                   "features, -k or --seed change or a saved answer was edited. FILE is a "
                   "Python pickle: load only files you wrote")
    s.add_argument("--seed", type=int, default=0,
                   help="random seed, for results that repeat exactly (default: 0)")
    s.set_defaults(func=_cmd_query)

    s = _add_parser(sub, "suspects", "list the answers the data contradicts most",
                    "List the must-link / cannot-link answers that the kernel learned from "
                    "all of them disagrees with most (NPKL's constraint scores), the first "
                    "ones to check again for a mistake. Writes a CSV i,j,label,score, most "
                    "suspicious first, rows counted as in the constraints file. "
                    "--cross-fit scores each answer with a kernel learned without it "
                    "(--cv fits): better where the classes overlap, slower.",
                    ["psdlearn suspects features.csv constraints.csv --top 10 "
                     "-o suspects.csv",
                     "psdlearn suspects features.csv constraints.csv --top 10 -k 3 "
                     "--state model.pkl",
                     "psdlearn suspects features.csv constraints.csv --cross-fit"])
    _add_common_input(s)
    s.add_argument("--top", type=int, default=10,
                   help="number of answers to list (default: 10)")
    s.add_argument("-k", "--n-clusters", type=int,
                   help="number of groups expected, as in query (it only names the saved "
                   "model of --state; default: unknown, 2 assumed)")
    s.add_argument("--cross-fit", action="store_true",
                   help="score each answer with a kernel learned without it (--cv fits "
                   "on the other folds of the answers) instead of the kernel learned from "
                   "all of them")
    s.add_argument("--cv", type=int, default=5,
                   help="folds of --cross-fit (default: 5)")
    s.add_argument("-o", "--output", default="suspects.csv",
                   help="CSV of the suspicious answers (default: suspects.csv)")
    s.add_argument("--state", metavar="FILE",
                   help="the model file of 'psdlearn query --state': reused and updated "
                   "with the answers added since, instead of learning from all of them "
                   "again (not with --cross-fit)")
    s.add_argument("--seed", type=int, default=0,
                   help="random seed, for results that repeat exactly (default: 0)")
    s.set_defaults(func=_cmd_suspects)
    return p


def _strategy_names():
    from psdlearn.active import STRATEGIES

    return list(STRATEGIES)


def _loss_names():
    from psdlearn.npkl.problem import LOSSES

    return list(LOSSES)


def _solver_names():
    from psdlearn.npkl.solvers import NPKL_SOLVERS

    return list(NPKL_SOLVERS.names())


def _version():
    from psdlearn import __version__

    return f"psdlearn {__version__}"


def main(argv=None):
    """Run the ``psdlearn`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``psdlearn``; default: those of the command line.

    Returns
    -------
    int
        The exit status: 0 on success, 2 on an error (printed to stderr).
    """
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"psdlearn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
