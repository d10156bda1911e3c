"""psdlearn: learn positive semidefinite kernels and metrics from side information."""

from psdlearn import datasets, graph, metrics
from psdlearn._version import __version__
from psdlearn.cluster import kernel_kmeans
from psdlearn.constraints import (
    PairwiseConstraints,
    triplets_from_constraints,
    triplets_from_labels,
)

__all__ = [
    "PairwiseConstraints",
    "__version__",
    "datasets",
    "graph",
    "kernel_kmeans",
    "metrics",
    "triplets_from_constraints",
    "triplets_from_labels",
]
