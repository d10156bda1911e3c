"""Nonparametric low-rank kernel learning (seeds 000 and 001): estimator and solvers."""

from psdlearn.npkl._problem import LOSSES, NPKLProblem, npkl_objective
from psdlearn.npkl.estimator import NPKL

__all__ = ["LOSSES", "NPKL", "NPKLProblem", "npkl_objective"]
