"""Baselines of the papers' tables: graph kernels and alignment-based kernel weights.

- :mod:`~reproductions.baselines.spectral`: the cluster kernel (Chapelle, Weston & Schölkopf
  2002) and the order-constrained spectral kernel (Zhu, Kandola, Ghahramani & Lafferty
  2005), Lan et al. (2017) Table 1;
- :mod:`~reproductions.baselines.alignment`: ABMKL and CABMKL kernel weights (Cortes, Mohri &
  Rostamizadeh 2012), Lan et al. (2017) Table 2;
- :mod:`~reproductions.baselines.linear_svm`: the linear SVM's ``C`` by LIBLINEAR's ``-C``
  search ("the heuristic implemented in LIBLINEAR" of Lan et al. 2017).

MFPC (Hu & Kwok 2013 Table 2) shares NPKL's problem: ``NPKL(solver="mfpc")``.
"""

from reproductions.baselines.alignment import alignment, alignment_weights
from reproductions.baselines.linear_svm import liblinear_c
from reproductions.baselines.spectral import (
    cluster_kernel_features,
    graph_spectrum,
    order_constrained_weights,
    spectral_kernel_features,
)

__all__ = ["alignment", "alignment_weights", "cluster_kernel_features", "graph_spectrum",
           "liblinear_c", "order_constrained_weights", "spectral_kernel_features"]
