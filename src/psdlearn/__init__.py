"""psdlearn: learn positive semidefinite kernels and metrics from side information."""

from psdlearn import datasets, graph, metrics, model_selection
from psdlearn._version import __version__
from psdlearn.cluster import ConstrainedClustering, kernel_kmeans
from psdlearn.constraints import (
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
    "ConstraintKFold",
    "GeneralizedNystroem",
    "KernelMetricLearner",
    "NPKL",
    "PSDBoost",
    "PairsClassifier",
    "PairwiseConstraints",
    "Triplets",
    "__version__",
    "datasets",
    "graph",
    "kernel_kmeans",
    "metrics",
    "model_selection",
    "triplets_from_constraints",
    "triplets_from_labels",
]
