"""Hu & Kwok (2015) Fig. 5: out-of-sample clustering accuracy against the number of constraints.

Half the points (at random) are in-sample, the rest out-of-sample. Constraints are drawn
from the in-sample points only: 0.05n, 0.1n, 0.5n, n and 1.5n pairs in total (n = all
points), half must-link and half cannot-link. The kernel is learned on the in-sample half,
the out-of-sample points are embedded (section III-E) and clustered by kernel k-means.

Two extensions are compared: ``NPKL.transform`` (each new point from its neighbours among
the training points, their number chosen at fit time, independent of the batch: the
library's default) and
``NPKL.transform_joint`` (the new points coupled through their own graph, one linear
system per batch). Iris is the paper's set (20 repetitions); soybean and wine, two other
protocol sets of its Table III, are added with the square loss (10 repetitions).

Reference: Hu, E.-L. & Kwok, J. T. (2015). Scalable nonparametric low-rank kernel learning
using block coordinate descent. IEEE TNNLS 26(9).
"""

from __future__ import annotations

import numpy as np

from psdlearn import datasets
from psdlearn.cluster import kernel_kmeans
from psdlearn.constraints import PairwiseConstraints
from psdlearn.experiments._plot import plot_lines
from psdlearn.experiments.report import write_results
from psdlearn.metrics import pairwise_accuracy
from psdlearn.npkl.bcd import BCD_LOSSES as LOSSES
from psdlearn.npkl.estimator import NPKL

__all__ = ["run"]

FRACTIONS = (0.05, 0.1, 0.5, 1.0, 1.5)
EXTENSIONS = ("transform", "transform_joint")
#: (set, losses, repetitions) of the full run
CASES = (("iris", LOSSES, 20), ("soybean", ("square",), 10), ("wine", ("square",), 10))


def _accuracies(name, losses, reps):
    X, y = datasets.load(name)
    n = len(y)
    k = len(np.unique(y))
    acc = {(loss, ext): {f: [] for f in FRACTIONS} for loss in losses for ext in EXTENSIONS}
    for rep in range(reps):
        perm = np.random.default_rng(rep).permutation(n)
        tr, te = perm[: n // 2], perm[n // 2:]
        for f in FRACTIONS:
            total = max(2, round(f * n))
            C = PairwiseConstraints.from_labels(y[tr], n_must=total // 2,
                                                n_cannot=total - total // 2,
                                                random_state=rep)
            for loss in losses:
                model = NPKL(loss=loss, gamma=1.0, random_state=rep).fit(X[tr], C)
                for ext in EXTENSIONS:
                    labels = kernel_kmeans(getattr(model, ext)(X[te]), k, random_state=rep)
                    acc[loss, ext][f].append(100 * pairwise_accuracy(y[te], labels))
    return n, acc


def run(out_dir, quick=False, log=print):
    """Run Fig. 5; write ``bcd_out_of_sample.{md,json,png}`` in ``out_dir``."""
    cases = (("iris", LOSSES, 4),) if quick else CASES
    rows, raw, iris_acc = [], {}, None
    for name, losses, reps in cases:
        n, acc = _accuracies(name, losses, reps)
        iris_acc = acc if name == "iris" else iris_acc
        for f in FRACTIONS:
            row = {"set": f"{name} ({reps} reps)", "constraints": f"{f:g} n = "
                   f"{max(2, round(f * n))}"}
            for loss in LOSSES:
                for ext, label in zip(EXTENSIONS, ("per point", "joint"), strict=True):
                    v = np.array(acc[loss, ext][f]) if (loss, ext) in acc else None
                    row[f"{loss} {label}"] = ("" if v is None else
                                              f"{v.mean():.1f} ± {v.std():.1f}")
            rows.append(row)
        raw[name] = {f"{loss} {ext}": {str(f): acc[loss, ext][f] for f in FRACTIONS}
                     for (loss, ext) in acc}
    notes = ["Out-of-sample Rand index (%), mean ± std over the repetitions. 'per point': "
             "NPKL.transform (each new point from its k' nearest training points only, "
             "the default; k' among k, 2k, 3k, 4k chosen at fit by leave-one-out "
             "prediction of the training rows, from the embedding alone); 'joint': "
             "NPKL.transform_joint (the new points linked to each other too, the batch "
             "solved as one system).",
             "gamma = 1, as in the other reproductions of Hu & Kwok (2015).",
             "Hu & Kwok (2015) Fig. 5 shows the accuracy rising with the number of "
             "constraints for every loss on iris (its values are only in the figure)."]
    text = write_results(out_dir, "bcd_out_of_sample", list(rows[0].keys()), rows, notes,
                         title="Hu & Kwok (2015) Fig. 5: out-of-sample accuracy",
                         extra={"raw": raw})
    plot_lines(out_dir / "bcd_out_of_sample.png",
               {f"{loss} ({label})": (FRACTIONS, [np.mean(iris_acc[loss, ext][f])
                                                   for f in FRACTIONS])
                for loss in LOSSES
                for ext, label in zip(EXTENSIONS, ("per point", "joint"), strict=True)},
               xlabel="constraints / n", ylabel="out-of-sample Rand index (%)",
               title="iris, half in-sample")
    log(text)
    return rows
