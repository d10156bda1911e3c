"""Eigen-reweighting of a centered kernel from similar pairs (Yeung et al. 2007, 2.2, 3.2).

With the centered kernel ``K = sum_r lambda_r v_r v_r^T`` and the family
``K_beta = sum_r beta_r^2 v_r v_r^T``, the mean squared distance over the similar pairs
``S`` is

.. math::

    J_S(\\beta) = \\frac{1}{|S|} \\sum_{(i, j) \\in S} \\|\\phi_\\beta(x_i) - \\phi_\\beta(x_j)\\|^2
               = \\beta^T D_S \\beta, \\qquad
    (D_S)_{rr} = \\frac{1}{|S|} \\sum_{(i, j) \\in S} (v_{ri} - v_{rj})^2 \\quad (2),

minimized under ``1^T beta = c``: the Lagrangian (3) gives ``2 D_S beta = rho 1``, hence
the closed form (4) ``beta = c D_S^{-1} 1 / (1^T D_S^{-1} 1)``, with
``c = sum_r sqrt(lambda_r)`` (so that ``beta_r = sqrt(lambda_r)``, the unmodified kernel,
is feasible). In the scalable version the vectors are ``W alpha_r`` (eq. 7, read with
``alpha_r`` for the misprinted ``v_r``) and the eigenvalues those of the landmark kernel.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh
from scipy.sparse.linalg import eigsh

__all__ = ["EIGEN_RTOL", "centered_eigenpairs", "optimal_beta", "participation_ratio"]

#: Eigenvalues at or below ``EIGEN_RTOL * lambda_max`` are treated as zero. A dense
#: symmetric eigensolver in double precision resolves eigenvalues to about
#: ``n eps lambda_max`` (1e-13 lambda_max at n = 1e3), and the out-of-sample projection
#: divides by ``lambda_r``: below 1e-10 lambda_max round-off would be amplified over 1e3
#: times.
EIGEN_RTOL = 1e-10
_NO_POSITIVE = ("the centered kernel has no positive eigenvalue: all points coincide in "
                "feature space.")


def centered_eigenpairs(Kc, n_components=None):
    """Positive eigenpairs of a centered kernel, in decreasing order.

    Parameters
    ----------
    Kc : ndarray of shape (n, n)
        Symmetric (centered) kernel matrix.
    n_components : int or None
        None: every eigenvalue above ``EIGEN_RTOL * lambda_max`` (dense ``eigh``). An int
        ``p``: at most the top ``p`` of them, by Lanczos (``eigsh``) when ``p < n / 4``.

    Returns
    -------
    eigenvalues : ndarray of shape (q,)
        Decreasing, positive.
    eigenvectors : ndarray of shape (n, q)
        Orthonormal columns, each signed so that its entry of largest magnitude is
        positive (the solvers' signs are arbitrary; this makes refits agree).
    """
    n = Kc.shape[0]
    if not np.any(Kc):
        raise ValueError(_NO_POSITIVE)
    if n_components is not None and n_components < n // 4:
        # a fixed start vector: the Lanczos result must not depend on a hidden seed
        v0 = np.random.default_rng(0).standard_normal(n)
        vals, vecs = eigsh(Kc, k=int(n_components), which="LA", v0=v0)
    else:
        vals, vecs = eigh(Kc)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    if n_components is not None:
        vals, vecs = vals[:n_components], vecs[:, :n_components]
    if vals.size == 0 or vals[0] <= 0:
        raise ValueError(_NO_POSITIVE)
    keep = vals > EIGEN_RTOL * vals[0]
    vecs = vecs[:, keep]
    vecs *= np.sign(vecs[np.argmax(np.abs(vecs), axis=0), np.arange(vecs.shape[1])])
    return vals[keep], np.ascontiguousarray(vecs)


def participation_ratio(Kc):
    """Effective number of eigenvalues of a PSD matrix: ``ceil((sum lambda)^2 / sum lambda^2)``.

    The participation ratio ``tr(K)^2 / ||K||_F^2`` is 1 for a rank-one matrix and ``q``
    for ``q`` equal eigenvalues; it needs no eigendecomposition.

    Parameters
    ----------
    Kc : ndarray of shape (n, n)
        Symmetric positive semidefinite matrix (a centered kernel).

    Returns
    -------
    int
        At least 1, at most ``n``.
    """
    frob = float(np.einsum("ij,ij->", Kc, Kc))
    if frob == 0.0:
        return 1
    ratio = float(np.trace(Kc)) ** 2 / frob
    return int(min(max(np.ceil(ratio - 1e-9), 1), Kc.shape[0]))


def optimal_beta(d, c, eps=0.0):
    """Closed form (4): ``argmin beta^T D beta`` s.t. ``1^T beta = c``, ``D = diag(d + ridge)``.

    Parameters
    ----------
    d : ndarray of shape (q,)
        Diagonal of ``D_S`` (non-negative).
    c : float
        Value of ``1^T beta`` (> 0).
    eps : float
        Relative ridge (Yeung et al. 2007, footnote 3): ``D_S + eps * mean(d) * I`` is used.

    Returns
    -------
    ndarray of shape (q,)
        Positive, summing to ``c``.
    """
    ridge = eps * float(np.mean(d))
    dd = d + ridge
    if np.any(dd <= 0):
        raise ValueError(
            "D_S is singular (some eigenvector takes equal values at both ends of every "
            "similar pair); set eps > 0 to regularize it."
        )
    inv = 1.0 / dd
    return c * inv / inv.sum()
