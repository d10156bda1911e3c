"""The scale ``beta`` of the prior ``S_0 = beta W^+`` (seed 003 eq. 8 and Appendix A)."""

from __future__ import annotations

import numpy as np
from scipy.linalg import pinv

from psdlearn.nystroem._dictionary import solve_dictionary

__all__ = ["heuristic_beta", "iterative_beta", "optimal_beta"]


def heuristic_beta(E_l, Y, W_pinv):
    """Eq. (8): ``beta = ||E_l^+ K^*_l (E_l^T)^+||_F / ||W^+||_F`` with ``K^*_l = Y Y^T``.

    ``E_l^+ K^* (E_l^T)^+ = Z Z^T`` with ``Z = E_l^+ Y`` (m x C), whose Frobenius norm is
    ``||Z^T Z||_F``: no l x l matrix is formed.

    Parameters
    ----------
    E_l : ndarray of shape (l, m)
    Y : ndarray of shape (l, C)
        One-hot labels (or groups).
    W_pinv : ndarray of shape (m, m)

    Returns
    -------
    float
    """
    Z = pinv(E_l) @ Y
    den = np.linalg.norm(W_pinv)
    return float(np.linalg.norm(Z.T @ Z) / den) if den > 0 else 1.0


def optimal_beta(S, W_pinv):
    """``argmin_{beta >= 0} ||S - beta W^+||_F^2 = max(<S, W^+> / ||W^+||_F^2, 0)``."""
    den = float(np.sum(W_pinv * W_pinv))
    return max(float(np.sum(S * W_pinv)) / den, 0.0) if den > 0 else 0.0


def iterative_beta(W_pinv, lam, data, beta0, *, max_outer=20, tol=1e-3, **solver_kw):
    """Appendix A: minimize (7) over ``S >= 0`` and ``beta >= 0`` jointly, alternating.

    ``S``-step: problem (7) with ``S_0 = beta W^+`` (warm started); ``beta``-step: the
    closed form :func:`optimal_beta`. Both steps decrease the joint objective.

    Parameters
    ----------
    W_pinv : ndarray of shape (m, m)
    lam : float
    data : QuadraticData
    beta0 : float
        Start, the heuristic (8).
    max_outer : int
    tol : float
        Stop when ``|beta_new - beta| <= tol * beta``.
    **solver_kw
        Passed to :func:`solve_dictionary`.

    Returns
    -------
    beta : float
    result : DictionaryResult
        Of the last ``S``-step; its history concatenates all ``S``-steps.
    """
    beta = beta0
    res = solve_dictionary(beta * W_pinv, lam, data, **solver_kw)
    history, n_iter = list(res.objective_history), res.n_iter
    for _ in range(max_outer):
        new = optimal_beta(res.S, W_pinv)
        done = abs(new - beta) <= tol * max(beta, np.finfo(float).tiny)
        beta = new
        if done:
            break
        res = solve_dictionary(beta * W_pinv, lam, data, S_init=res.S, a_init=res.step,
                               **solver_kw)
        history += res.objective_history
        n_iter += res.n_iter
    res.objective_history, res.n_iter = history, n_iter
    return beta, res
