"""Nonparametric low-rank kernel learning (seeds 000 and 001): estimator and solvers."""

from psdlearn.npkl.estimator import NPKL
from psdlearn.npkl.problem import LOSSES, NPKLProblem, npkl_objective

__all__ = ["LOSSES", "NPKL", "NPKLProblem", "npkl_objective"]
