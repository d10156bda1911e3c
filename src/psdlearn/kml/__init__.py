"""Metric learning from similar pairs: a kernel metric and its linear baseline.

- :class:`KernelMetricLearner`: the kernel-based semi-supervised metric learning of Yeung,
  Chang & Dai (2007), which reweights the eigenvalues of a base kernel so that similar
  pairs come close, in a full and a scalable (landmark) version.
- :class:`RCA`: Relevant Component Analysis (Bar-Hillel et al. 2005), the linear metric
  learned from the same pairs.

:mod:`psdlearn.kml.beta` holds the closed-form reweighting the first one solves.
"""

from psdlearn.kml.estimator import KernelMetricLearner
from psdlearn.kml.rca import RCA

__all__ = ["RCA", "KernelMetricLearner"]
