"""PSDBoost (seed 002): PSD metric learning by matrix generation and linear programming."""

from psdlearn.psdboost.estimator import PSDBoost, check_triplets

__all__ = ["PSDBoost", "check_triplets"]
