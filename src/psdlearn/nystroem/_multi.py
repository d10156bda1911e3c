"""Multiple-kernel generalized Nystrom (Lan et al. 2017 §4): alternating ``T^(j)`` / ``alpha_j``.

Problem (17) with ``T^(j) = alpha_j S^(j)``, shared landmarks, ``F_j = E_l^(j)``:

.. math::

    \\min_{T^{(j)} \\succeq 0,\\ \\alpha_j \\ge 0} \\;
      \\lambda \\sum_j \\|T^{(j)} - \\alpha_j S_0^{(j)}\\|_F^2
      + \\Big\\|\\sum_j F_j T^{(j)} F_j^T - K^*_l\\Big\\|_F^2 .

The data term equals ``sum_{j,k} <T_j, C_jk T_k C_kj> - 2 sum_j <T_j, s_j s_j^T> + c`` with
``C_jk = F_j^T F_k``, ``s_j = F_j^T Y`` and ``c = ||K^*_l||_F^2``, so only landmark-sized
matrices appear. For fixed ``alpha`` the ``T^(j)`` are updated cyclically, each by problem
(7) with target ``K^*_{-j} = K^*_l - sum_{k != j} F_k T_k F_k^T`` (eq. 18), i.e.
``B_j = s_j s_j^T - sum_{k != j} C_jk T_k C_kj``; then ``alpha_j`` by eq. (19). Both steps
decrease (17), so its value never increases over the outer iterations.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import nnls

from psdlearn._linalg import psd_projection
from psdlearn._solver import SolverResult
from psdlearn.nystroem._beta import optimal_beta
from psdlearn.nystroem.dictionary import (
    QuadraticData,
    closed_form_start,
    objective,
    solve_dictionary,
)

__all__ = ["multiple_objective", "prior_mixture", "solve_multiple"]


def multiple_objective(T, alpha, priors, lam, cross, s, c):
    """Objective (17) in the ``T^(j)`` parametrisation (module docstring)."""
    M = len(T)
    val = c
    for j in range(M):
        val += lam * np.sum((T[j] - alpha[j] * priors[j]) ** 2)
        val -= 2.0 * np.sum(T[j] * (s[j] @ s[j].T))
        for k in range(M):
            val += np.sum(T[j] * (cross[j][k] @ T[k] @ cross[k][j]))
    return float(val)


def prior_mixture(priors, cross, s, rtol=1e-12):
    """Weights ``alpha >= 0`` minimizing (17) over the priors' rays ``T^(j) = alpha_j S_0^(j)``.

    There the prior term of (17) vanishes and the data term is the least-squares fit of
    ``K^*_l`` by the nonnegative mixture of ``G_j = F_j S_0^(j) F_j^T``,

    .. math::

        \\min_{\\alpha \\ge 0} \\alpha^T G \\alpha - 2 g^T \\alpha, \\qquad
        G_{jk} = \\langle S_0^{(j)} C_{jk}, C_{jk} S_0^{(k)} \\rangle, \\quad
        g_j = \\langle S_0^{(j)}, s_j s_j^T \\rangle,

    with ``G_jk = <G_j, G_k>`` written through ``m x m`` matrices only. It is solved as
    the nonnegative least-squares problem ``min ||R alpha - R^{-T} g||`` with
    ``G = R^T R`` (``R`` from the eigendecomposition of the ``M x M`` Gram matrix scaled
    to unit diagonal, directions with eigenvalue below ``rtol`` times the largest
    dropped).

    Returns
    -------
    alpha : ndarray of shape (M,)
    """
    M = len(priors)
    G = np.empty((M, M))
    for j in range(M):
        for k in range(j, M):
            G[j, k] = G[k, j] = np.sum((priors[j] @ cross[j][k]) * (priors[k] @ cross[k][j]).T)
    g = np.array([np.sum(priors[j] * (s[j] @ s[j].T)) for j in range(M)])
    # unit diagonal first: the beta_j spread the G_jj over many orders of magnitude
    d = np.sqrt(np.maximum(np.diag(G), 0.0))
    live = d > 0
    d = np.where(live, d, 1.0)
    e, V = eigh(G / np.outer(d, d))
    keep = e > rtol * max(e[-1], 0.0)
    if not keep.any():
        return np.zeros(M)
    root = np.sqrt(e[keep])
    gamma = nnls((V[:, keep] * root).T, (V[:, keep].T @ (g / d)) / root)[0]
    return np.where(live, gamma / d, 0.0)


def solve_multiple(priors, lam, cross, s, c, *, max_iter=20, tol=1e-4, inner_max_iter=20,
                   inner_tol=1e-4, callback=None):
    """Alternating optimisation of (17) for one ``lambda`` (Lan et al. 2017 §4.1).

    The paper gives no start. We start from ``T^(j) = alpha_j S_0^(j)`` with the
    ``alpha`` of :func:`prior_mixture`, the minimizer of (17) over that family (so its
    value is at most that of equal weights ``alpha_j = 1 / M``, for instance): the
    ``S_0^(j)``, each scaled by its own ``beta_j`` (8), can differ by orders of
    magnitude, so equal weights would let the kernel with the largest ``beta_j``
    dominate. Each ``T^(j)``-update starts from the better (in its objective) of the
    current ``T^(j)`` and the projected closed form (12)-(13), then runs at most
    ``inner_max_iter`` projected-gradient iterations.

    Parameters
    ----------
    priors : list of M ndarray of shape (m, m)
        ``S_0^(j) = beta_j W_j^+``.
    lam : float
    cross : list of lists of ndarray of shape (m, m)
        ``cross[j][k] = F_j^T F_k``.
    s : list of ndarray of shape (m, C)
        ``F_j^T Y``.
    c : float
        ``||K^*_l||_F^2``.
    max_iter : int
        Outer (alternation) iterations.
    tol : float
        Stop when (17) decreases by less than ``tol`` relatively over one outer iteration.
    inner_max_iter, inner_tol : int, float
        Passed to :func:`solve_dictionary`.
    callback : callable, optional
        Called as ``callback(value)`` after every alternation, with the value of (17);
        returning ``True`` stops the alternation.

    Returns
    -------
    SolverResult
        ``objective_history`` ((17) at the start, then after every alternation),
        ``time_history`` (cumulative seconds since the call), ``n_iter`` alternations,
        ``converged``; ``embedding`` is ``None``. ``info`` (read as attributes): ``T``, the
        tuple of the ``T^(j)``, and ``alpha``. The callback's stop signal or a
        ``KeyboardInterrupt`` ends the alternation: the result holds the ``T^(j)`` and
        ``alpha`` of the last complete alternation (the start if none completed), with
        ``interrupted=True`` and ``converged=False``.
    """
    start_time = time.perf_counter()
    M = len(priors)
    # the eigensystems of C_jj serve every T^(j) update (closed form and iterations)
    eigs = [eigh(cross[j][j]) for j in range(M)]
    alpha = prior_mixture(priors, cross, s)
    steps = [None] * M
    T = [alpha[j] * priors[j] for j in range(M)]
    # (T, alpha, alternations, history, times) of the last complete alternation, stored as
    # one tuple: a Ctrl-C at any point leaves it consistent
    state = (tuple(T), alpha.copy(), 0,
             [multiple_objective(T, alpha, priors, lam, cross, s, c)],
             [time.perf_counter() - start_time])
    converged = interrupted = False
    try:
        for _ in range(max_iter):
            for j in range(M):
                B = s[j] @ s[j].T
                for k in range(M):
                    if k != j:
                        B = B - cross[j][k] @ T[k] @ cross[k][j]
                data = QuadraticData([cross[j][j]], 0.5 * (B + B.T),
                                     curvature=float(eigs[j][0][-1] ** 2), eig=eigs[j])
                prior = alpha[j] * priors[j]
                start = psd_projection(closed_form_start(prior, lam, data))
                if objective(start, prior, lam, data) > objective(T[j], prior, lam, data):
                    start = T[j]
                # the Armijo search starts at the last accepted curvature of this kernel:
                # from 2 lambda it would back off log2(curvature / lambda) times per update
                res = solve_dictionary(prior, lam, data, S_init=start,
                                       max_iter=inner_max_iter, tol=inner_tol,
                                       a_init=steps[j])
                if res.interrupted:
                    raise KeyboardInterrupt
                T[j], steps[j] = res.S, res.step
                alpha[j] = optimal_beta(T[j], priors[j])  # eq. (19)
            value = multiple_objective(T, alpha, priors, lam, cross, s, c)
            state = (tuple(T), alpha.copy(), state[2] + 1, [*state[3], value],
                     [*state[4], time.perf_counter() - start_time])
            if callback is not None and callback(value) is True:
                interrupted = True
                break
            if state[3][-2] - value <= tol * abs(state[3][-2]):
                converged = True
                break
    except KeyboardInterrupt:
        interrupted = True
    T, alpha, n_iter, history, times = state
    return SolverResult(embedding=None, objective_history=history, time_history=times,
                        n_iter=n_iter, converged=converged, interrupted=interrupted,
                        info={"T": T, "alpha": alpha})
