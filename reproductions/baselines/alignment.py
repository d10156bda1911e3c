r"""Kernel weights by (centered) alignment with the ideal kernel: ABMKL and CABMKL.

The multiple-kernel baselines of Lan et al. (2017) Table 2. Given base kernels ``K_1 ..
K_M`` on the ``l`` labelled points and the target ``T = y y^T`` (labels ``+-1``; for more
classes ``T_ij = 1`` within a class and ``-1`` across), the weights ``mu >= 0`` of
``K_mu = sum_k mu_k K_k`` maximize the alignment

.. math::

    \rho(K_\mu, T) = \frac{\langle K_\mu, T \rangle_F}{\|K_\mu\|_F \, \|T\|_F},

on the raw kernels (ABMKL, Cristianini et al. 2002; Lanckriet et al. 2004) or on the
centered ones ``K^c = H K H``, ``H = I - 1 1^T / l`` (CABMKL, Cortes, Mohri & Rostamizadeh
2012). Cortes et al. (Prop. 9) reduce the centered problem to the QP

.. math::

    v^* = \arg\min_{v \ge 0} \; v^T M v - 2 v^T a, \qquad
    M_{kh} = \langle K^c_k, K^c_h \rangle_F, \quad a_k = \langle K^c_k, T \rangle_F,

with ``mu = v^* / ||v^*||``; the same reduction holds without centering. Since ``v^T M v -
2 v^T a = ||sum_k v_k vec(K_k) - vec(T)||^2 - ||T||^2``, the QP is a nonnegative least squares
problem over the ``M`` columns ``vec(K_k)``, solved exactly by ``scipy.optimize.nnls``
(active set). Why it maximizes the alignment: over any convex cone ``C`` the minimizer of
``||B v - t||`` satisfies ``<B v*, B v* - t> = 0`` (optimal scaling), so its value is
``||t||^2 (1 - rho(B v*, t)^2)``: the least-squares projection onto the cone is the
direction of largest alignment (when ``<B v*, t> > 0``). The ordered spectral weights of
:func:`reproductions.baselines.spectral.order_constrained_weights` use the same reduction.

The scale of ``mu`` is not fixed by the alignment; here ``sum_k mu_k = 1``, so a combination
of unit-diagonal kernels (Gaussian) keeps a unit diagonal.

References
----------
Cortes, C., Mohri, M. & Rostamizadeh, A. (2012). Algorithms for learning kernels based on
centered alignment. JMLR 13.

Cristianini, N., Shawe-Taylor, J., Elisseeff, A. & Kandola, J. (2002). On kernel-target
alignment. NIPS 14.

Lan, L., Zhang, K., Ge, H., Cheng, W., Liu, J., Rauber, A., Li, X.-L., Wang, J. & Zha, H.
(2017). Low-rank decomposition meets kernel learning: a generalized Nystrom method.
Artificial Intelligence 250.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls
from sklearn.preprocessing import KernelCenterer

__all__ = ["AlignmentResult", "alignment", "alignment_weights", "center_kernel", "cone_fit",
           "target_kernel"]


def center_kernel(K):
    """``H K H`` with ``H = I - 1 1^T / n`` (scikit-learn's ``KernelCenterer``); a new array."""
    return KernelCenterer().fit_transform(np.asarray(K, dtype=np.float64))


def target_kernel(y):
    """``T = y y^T`` for labels ``+-1``: ``T_ij = 1`` within a class, ``-1`` across."""
    y = np.asarray(y)
    return np.where(y[:, None] == y[None, :], 1.0, -1.0)


def alignment(K1, K2, centered=False):
    """Alignment ``<K1, K2>_F / (||K1||_F ||K2||_F)``, of ``H K H`` when ``centered``.

    Parameters
    ----------
    K1, K2 : array-like of shape (l, l)
        Kernel matrices on the same points.
    centered : bool, default=False
        Align the centered kernels ``H K H`` (``H = I - 1 1^T / l``).

    Returns
    -------
    float
        In ``[-1, 1]``; 0 when either kernel is zero.
    """
    if centered:
        K1, K2 = center_kernel(K1), center_kernel(K2)
    den = np.linalg.norm(K1) * np.linalg.norm(K2)
    return float(np.sum(K1 * K2) / den) if den > 0 else 0.0


def cone_fit(columns, target):
    """``argmin_{v >= 0} ||columns @ v - target||`` by active-set NNLS (exact)."""
    v, _ = nnls(np.asarray(columns, dtype=np.float64), np.asarray(target, dtype=np.float64),
                maxiter=50 * columns.shape[1])
    return v


@dataclass(frozen=True)
class AlignmentResult:
    """Output of :func:`alignment_weights`.

    Attributes
    ----------
    weights : ndarray of shape (n_kernels,)
        ``mu >= 0``, ``sum(mu) = 1``.
    v : ndarray of shape (n_kernels,)
        The QP solution ``v*`` (unnormalized).
    M : ndarray of shape (n_kernels, n_kernels)
    a : ndarray of shape (n_kernels,)
        The QP data: ``M_kh = <K_k, K_h>``, ``a_k = <K_k, T>`` (of the centered kernels for
        CABMKL).
    alignment : float
        ``rho(K_mu, T)`` reached (centered for CABMKL).
    """

    weights: np.ndarray
    v: np.ndarray
    M: np.ndarray
    a: np.ndarray
    alignment: float


def alignment_weights(kernels, y, *, centered=True):
    """Weights ``mu >= 0`` of the kernels that maximize the (centered) alignment with ``y y^T``.

    Parameters
    ----------
    kernels : sequence of ndarray of shape (l, l)
        Base kernels on the labelled points.
    y : array-like of shape (l,)
        Labels of those points.
    centered : bool, default=True
        Centered alignment (CABMKL, Cortes et al. 2012) or raw alignment (ABMKL).

    Returns
    -------
    AlignmentResult

    Raises
    ------
    ValueError
        If no kernel is positively aligned with the target (``v* = 0``).
    """
    T = target_kernel(y)
    Ks = [center_kernel(K) if centered else np.asarray(K, dtype=np.float64) for K in kernels]
    B = np.column_stack([K.ravel() for K in Ks])
    t = (center_kernel(T) if centered else T).ravel()
    v = cone_fit(B, t)
    if not np.any(v > 0):
        raise ValueError("no kernel is positively aligned with the labels: the weights vanish.")
    mu = v / v.sum()
    K_mu = np.tensordot(mu, np.asarray(Ks), axes=1)
    return AlignmentResult(weights=mu, v=v, M=B.T @ B, a=B.T @ t,
                           alignment=alignment(K_mu, T, centered=centered))
