"""NPKL on a Dask cluster: the row blocks of ``X``, ``L`` and ``E`` spread over workers.

``NPKL(...).fit(X, y)`` with ``X`` a row-chunked ``dask.array.Array`` runs here (the user
guide's page on Dask describes it). Modules: :mod:`.layout` (slab partition, owners, halos),
:mod:`._build` (blockwise kNN graph and Laplacian rows), :mod:`.admm` and :mod:`.bcd`
(the solvers), :mod:`.fit` (the estimator glue), :mod:`.timemodel` (time on P machines).
dask is an optional dependency, imported only here.
"""

from ._runtime import WorkerLostError
from .fit import fit_dask, is_dask_array, transform_dask

__all__ = ["WorkerLostError", "fit_dask", "is_dask_array", "transform_dask"]
