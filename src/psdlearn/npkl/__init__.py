"""Nonparametric low-rank kernel learning (Hu & Kwok 2015, 2013): estimator and solvers.

:data:`NPKL_SOLVERS` declares the solvers of :class:`NPKL` (see
:mod:`psdlearn.npkl.solvers`).
"""

from psdlearn.npkl.estimator import NPKL
from psdlearn.npkl.problem import LOSSES, NPKLProblem, npkl_objective
from psdlearn.npkl.solvers import NPKL_SOLVERS

__all__ = ["LOSSES", "NPKL", "NPKLProblem", "NPKL_SOLVERS", "npkl_objective"]
