"""Kernel-based semi-supervised metric learning with landmarks (Yeung, Chang & Dai 2007) and
its linear baseline, Relevant Component Analysis (Bar-Hillel et al. 2005)."""

from psdlearn.kml.estimator import KernelMetricLearner
from psdlearn.kml.rca import RCA

__all__ = ["RCA", "KernelMetricLearner"]
