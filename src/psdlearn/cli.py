"""Command line interface: a thin layer over the public API.

``psdlearn datasets``  list the data sets, their sizes and availability
``psdlearn demo``      learn a kernel from constraints on a bundled set and cluster with it
``psdlearn fit``       fit NPKL on files: features (CSV/NPY/LIBSVM) + constraints (CSV)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["main"]


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
    model = pl.NPKL(loss=args.loss, solver="bcd", random_state=args.seed)
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
        X = np.load(path)
    elif name.endswith((".csv", ".csv.gz", ".txt")):
        try:
            X = np.loadtxt(path, delimiter=",", ndmin=2)
        except ValueError as exc:
            raise ValueError(f"{path}: could not read a numeric CSV matrix ({exc}).") from None
    else:
        from sklearn.datasets import load_svmlight_file

        try:
            X, _ = load_svmlight_file(str(path))
        except ValueError as exc:
            raise ValueError(f"{path}: not a valid LIBSVM file ({exc}).") from None
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


def _write_matrix(path, E):
    path = Path(path)
    if path.suffix == ".npy":
        np.save(path, E)
    elif path.suffix in (".csv", ".txt"):
        np.savetxt(path, E, delimiter=",")
    else:
        raise ValueError(f"--output must end in .npy or .csv, got {path}.")


def _cmd_fit(args):
    import psdlearn as pl

    X = _read_features(args.features)
    C = pl.PairwiseConstraints.from_csv(args.constraints, n_samples=X.shape[0])
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
    summary_path = Path(args.summary or Path(args.output).with_suffix(".json"))
    summary_path.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


def _parser():
    p = argparse.ArgumentParser(prog="psdlearn", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("datasets", help="list data sets, sizes and availability")
    s.set_defaults(func=_cmd_datasets)

    s = sub.add_parser("demo", help="learn a kernel on a bundled set, cluster, compare")
    s.add_argument("--dataset", default="iris", help="bundled data set (default: iris)")
    s.add_argument("--loss", default="hinge",
                   choices=["hinge", "squared_hinge", "square", "linear"])
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=_cmd_demo)

    s = sub.add_parser("fit", help="fit NPKL on a features file and a constraints CSV")
    s.add_argument("features", help="features: .csv, .npy or LIBSVM text")
    s.add_argument("constraints", help="CSV of i,j,label rows (label +1/-1 or must/cannot)")
    s.add_argument("-o", "--output", default="embedding.npy",
                   help="embedding file, .npy or .csv (default: embedding.npy)")
    s.add_argument("--summary", help="JSON summary path (default: output with .json)")
    s.add_argument("--solver", default="bcd", choices=_solver_names(),
                   help="NPKL solver (psdlearn.npkl.solvers.NPKL_SOLVERS; default: bcd)")
    s.add_argument("--loss", default="hinge", choices=_loss_names(),
                   help="loss on the constrained pairs (pcp: solvers admm, mfpc, "
                   "simplenpkl, sdp)")
    s.add_argument("--rank", default="auto",
                   type=lambda v: v if v in ("auto", "adaptive") else int(v),
                   help="int, 'auto' (the r(r+1)/2 <= m rule) or 'adaptive' (grown until "
                   "the duality certificate holds)")
    s.add_argument("--gamma", default="auto", type=lambda v: v if v == "auto" else float(v),
                   help="loss weight: a float, or 'auto' (scaled to the graph and the "
                   "constraints; see NPKL's gamma)")
    s.add_argument("--n-neighbors", type=int, default=5)
    s.add_argument("--knn-method", choices=("auto", "exact", "approximate"), default="auto",
                   help="neighbour search of the kNN graph (default: exact up to 20,000 "
                   "points, approximate above)")
    s.add_argument("--max-iter", type=int, default=1000)
    s.add_argument("--tol", type=float, default=1e-5)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=_cmd_fit)

    return p


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
    """Entry point of the ``psdlearn`` command."""
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"psdlearn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
