r"""Triplet algebra of PSDBoost without forming any ``D x D`` matrix ``A_r``.

For a triplet ``r = (i, j, k)`` write ``d_j = a_i - a_j`` and ``d_k = a_i - a_k`` and

.. math::

    A_r = d_k d_k^T - d_j d_j^T, \qquad
    \langle A_r, u u^T \rangle = (d_k^T u)^2 - (d_j^T u)^2 .

The stacked differences are sparse incidence matrices times the data:
``D_k = B_k X`` and ``D_j = B_j X`` with ``B_k`` (t x n) holding ``+1`` at column ``i``
and ``-1`` at column ``k`` of row ``r``. Hence, for dual weights ``w``,

.. math::

    H(w) = \sum_r w_r A_r = X^T M(w) X, \qquad
    M(w) = B_k^T \operatorname{Diag}(w) B_k - B_j^T \operatorname{Diag}(w) B_j ,

where ``M(w)`` is an ``n x n`` sparse matrix with at most ``4 t`` stored entries. A
product ``H u = X^T (M (X u))`` costs ``O(n D + t)``: this is the matrix-free form
``D_k^T (w * D_k u) - D_j^T (w * D_j u)`` without materializing ``D_k`` or ``D_j``
(``t x D`` each, 1.25 GB at ``t = 10^5``, ``D = 784``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from psdlearn.psdboost._bounds import margin_scale

__all__ = ["DENSE_MAX_FEATURES", "TripletOperator", "eigen_method"]

#: ``eigen_solver="auto"`` forms ``H`` and calls dense ``eigh`` up to this dimension
#: (a dense ``D x D`` product and ``eigh`` beat Lanczos' restarts there), Lanczos above.
DENSE_MAX_FEATURES = 64
#: Rows per block when the triplet differences are formed for their norms.
_CHUNK = 4096


def eigen_method(eigen_solver, n_features):
    """``eigen_solver`` with ``"auto"`` resolved: ``"dense"`` up to
    ``DENSE_MAX_FEATURES`` features, ``"lanczos"`` above."""
    if eigen_solver == "auto":
        return "dense" if n_features <= DENSE_MAX_FEATURES else "lanczos"
    return eigen_solver


class TripletOperator:
    """The matrices ``A_r`` of a triplet set, applied through ``X`` and incidences.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    triplets : ndarray of shape (t, 3), int64
        Valid rows ``(i, j, k)`` (checked by the caller).

    Attributes
    ----------
    X : ndarray of shape (n_used, n_features)
        The rows of ``X`` that occur in a triplet (the others never enter ``H``).
    Bj, Bk : scipy.sparse.csr_matrix of shape (t, n_used)
        Incidences with ``Bj @ X = D_j`` and ``Bk @ X = D_k``.
    """

    def __init__(self, X, triplets):
        used, inverse = np.unique(triplets, return_inverse=True)
        local = inverse.reshape(triplets.shape)
        self.X = np.ascontiguousarray(X[used])
        t, n = len(triplets), len(used)
        rows = np.repeat(np.arange(t), 2)
        ones = np.tile([1.0, -1.0], t)
        self.Bj = sp.csr_matrix((ones, (rows, local[:, [0, 1]].ravel())), shape=(t, n))
        self.Bk = sp.csr_matrix((ones, (rows, local[:, [0, 2]].ravel())), shape=(t, n))
        self.n_triplets = t
        self.n_features = X.shape[1]

    def difference_stats(self):
        """``||d_j||^2``, ``||d_k||^2`` and ``d_j^T d_k`` per triplet, each of shape (t,).

        Formed block by block so that memory stays ``O(block x D)``.
        """
        t = self.n_triplets
        nj, nk, jk = np.empty(t), np.empty(t), np.empty(t)
        for start in range(0, t, _CHUNK):
            sl = slice(start, min(start + _CHUNK, t))
            dj = self.Bj[sl] @ self.X
            dk = self.Bk[sl] @ self.X
            nj[sl] = np.einsum("ij,ij->i", dj, dj)
            nk[sl] = np.einsum("ij,ij->i", dk, dk)
            jk[sl] = np.einsum("ij,ij->i", dj, dk)
        return nj, nk, jk

    def margin_scale(self):
        """:func:`~psdlearn.psdboost._bounds.margin_scale` of this triplet set."""
        nj, nk, _ = self.difference_stats()
        return margin_scale(nj, nk, self.n_features)

    def margins(self, factor):
        """``<A_r, F^T F>`` for every triplet, for a factor ``F`` of shape (m, D).

        Returns
        -------
        ndarray of shape (t,)
        """
        Z = self.X @ np.atleast_2d(factor).T
        p, q = self.Bk @ Z, self.Bj @ Z
        return np.einsum("ij,ij->i", p, p) - np.einsum("ij,ij->i", q, q)

    def column_coefficients(self, U):
        """``<A_r, u_c u_c^T>`` for each column ``u_c`` of ``U`` (D, m): shape (t, m)."""
        Z = self.X @ U
        return (self.Bk @ Z) ** 2 - (self.Bj @ Z) ** 2

    def weighted_incidence(self, w):
        """``M(w)`` of the module docstring on the samples it touches.

        Only triplets with ``w_r != 0`` enter ``H(w)``; near the optimum that is a few
        times ``1 / C`` of them, so restricting ``X`` to their samples makes each product
        with ``H`` several times cheaper than one over every sample of the triplet set.

        Returns
        -------
        M : scipy.sparse.csr_matrix of shape (n_support, n_support)
        support : ndarray of shape (n_support,)
            Rows of :attr:`X` that ``M`` acts on: ``H(w) = X[support]^T M X[support]``.
        """
        active = np.flatnonzero(w)
        Bk, Bj = self.Bk[active], self.Bj[active]
        support = np.union1d(Bk.indices, Bj.indices)
        Bk, Bj = Bk[:, support], Bj[:, support]
        W = sp.diags(w[active])
        return (Bk.T @ W @ Bk - Bj.T @ W @ Bj).tocsr(), support

    def hessian(self, w):
        """Dense ``H(w) = X^T M(w) X`` of shape (D, D), symmetrized."""
        M, support = self.weighted_incidence(w)
        Xs = self.X[support]
        H = Xs.T @ (M @ Xs)
        return (H + H.T) / 2.0

    def top_eigenpairs(self, w, k, method, v0=None):
        """The ``k`` largest eigenpairs of ``H(w)``: the pricing step (B1) and its runners-up.

        Parameters
        ----------
        w : ndarray of shape (t,)
            Dual weights.
        k : int
            Number of pairs (``1`` is problem (B1) exactly).
        method : {"dense", "lanczos"}
            ``"dense"``: form ``H`` and call LAPACK ``eigh`` for the top ``k`` pairs only.
            ``"lanczos"``: implicitly restarted Lanczos (ARPACK ``eigsh``) on the operator
            ``u -> X^T (M (X u))``, started from ``v0`` (the previous top eigenvector, which
            changes little between iterations once the weights settle).
        v0 : ndarray of shape (D,), optional

        Returns
        -------
        vals : ndarray of shape (k,)
            Descending.
        vecs : ndarray of shape (D, k)
            Unit eigenvectors.
        n_matvec : int
            Products with ``H`` (0 for ``"dense"``).
        """
        D = self.n_features
        k = min(k, D)
        if method == "dense" or k >= D - 1:
            vals, vecs = eigh(self.hessian(w), subset_by_index=[D - k, D - 1])
            return vals[::-1], vecs[:, ::-1], 0
        M, support = self.weighted_incidence(w)
        X = self.X[support]
        count = [0]

        def matvec(u):
            count[0] += 1
            return X.T @ (M @ (X @ np.ravel(u)))

        op = LinearOperator((D, D), matvec=matvec, dtype=np.float64)
        try:
            vals, vecs = eigsh(op, k=k, which="LA", v0=v0, tol=1e-10,
                               ncv=min(D, max(2 * k + 1, 20)), maxiter=50 * D)
        except ArpackNoConvergence:
            # A stalled Lanczos run would underestimate lambda_max and could stop the
            # column generation early: fall back to the exact dense eigenpairs.
            vals, vecs, _ = self.top_eigenpairs(w, k, "dense")
            return vals, vecs, count[0]
        order = np.argsort(vals)[::-1]
        return vals[order], vecs[:, order], count[0]
