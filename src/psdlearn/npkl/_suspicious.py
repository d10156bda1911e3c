"""Which constraints the learned kernel disagrees with: ``NPKL.constraint_scores_``.

A constraint ``(i, j)`` of sign ``T_ij`` is satisfied by the kernel when its normalized
margin ``T_ij c_ij`` is positive, ``c_ij = K_ij / sqrt(K_ii K_jj)`` the cosine of the
rows ``e_i, e_j`` (the margin ``z = T_ij K_ij`` that the loss penalizes, freed from the
scale of ``K``). A wrong constraint pulls its own two rows, so its cosine alone is
biased towards agreement; the rows predicted by the graph neighbours,
``E_hat = (diag(L) - L) E`` (for the normalized Laplacian, the degree-normalized average
of the neighbours' rows), are moved by the constraint only through the graph. The score
averages both views:

.. math::

    s_{ij} = -\\frac{T_{ij}}{2}\\big(\\cos(e_i, e_j) + \\cos(\\hat e_i, \\hat e_j)\\big)
    \\in [-1, 1],

higher meaning more suspicious: ``s < 0`` when both views agree with the constraint,
``s > 0`` when both contradict it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _cosines(E, pairs):
    i, j = pairs[:, 0], pairs[:, 1]
    norms = np.sqrt(np.einsum("ij,ij->i", E, E))
    if len(E) ** 2 <= 4 * i.size * E.shape[1]:  # few rows, many pairs: their Gram matrix
        dot = (E @ E.T)[i, j]
    else:
        dot = np.einsum("ij,ij->i", E[i], E[j])
    denom = norms[i] * norms[j]
    return np.divide(dot, denom, out=np.zeros_like(dot), where=denom > 0)


def constraint_scores(E, L, pairs, signs):
    """Suspicion score of each constraint (see the module).

    Parameters
    ----------
    E : ndarray of shape (n_samples, r)
        The learned embedding.
    L : sparse matrix of shape (n_samples, n_samples)
        The graph Laplacian of the fit.
    pairs : ndarray of shape (m, 2)
    signs : ndarray of shape (m,)

    Returns
    -------
    ndarray of shape (m,)
        Scores in ``[-1, 1]``, higher is more suspicious.
    """
    # only the rows of the pairs' endpoints are read: the cost follows the constraints,
    # not the graph (a product over all of L at 10^6 points took seconds)
    pairs = np.asarray(pairs)
    rows, local = np.unique(pairs, return_inverse=True)
    local = local.reshape(pairs.shape)
    E = np.asarray(E, dtype=np.float64)
    L_rows = sp.csr_matrix(L)[rows]
    # L_ii of those rows from their stored entries (scipy's fancy indexing of the
    # diagonal cost more than the rest of the scores on small fits)
    owner = np.repeat(np.arange(len(rows)), np.diff(L_rows.indptr))
    on_diagonal = L_rows.indices == rows[owner]
    diagonal = np.zeros(len(rows))
    np.add.at(diagonal, owner[on_diagonal], L_rows.data[on_diagonal])
    neighbours = diagonal[:, None] * E[rows] - L_rows @ E
    return -0.5 * np.asarray(signs, dtype=np.float64) * (
        _cosines(E[rows], local) + _cosines(neighbours, local))


class ScoresOnRead:
    """``NPKL.constraint_scores_``, computed from ``embedding_``, ``laplacian_`` and
    ``side_info_`` when first read.

    A non-data descriptor: the first read stores the scores in the instance ``__dict__``,
    where later reads find them; a fit removes them (its new kernel scores anew). The fit
    itself does not need them, and a fit of a few hundred points would pay for them
    whether they are read or not. Without a fitted in-memory embedding (unfitted, or a fit
    on a Dask array) the attribute is missing (``AttributeError``).
    """

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        fitted = obj.__dict__
        E, C = fitted.get("embedding_"), fitted.get("side_info_")
        if not isinstance(E, np.ndarray) or C is None or "laplacian_" not in fitted:
            raise AttributeError(self.name)
        fitted[self.name] = constraint_scores(E, fitted["laplacian_"], C.pairs, C.signs)
        return fitted[self.name]


def most_suspicious(scores, constraints, k):
    """The ``k`` highest scores: their indices and ``[i, j, sign]`` rows (ties by index)."""
    k = min(int(k), len(scores))
    order = np.argsort(-scores, kind="stable")[:k]
    return order, constraints.to_array()[order]
