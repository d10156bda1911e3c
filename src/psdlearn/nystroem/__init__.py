"""Generalized Nystrom low-rank kernel learning (Lan et al. 2017): estimator and solvers."""

from psdlearn.nystroem.dictionary import (
    QuadraticData,
    closed_form_start,
    psd_projection,
    solve_dictionary,
)
from psdlearn.nystroem.estimator import GeneralizedNystroem, mean_squared_distance

__all__ = [
    "GeneralizedNystroem",
    "QuadraticData",
    "closed_form_start",
    "mean_squared_distance",
    "psd_projection",
    "solve_dictionary",
]
