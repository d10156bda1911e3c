"""Seed 000 Fig. 5: out-of-sample clustering accuracy against the number of constraints.

Iris; half the points (at random) are in-sample, the rest out-of-sample. Constraints are
drawn from the in-sample points only: 0.05n, 0.1n, 0.5n, n and 1.5n pairs in total
(n = 150, all points), half must-link and half cannot-link. The kernel is learned on
the in-sample half, the out-of-sample points are embedded by ``NPKL.transform``
(section III-E) and clustered by kernel k-means; 20 repetitions.
"""

from __future__ import annotations

import numpy as np

from psdlearn import datasets
from psdlearn.cluster import kernel_kmeans
from psdlearn.constraints import PairwiseConstraints
from psdlearn.experiments._plot import plot_lines
from psdlearn.experiments._report import write_results
from psdlearn.metrics import pairwise_accuracy
from psdlearn.npkl.bcd import BCD_LOSSES as LOSSES
from psdlearn.npkl.estimator import NPKL

__all__ = ["run"]

FRACTIONS = (0.05, 0.1, 0.5, 1.0, 1.5)


def run(out_dir, quick=False, log=print):
    """Run Fig. 5; write ``bcd_out_of_sample.{md,json,png}`` in ``out_dir``."""
    X, y = datasets.load("iris")
    n = len(y)
    reps = 4 if quick else 20
    acc = {loss: {f: [] for f in FRACTIONS} for loss in LOSSES}
    for rep in range(reps):
        perm = np.random.default_rng(rep).permutation(n)
        tr, te = perm[: n // 2], perm[n // 2:]
        for f in FRACTIONS:
            total = max(2, round(f * n))
            C = PairwiseConstraints.from_labels(y[tr], n_must=total // 2,
                                                n_cannot=total - total // 2,
                                                random_state=rep)
            for loss in LOSSES:
                model = NPKL(loss=loss, random_state=rep).fit(X[tr], C)
                labels = kernel_kmeans(model.transform(X[te]), 3, random_state=rep)
                acc[loss][f].append(100 * pairwise_accuracy(y[te], labels))
    rows = []
    for f in FRACTIONS:
        row = {"constraints": f"{f:g} n = {max(2, round(f * n))}"}
        for loss in LOSSES:
            v = np.array(acc[loss][f])
            row[loss] = f"{v.mean():.1f} ± {v.std():.1f}"
        rows.append(row)
    notes = [f"Out-of-sample Rand index (%), {reps} repetitions.",
             "Seed 000 Fig. 5 shows the accuracy rising with the number of constraints for "
             "every loss (its values are only in the figure)."]
    text = write_results(out_dir, "bcd_out_of_sample", list(rows[0].keys()), rows, notes,
                         title="Seed 000 Fig. 5: out-of-sample accuracy on iris",
                         extra={"raw": {loss: {str(f): acc[loss][f] for f in FRACTIONS}
                                        for loss in LOSSES}})
    plot_lines(out_dir / "bcd_out_of_sample.png",
               {loss: (FRACTIONS, [np.mean(acc[loss][f]) for f in FRACTIONS])
                for loss in LOSSES},
               xlabel="constraints / n", ylabel="out-of-sample Rand index (%)",
               title="iris, half in-sample")
    log(text)
    return rows
