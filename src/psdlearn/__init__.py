"""psdlearn: learn positive semidefinite kernels and metrics from side information.

Side information is what a user knows about a few points: pairs that belong together
(must-link) or apart (cannot-link), relative comparisons (triplets), or the labels of a
few points. From it the estimators learn a kernel matrix ``K`` (positive semidefinite) or
a Mahalanobis metric, as scikit-learn transformers fitted by ``fit(X, y)`` with the side
information as ``y``:

- :class:`NPKL`, nonparametric low-rank kernel learning (Hu & Kwok 2013, 2015), and
  :class:`NPKLCV`, its trade-off chosen from the constraints alone;
- :class:`PSDBoost`, a Mahalanobis metric from triplets (Shen, Welsh & Wang 2008);
- :class:`GeneralizedNystroem`, a low-rank kernel from a few labels (Lan et al. 2017);
- :class:`KernelMetricLearner` (Yeung, Chang & Dai 2007) and :class:`RCA`, metrics from
  must-link pairs.

Side information is held by :class:`PairwiseConstraints` and :class:`Triplets`; the
evaluation measures are in :mod:`psdlearn.metrics`, the data sets of the papers in
:mod:`psdlearn.datasets`, the choice of the pairs to ask in :mod:`psdlearn.active`.
"""

from psdlearn import active, datasets, graph, metrics, model_selection
from psdlearn._version import __version__
from psdlearn.cluster import ConstrainedClustering, kernel_kmeans
from psdlearn.constraints import (
    ConstraintConflictWarning,
    PairwiseConstraints,
    Triplets,
    triplets_from_constraints,
    triplets_from_labels,
)
from psdlearn.kml import RCA, KernelMetricLearner
from psdlearn.model_selection import NPKLCV, ConstraintKFold
from psdlearn.npkl import NPKL
from psdlearn.nystroem import GeneralizedNystroem
from psdlearn.pairs import PairsClassifier
from psdlearn.psdboost import PSDBoost

__all__ = [
    "NPKLCV",
    "RCA",
    "ConstrainedClustering",
    "ConstraintConflictWarning",
    "ConstraintKFold",
    "GeneralizedNystroem",
    "KernelMetricLearner",
    "NPKL",
    "PSDBoost",
    "PairsClassifier",
    "PairwiseConstraints",
    "Triplets",
    "__version__",
    "active",
    "datasets",
    "graph",
    "kernel_kmeans",
    "metrics",
    "model_selection",
    "triplets_from_constraints",
    "triplets_from_labels",
]
