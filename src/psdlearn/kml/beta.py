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

import warnings

import numpy as np
from scipy.sparse.linalg import eigsh

from psdlearn._interrupt import interruptible

__all__ = ["EIGEN_RTOL", "centered_eigenpairs", "optimal_beta", "participation_ratio"]

#: Eigenvalues at or below ``EIGEN_RTOL * lambda_max`` are treated as zero. A dense
#: symmetric eigensolver in double precision resolves eigenvalues to about
#: ``n eps lambda_max`` (1e-13 lambda_max at n = 1e3), and the out-of-sample projection
#: divides by ``lambda_r``: below 1e-10 lambda_max round-off would be amplified over 1e3
#: times.
EIGEN_RTOL = 1e-10
#: Default of the deprecated ``n_components``: not passed.
_UNSET = "deprecated"
_NO_POSITIVE = ("the centered kernel has no positive eigenvalue: all points coincide in "
                "feature space.")


def centered_eigenpairs(Kc, rank=None, *, n_components=_UNSET):
    """Positive eigenpairs of a centered kernel, in decreasing order.

    Returns ``lambda_1 >= ... >= lambda_q > EIGEN_RTOL * lambda_1`` and orthonormal
    ``v_1, ..., v_q`` with ``Kc v_r = lambda_r v_r``: the expansion
    ``Kc ~ sum_r lambda_r v_r v_r^T`` whose eigenvalues :func:`optimal_beta` reweights.

    Parameters
    ----------
    Kc : ndarray of shape (n, n)
        Symmetric (centered) kernel matrix.
    rank : int or None, default=None
        None: every eigenvalue above ``EIGEN_RTOL * lambda_max`` (dense ``eigh``). An int
        ``p``: at most the top ``p`` of them, by Lanczos (``eigsh``) when ``p < n / 4``.
    n_components : int or None, default="deprecated"
        Deprecated alias of ``rank``; passing it emits a FutureWarning.

    Returns
    -------
    eigenvalues : ndarray of shape (q,)
        Decreasing, positive.
    eigenvectors : ndarray of shape (n, q)
        Orthonormal columns, each signed so that its entry of largest magnitude is
        positive (the solvers' signs are arbitrary; this makes refits agree).

    Raises
    ------
    ValueError
        ``Kc`` has no positive eigenvalue.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.kml.beta import centered_eigenpairs
    >>> lam, V = centered_eigenpairs(np.diag([3.0, 1.0, 0.0]))
    >>> lam
    array([3., 1.])
    >>> V.shape
    (3, 2)
    """
    if not (isinstance(n_components, str) and n_components == _UNSET):
        warnings.warn("centered_eigenpairs: n_components was renamed rank and will be "
                      "removed in the next release.", FutureWarning, stacklevel=2)
        rank = n_components
    n = Kc.shape[0]
    if not np.any(Kc):
        raise ValueError(_NO_POSITIVE)
    if rank is not None and rank < n // 4:
        # a fixed start vector: the Lanczos result must not depend on a hidden seed
        v0 = np.random.default_rng(0).standard_normal(n)
        vals, vecs = eigsh(Kc, k=int(rank), which="LA", v0=v0)
    else:  # numpy's eigh releases the GIL: a Ctrl-C acts during it (interruptible)
        vals, vecs = interruptible(np.linalg.eigh, Kc)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    if rank is not None:
        vals, vecs = vals[:rank], vecs[:, :rank]
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

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.kml.beta import participation_ratio
    >>> participation_ratio(np.diag([4.0, 1.0, 1.0]))  # 36 / 18
    2
    """
    frob = float(np.einsum("ij,ij->", Kc, Kc))
    if frob == 0.0:
        return 1
    ratio = float(np.trace(Kc)) ** 2 / frob
    return int(min(max(np.ceil(ratio - 1e-9), 1), Kc.shape[0]))


def optimal_beta(d, c, eps=0.0):
    """Closed form (4): ``argmin beta^T D beta`` s.t. ``1^T beta = c``, ``D = diag(d + ridge)``.

    The Lagrangian of ``min beta^T D beta`` under ``1^T beta = c`` gives
    ``2 D beta = rho 1``, hence ``beta = c D^{-1} 1 / (1^T D^{-1} 1)`` (Yeung, Chang & Dai
    2007, eq. 4): each weight is inversely proportional to how much its eigenvector varies
    over the similar pairs.

    Parameters
    ----------
    d : ndarray of shape (q,)
        Diagonal of ``D_S`` (non-negative).
    c : float
        Value of ``1^T beta`` (> 0).
    eps : float, default=0.0
        Relative ridge (the paper's footnote 3): ``D_S + eps * mean(d) * I`` is used.

    Returns
    -------
    ndarray of shape (q,)
        Positive, summing to ``c``.

    Raises
    ------
    ValueError
        ``D_S + eps * mean(d) * I`` has a zero entry.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.kml.beta import optimal_beta
    >>> optimal_beta(np.array([1.0, 3.0]), c=4.0)
    array([3., 1.])
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
