r"""Low-rank graph kernels: the cluster kernel and the order-constrained spectral kernel.

The baselines "Cluster" (Chapelle, Weston & Schölkopf 2002) and "Spectral" (the
non-parametric spectral graph kernel of Zhu, Kandola, Ghahramani & Lafferty 2005) of
Lan et al. (2017) Table 1. Both are ``K = G G^T`` with ``G = Phi diag(g)``, ``Phi`` the
``r`` leading eigenvectors of the normalized affinity of a kNN graph,

.. math::

    A = D^{-1/2} S D^{-1/2} = \Phi\, \operatorname{diag}(a)\, \Phi^T + \dots,
    \qquad 1 \ge a_1 \ge \dots \ge a_r,

i.e. the ``r`` trailing eigenvectors of the normalized Laplacian ``L = (1 + delta) I - A``
(:func:`psdlearn.graph.knn_laplacian`; ``a = 1 + delta - eig(L)``). They differ in the
spectral transfer ``g^2 = phi(a)``:

- cluster kernel: a fixed function of the eigenvalues, ``"step"`` ``phi = 1``,
  ``"linear"`` ``phi = a``, ``"polystep"`` ``phi = a^{1/2}`` (the top-``r`` branch of
  Chapelle et al.'s poly-step; the bottom branch ``a^2`` lies outside the rank-``r``
  kernel), clipped at 0; then, as in Chapelle et al., the kernel is normalized to a unit
  diagonal, ``K_ij / sqrt(K_ii K_jj)`` (rows of ``G`` scaled to unit norm);
- spectral kernel: ``phi = mu`` learned from the labels, ``mu_1 >= ... >= mu_r >= 0`` (the
  order constraint: smoother eigenvectors weigh more) maximizing the alignment of the
  kernel on the labelled points with ``y y^T``; see :func:`order_constrained_weights`.
  Scaled to ``tr(K) = n`` (the alignment leaves the scale free; Zhu et al. fix the trace).

Deviation from the originals: both use the sparse kNN graph of
:func:`psdlearn.graph.knn_graph` (Gaussian weights on ``k`` neighbours) instead of a dense
Gaussian affinity (Chapelle et al.), so ``r`` eigenvectors cost a sparse Lanczos run and
no ``n x n`` matrix is formed.

References
----------
Chapelle, O., Weston, J. & Schölkopf, B. (2002). Cluster kernels for semi-supervised
learning. NIPS 15.

Zhu, X., Kandola, J., Ghahramani, Z. & Lafferty, J. (2005). Nonparametric transforms of
graph kernels for semi-supervised learning. NIPS 17.
"""

from __future__ import annotations

import numpy as np

from psdlearn.graph import DEFAULT_DELTA, knn_laplacian
from psdlearn.npkl.mfpc import trailing_eigenvectors
from reproductions.baselines.alignment import cone_fit, target_kernel

__all__ = ["TRANSFERS", "cluster_kernel_features", "graph_spectrum",
           "order_constrained_weights", "spectral_kernel_features"]

#: Transfer functions of the cluster kernel.
TRANSFERS = ("step", "linear", "polystep")


def graph_spectrum(X, n_components, *, n_neighbors=10, delta=DEFAULT_DELTA, random_state=None):
    """Leading eigenpairs of the normalized kNN affinity ``D^{-1/2} S D^{-1/2}``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    n_components : int
        ``r``.
    n_neighbors : int, default=10
    delta : float, default=0.01
        Ridge of the Laplacian whose trailing eigenvectors are computed (shifts nothing).
    random_state : int, RandomState instance or None
        Seeds an approximate neighbour search (large ``n``).

    Returns
    -------
    a : ndarray of shape (r,), descending
        Eigenvalues of the affinity.
    Phi : ndarray of shape (n_samples, r), orthonormal columns
    """
    L = knn_laplacian(X, n_neighbors=n_neighbors, delta=delta, random_state=random_state)
    lam, Phi = trailing_eigenvectors(L, n_components)
    return 1.0 + delta - lam, Phi


def _transfer(a, transfer):
    if transfer == "step":
        return np.ones_like(a)
    if transfer == "linear":
        return np.maximum(a, 0.0)
    if transfer == "polystep":
        return np.sqrt(np.maximum(a, 0.0))
    raise ValueError(f"transfer must be one of {TRANSFERS}, got {transfer!r}.")


def cluster_kernel_features(a, Phi, transfer="polystep", *, normalize=True):
    """Features ``G`` of the cluster kernel ``K = G G^T`` (Chapelle et al. 2002).

    Parameters
    ----------
    a, Phi : output of :func:`graph_spectrum`
    transfer : {"step", "linear", "polystep"}, default="polystep"
        ``phi(a)``: ``1``, ``a`` or ``sqrt(a)`` (clipped at 0).
    normalize : bool, default=True
        Scale to a unit diagonal, ``K_ij / sqrt(K_ii K_jj)``. Without it
        ``G^T G = diag(phi(a))``.

    Returns
    -------
    G : ndarray of shape (n_samples, r)
    """
    G = Phi * np.sqrt(_transfer(np.asarray(a, dtype=np.float64), transfer))
    if normalize:
        norms = np.linalg.norm(G, axis=1, keepdims=True)
        G = np.divide(G, norms, out=np.zeros_like(G), where=norms > 0)
    return G


def order_constrained_weights(Phi_l, y_l):
    r"""Spectral weights ``mu_1 >= ... >= mu_r >= 0`` of largest alignment (Zhu et al. 2005).

    Maximizes ``rho(Phi_l diag(mu) Phi_l^T, y y^T)`` over the order cone. With ``mu = P w``,
    ``P`` upper triangular of ones (``mu_i = sum_{j >= i} w_j``), the cone is ``w >= 0``, and
    the alignment maximizer is the nonnegative least-squares fit of ``y y^T`` by the
    columns ``sum_{j <= i} vec(phi_j phi_j^T)`` (see :mod:`reproductions.baselines.alignment`).

    Parameters
    ----------
    Phi_l : ndarray of shape (l, r)
        Rows of the eigenvectors at the labelled points.
    y_l : array-like of shape (l,)

    Returns
    -------
    mu : ndarray of shape (r,)
        Non-increasing, nonnegative, ``sum(mu) = 1`` (zero if no direction aligns).
    """
    Phi_l = np.asarray(Phi_l, dtype=np.float64)
    B = np.einsum("ik,jk->ijk", Phi_l, Phi_l).reshape(-1, Phi_l.shape[1])
    w = cone_fit(np.cumsum(B, axis=1), target_kernel(y_l).ravel())
    mu = np.cumsum(w[::-1])[::-1]
    total = mu.sum()
    return mu / total if total > 0 else mu


def spectral_kernel_features(Phi, y):
    """Features ``G = Phi diag(sqrt(mu))`` of the spectral kernel, ``tr(G G^T) = n``.

    Parameters
    ----------
    Phi : ndarray of shape (n_samples, r)
        From :func:`graph_spectrum`.
    y : array-like of shape (n_samples,)
        Partial labels, ``-1`` = unlabelled.

    Returns
    -------
    G : ndarray of shape (n_samples, r)
    mu : ndarray of shape (r,)
        The weights of :func:`order_constrained_weights`.
    """
    y = np.asarray(y)
    lab = y != -1
    mu = order_constrained_weights(Phi[lab], y[lab])
    # Phi has orthonormal columns: tr(Phi diag(mu) Phi^T) = sum(mu) = 1
    return Phi * np.sqrt(mu * len(y)), mu
