"""Nonparametric low-rank kernel learning (seeds 000 and 001): estimator and solvers.

:data:`NPKL_SOLVERS` declares the solvers of :class:`NPKL` (see
:mod:`psdlearn.npkl.solvers`).
"""

from psdlearn.npkl.estimator import NPKL
from psdlearn.npkl.problem import LOSSES, NPKLProblem, npkl_objective
from psdlearn.npkl.solvers import NPKL_SOLVERS

__all__ = ["LOSSES", "NPKL", "NPKLProblem", "NPKL_SOLVERS", "npkl_objective"]
