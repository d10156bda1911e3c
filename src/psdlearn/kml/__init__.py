"""Kernel-based semi-supervised metric learning with landmarks (seed 004) and RCA."""

from psdlearn.kml.estimator import KernelMetricLearner
from psdlearn.kml.rca import RCA

__all__ = ["RCA", "KernelMetricLearner"]
