"""Baselines of the papers' tables: graph kernels and alignment-based kernel weights.

- :mod:`~psdlearn.baselines.spectral`: the cluster kernel (Chapelle, Weston & Schölkopf
  2002) and the order-constrained spectral kernel (Zhu, Kandola, Ghahramani & Lafferty
  2005), Lan et al. (2017) Table 1;
- :mod:`~psdlearn.baselines.alignment`: ABMKL and CABMKL kernel weights (Cortes, Mohri &
  Rostamizadeh 2012), Lan et al. (2017) Table 2.

MFPC (Hu & Kwok 2013 Table 2) shares NPKL's problem: ``NPKL(solver="mfpc")``.
"""

from psdlearn.baselines.alignment import alignment, alignment_weights
from psdlearn.baselines.spectral import (
    cluster_kernel_features,
    graph_spectrum,
    order_constrained_weights,
    spectral_kernel_features,
)

__all__ = ["alignment", "alignment_weights", "cluster_kernel_features", "graph_spectrum",
           "order_constrained_weights", "spectral_kernel_features"]
