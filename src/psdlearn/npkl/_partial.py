"""``NPKL.partial_fit``: more pairs over the same points, solved from the current optimum.

The graph term ``tr(E^T L E)`` depends on the points only, so the Laplacian ``L``, the
neighbour index and the width ``sigma`` of the first fit are kept; only the loss term
gains pairs. The problem on the union of the pairs is solved from the current
``embedding_`` (the point that was optimal for the old pairs), with the loss weight
``gamma_`` and the rank ``rank_`` of the first fit, so that it is the very problem a fresh
``NPKL(gamma=gamma_, rank=rank_)`` solves on the union and reaches its optimum.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from psdlearn.constraints import as_constraints, warn_conflicts
from psdlearn.npkl._fit_graph import is_training_data
from psdlearn.npkl._rounds import solve_rounds
from psdlearn.npkl._settings import warn_uncertified
from psdlearn.npkl._suspicious import constraint_scores
from psdlearn.npkl.distributed.fit import is_dask_array
from psdlearn.npkl.problem import NPKLProblem, auto_rank, rank_rule_count
from psdlearn.npkl.solvers import NPKL_SOLVERS, WARM


def partial_fit(est, X, y):
    """Add the side information ``y`` to the fitted ``est`` and re-solve (see module).

    Parameters
    ----------
    est : NPKL
        Fitted.
    X : array-like, sparse matrix or None
        The training input of :meth:`NPKL.fit` (the same object, or equal values).
    y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
        The new side information.

    Returns
    -------
    est : NPKL
    """
    if is_dask_array(X):
        raise ValueError("partial_fit does not take a dask array: refit on the cluster "
                         "with all the side information.")
    n = len(est.embedding_)
    if X is not None and est.graph == "knn":  # the usual message on a wrong n_features
        X = validate_data(est, X, accept_sparse="csr", dtype=np.float64, reset=False)
    if not is_training_data(X, est.graph, getattr(est, "X_fit_", None), n):
        raise ValueError(
            "partial_fit adds side information over the points of fit: X must be the X "
            f"passed to fit ({n} samples, same values). To learn over other points, call "
            "fit.")
    new = as_constraints(y, n, check_conflicts=False)
    C = est.side_info_.union(new)
    warn_conflicts(C, stacklevel=3)
    spec = NPKL_SOLVERS[est.solver]
    rank = est.rank_
    # rank="auto" of the union may exceed rank_: rank_ is kept (documented in NPKL)
    est._rank_cap = max(rank, min(auto_rank(rank_rule_count(est.loss, C.pairs, C.signs, n)),
                                  n))
    problem = NPKLProblem(est.laplacian_, C.pairs, C.signs.astype(np.float64), est.loss,
                          est.gamma_, float(est.b))
    start = None
    if spec.warm_start and np.any(est.embedding_):
        start = (np.array(est.embedding_, dtype=np.float64, order="C"), WARM)
    began = time.perf_counter()
    solve_rounds(est, spec, problem, rank, check_random_state(est.random_state), start=start)
    est.fit_time_ = time.perf_counter() - began
    warn_uncertified(est)
    est.side_info_ = C
    est.constraint_scores_ = constraint_scores(est.embedding_, est.laplacian_, C.pairs,
                                               C.signs)
    return est
