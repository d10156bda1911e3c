"""The scale ``beta`` of the prior ``S_0 = beta W^+`` (Lan et al. 2017 eq. 8, Appendix A).

Three rules: the paper's eq. (8), its Appendix A (joint minimisation), and the default of
:class:`~psdlearn.GeneralizedNystroem`, :func:`least_squares_beta`: the scale at which the
prior kernel ``beta E_l W^+ E_l^T`` fits the ideal kernel best.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.linalg import pinv

from psdlearn.nystroem.dictionary import solve_dictionary

__all__ = ["heuristic_beta", "iterative_beta", "least_squares_beta", "optimal_beta"]


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


def least_squares_beta(W_pinv, data):
    """``argmin_{beta >= 0} data(beta W^+)``: the prior kernel's best scale for the side
    information.

    The data term of (7) on the ray ``S = beta W^+`` is ``beta^2 <W^+, sum_k A_k W^+ A_k>
    - 2 beta <W^+, B> + c``; with labels that is ``||beta E_l W^+ E_l^T - K^*_l||_F^2``,
    with must-link groups its masked form (§3.3). Its minimizer is
    ``max(<W^+, B> / <W^+, sum_k A_k W^+ A_k>, 0)``. For a kernel with ``k(x, x) = 1``
    (the RBF) it is of order 1: the standard Nystrom kernel is already on the scale of the
    ideal kernel.

    Why not eq. (8): it matches the Frobenius norms of ``W^+`` and ``E_l^+ K^*_l
    (E_l^T)^+``, two pseudo-inverses dominated by the smallest singular values of ``W`` and
    ``E_l``, so its ``beta`` can be orders of magnitude large; since the features scale
    with ``sqrt(beta)``, a linear SVM with a fixed ``C`` on them is then regularized that
    much less (measured values are in the method notes of the documentation).

    Parameters
    ----------
    W_pinv : ndarray of shape (m, m)
    data : QuadraticData

    Returns
    -------
    float; 1.0 when ``W^+`` is invisible to the data term.
    """
    den = float(np.sum(W_pinv * data.apply(W_pinv)))
    return max(float(np.sum(W_pinv * data.B)) / den, 0.0) if den > 0 else 1.0


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
    result : SolverResult
        Of the last ``S``-step, with the histories (times offset to run on) and iteration
        counts of all ``S``-steps concatenated. An interrupted ``S``-step
        (``result.interrupted``) ends the alternation.
    """
    beta = beta0
    res = solve_dictionary(beta * W_pinv, lam, data, **solver_kw)
    history, times, n_iter = list(res.objective_history), list(res.time_history), res.n_iter
    for _ in range(max_outer):
        if res.interrupted:  # keep the interrupted S-step and the beta it was solved with
            break
        new = optimal_beta(res.S, W_pinv)
        done = abs(new - beta) <= tol * max(beta, np.finfo(float).tiny)
        if done:
            beta = new
            break
        step = solve_dictionary(new * W_pinv, lam, data, S_init=res.S, a_init=res.step,
                                **solver_kw)
        beta, res = new, step
        history += res.objective_history
        times += [times[-1] + t for t in res.time_history]
        n_iter += res.n_iter
    return beta, dataclasses.replace(res, objective_history=history, time_history=times,
                                     n_iter=n_iter)
