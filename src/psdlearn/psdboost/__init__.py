"""PSDBoost (Shen, Welsh & Wang 2008): PSD metric learning by matrix generation and LP."""

from psdlearn.psdboost.estimator import PSDBoost

__all__ = ["PSDBoost"]
