"""The value order of the rows of a dense matrix without numba (the landmarks and folds).

:func:`psdlearn._exact_knn.value_order` sorts rows by their projections on fixed
directions, each summed over the columns one addition at a time in a numba kernel. The
first numba call of a process loads numba's compiler (about 0.25 CPU s), more than the
whole cross-validation of a small fit costs; the generalized Nystrom estimator calls no
other numba code. :func:`dense_value_order` computes the same keys with NumPy: the products
``x_ic w_cj`` rounded one by one and added left to right (``np.add.accumulate`` is
sequential), the additions of the numba loop in its order, hence the same order.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from psdlearn._exact_knn import _ORDER_KEYS, _ORDER_SEED, _project_dense, value_order

__all__ = ["dense_value_order"]

#: Rows per block of the keys (the products of a block are held at once).
BLOCK_ROWS = 4096
#: Up to this many entries the keys are computed in NumPy (about 11 ns an entry against
#: 2 ns in numba, whose first call costs about 0.25 s: the two meet near 3e7 entries).
NUMPY_MAX_ENTRIES = 1 << 24


def dense_value_order(X):
    """:func:`psdlearn._exact_knn.value_order` of ``X``, in NumPy for dense input.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features), float64

    Returns
    -------
    order : ndarray of shape (n_samples,), int64
        The same order as ``value_order(X)``, which computes it for sparse input, above
        :data:`NUMPY_MAX_ENTRIES` entries, or once its kernel is loaded in the process.
    """
    # numba's kernel where it is faster: sparse or large input, or already loaded
    if (sp.issparse(X) or X.shape[0] * X.shape[1] > NUMPY_MAX_ENTRIES
            or _project_dense.signatures):
        return value_order(X)
    W = np.random.default_rng(_ORDER_SEED).standard_normal((X.shape[1], _ORDER_KEYS))
    keys = np.empty((X.shape[0], _ORDER_KEYS))
    if X.shape[1] == 0:
        keys[:] = 0.0
    for start in range(0, X.shape[0], BLOCK_ROWS):
        block = X[start:start + BLOCK_ROWS]
        for j in range(_ORDER_KEYS):
            # the loop's s = 0.0 + p_0 is p_0 (or +0.0 for p_0 = -0.0: an equal key)
            keys[start:start + BLOCK_ROWS, j] = np.add.accumulate(block * W[:, j],
                                                                  axis=1)[:, -1]
    return np.lexsort(keys.T[::-1]).astype(np.int64)
