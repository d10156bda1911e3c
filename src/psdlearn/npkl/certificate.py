r"""Duality certificate of a low-rank NPKL solution, and rank escalation.

Every NPKL loss gives a convex problem over ``K``,

.. math::

    (P) \qquad f^\star = \min_{K \succeq 0,\; K \in \mathcal{C}} f(K), \qquad
    f(K) = \langle L, K \rangle + \sum_k g_k(\langle S_k, K \rangle)
           \;[+ \textstyle\sum_i h(K_{ii}) \text{ for pcp}],

with ``S_k = (e_i e_j^T + e_j e_i^T) / 2`` for the ``k``-th unordered pair (so
``<S_k, K> = K_ij``), ``g_k(u) = gamma l(T_k u)`` (``gamma (u - t_k)^2`` for pcp,
``h(u) = gamma / 2 (u - 1)^2``) and ``C = {K_ii <= b^2}`` for the linear loss (no
constraint otherwise). The low-rank solvers return ``K = E E^T``; this module bounds
``f(E E^T) - f*`` from the solution alone.

**Lower bound.** For any ``y_k`` the Fenchel-Young inequality gives
``g_k(u) >= y_k u - g_k^*(y_k)``. With ``mu_i >= 0`` the multipliers of ``K_ii <= b^2``
(linear loss) and ``S = L + sum_k y_k S_k + Diag(mu)`` (pcp adds ``Diag(y_d)`` of its
diagonal terms instead of ``mu``), every feasible ``K`` has

.. math::

    f(K) \ge \langle S, K \rangle - \sum_k g_k^*(y_k) - b^2 \textstyle\sum_i \mu_i .

If ``tr(K*) <= tau``, then ``<S, K*> >= tau min(lambda_min(S), 0)`` (``K* >= 0``), hence

.. math::

    f^\star \ge D := -\sum_k g_k^*(y_k) - b^2 \textstyle\sum_i \mu_i
                     + \tau \min(\lambda_{\min}(S), 0),
    \qquad \text{gap\_bound} = f(E E^T) - D \ge f(E E^T) - f^\star,

valid for every ``y`` in the domain of the conjugates, whether ``S`` is PSD or not. With
``alpha_k = -T_k y_k`` (``S = L - sum_k alpha_k T_k S_k``, as in
:mod:`psdlearn.npkl.sdp`), ``-g^*`` is ``alpha`` on ``[0, gamma]`` (hinge),
``alpha - alpha^2 / (4 gamma)`` on ``alpha >= 0`` (squared hinge) or on all ``alpha``
(square), and ``0`` at ``alpha = gamma`` (linear); for pcp ``-g^*(y) = -t y - y^2 / (4 w)``
with ``w = gamma`` per pair and ``gamma / 2`` per diagonal term.

Every quantity above is read from the loss table (:mod:`psdlearn.npkl.losses`): the terms
``(i_k, j_k, c_k, t_k, w_k)``, the multipliers ``-w_k l'(z_k; t_k)``, the conjugate ``h``
and its domain, and the flags ``bounded`` (the ball) and ``quadratic`` (diagonal terms
that bound the trace); a new loss entry is certified without code here.

**Choice of the multipliers.** For the smooth losses ``y`` is the gradient, ``y_k =
g_k'(K_ij)``: Fenchel-Young then holds with equality and the bound reads
``gap_bound = <S, K> - tau min(lambda_min, 0)``, i.e. ``S`` is the gradient of ``f`` at
``K`` and the bound is the convexity bound. For the hinge, ``alpha`` is given or fitted
by bounded least squares on ``||S E||_F`` over the pairs at the kink, the others fixed at
``gamma`` (``z < 1``) or ``0`` (``z > 1``). The multipliers of BCD's smoothed stages
(Huber-smoothed hinge, whose BCD fixed points are stationary) are the better candidates:
on the cvxpy checks they certify to 1e-6 where the exact stage's row duals leave 1e-3.
For the linear loss, ``mu_i = max(0, -e_i^T (S_0 E)_i / ||e_i||^2)`` with ``S_0`` the
matrix without ``mu``, the value that makes row ``i`` of ``S E`` orthogonal to ``e_i``.
At an optimum ``S >= 0``, ``S E = 0`` and the bound is zero (the KKT conditions of (P),
whose strong duality holds by Slater, ``K = epsilon I``).

**Trace bound.** For the nonnegative losses (hinge, squared hinge, square, pcp),
``<L, K*> <= f* <= f(E E^T)`` and ``L >= lambda_min(L) I`` give
``tau = f(E E^T) / lambda_min(L)``; for pcp also ``gamma / 2 sum_i (K*_ii - 1)^2 <=
f(E E^T)`` gives ``tau = n + sqrt(2 n f(E E^T) / gamma)`` and the smaller is used. For the
linear loss ``tau = n b^2`` (the diagonal bound). ``lambda_min(L)`` is ``delta`` for the
normalized Laplacian ``(1 + delta) I - D^{-1/2} W D^{-1/2}`` (the estimator passes it);
otherwise a weighted Gershgorin bound ``min_i (L_ii - sum_{j != i} |L_ij| w_j / w_i)``,
valid for any ``w > 0`` (``w`` from a few power steps on ``|L - Diag(L)|``).

**Cost.** ``S`` is sparse (``L`` plus ``2 m`` entries); ``lambda_min(S)`` is computed by
Lanczos (ARPACK) with products ``S x`` of cost ``O(nnz(L) + m)``. A Ritz value ``theta``
with residual ``||S u - theta u||`` is an upper bound of an eigenvalue that lies within
the residual of it; the certificate uses ``theta - ||S u - theta u||``, so the bound is
valid up to the Lanczos iteration not having missed a lower eigenvalue.

**Rank escalation** (Burer & Monteiro 2003; Journée, Bach, Absil & Sepulchre 2010). If
``lambda_min(S) < 0`` with eigenvector ``u`` and ``S`` is the gradient of ``f`` at ``K``
(the smooth losses), the directional derivative of ``f`` along ``K + s u u^T`` at
``s = 0`` is ``u^T S u < 0``, so appending ``sqrt(s) u`` as a new column of ``E`` descends
for small ``s``; :func:`escalate` picks ``s`` by a line search on the objective.

For the hinge no single ``S`` is the gradient: at the pairs on the kink the directional
derivative along ``H = u u^T`` is ``max_alpha u^T S(alpha) u`` over the subdifferential
box, and the eigenvector of ``S`` at one ``alpha`` can ascend (a9a, rank 8: slope ``+0.20``
at ``lambda_min = -0.03``, 61 % of the pairs within ``1e-3`` of the kink). The rank is
therefore chosen on the Huber-smoothed problem ``f_mu`` (Moreau envelope of each kinked
term, ``mu =`` :data:`HINGE_ESCALATION_SMOOTHING`), a smooth convex problem over ``K``
with ``f - m gamma mu / 2 <= f_mu <= f`` whose gradient is ``S(a_mu)``, ``a_mu =
clip(gamma (1 - z) / mu, 0, gamma)`` (:func:`smoothed_multipliers`): the escalation
follows the eigenvectors of ``S(a_mu)``, a descent direction of ``f_mu``, and BCD's
smoothing continuation minimizes ``f_mu`` at that stage. The same ``a_mu`` lie in
``[0, gamma]``, so ``S(a_mu)`` also gives a valid bound of the exact problem. The level
trades fidelity to the hinge against curvature: the first decrease along a column is
about ``lambda_min^2`` over the curvature along it, and the Huber zone's curvature is
``gamma / mu`` (a9a, rank 8, relative decrease of the best column: ``3.4e-5`` at
``mu = 0.1``, ``3.8e-6`` at ``1e-2``, ``4.5e-7`` at ``1e-3``, below the escalation
threshold, although a rank-16 fit ends ``6.3e-3`` lower). Growing the rank whenever
``lambda_min(S(a_mu)) < 0`` instead runs away: on a9a the loose rounds' ``S(a_mu)`` kept
``lambda_min`` near ``-0.01`` up to rank 208.

**Rounds of** ``rank="adaptive"`` (:class:`AdaptiveRound`, :func:`certify_and_escalate`).
While the rank may still grow, a round is *intermediate*: the solver stops at a loose
tolerance (BCD: ``30 tol``, the tolerance of its smoothed stages; for the hinge after the
stage at ``mu``), since its point only has to show whether more columns descend; the bound
there is the single-candidate one without eigenvector weights (valid, only looser). When
the escalation buys no decrease (or the cheap bound already certifies), the next round
*continues* at the same rank to ``tol`` and the full bound is computed; for the smooth
losses an uncertified final round still escalates (and the next rounds are intermediate
again). ``certificate_`` is always that of the last, final round: every bound is valid at
any ``E``, so a loose stage can make the certificate looser, never false.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear, minimize_scalar
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, cg, eigsh

__all__ = ["AdaptiveRound", "Certificate", "certify", "certify_and_escalate", "dual_matrix",
           "escalate", "escalation_levels", "laplacian_lower_bound", "smoothed_multipliers"]

#: Default relative-gap tolerance of :func:`certify`.
CERTIFICATE_TOL = 1e-4
#: Margins ``|1 - z|`` below which a hinge pair is at the kink (multiplier fitted).
KINK = 1e-6
#: Eigenpairs of ``S`` used by the bound (see :func:`_negative_part`).
N_BOUND_EIG = 4
#: Lanczos tolerance (relative to the shift) of the cheap bound (``refine=False``): the
#: Ritz values are lowered by their residuals, so the bound stays valid, only looser; the
#: intermediate rounds need the eigenvectors as directions, not ``lambda_min`` to 1e-9.
CHEAP_EIG_TOL = 1e-6
#: Huber smoothings of the hinge whose problems set the rank, coarse to fine (module
#: docstring): stages of BCD's smoothing continuation, each escalated until its columns
#: buy no decrease before the next.
HINGE_ESCALATION_LEVELS = (1e-2,)
#: The finest level: the default smoothing of :func:`escalate`.
HINGE_ESCALATION_SMOOTHING = HINGE_ESCALATION_LEVELS[-1]


def _stage_index(schedule, mu):
    """Index of the last smoothed stage of ``schedule`` at ``mu`` or above, or None."""
    ks = [k for k, m in enumerate(schedule) if m > 0 and mu is not None and m >= mu]
    return ks[-1] if ks else None


@dataclass(frozen=True)
class AdaptiveRound:
    """``options.state`` of a round of ``NPKL(rank="adaptive")`` (module docstring).

    Attributes
    ----------
    start : {"random", "warm", "restart", "continue"}
        Where ``E0`` comes from: a random start, a previous fit (``warm_start``), the
        previous round's solution with escalation columns, or the previous round's solution
        at the same rank (its columns bought no decrease: go on to the next level, or solve
        to ``tol``).
    intermediate : bool
        The rank may still grow after this round: solve only as far as the escalation
        test needs.
    smoothing : float
        Kinked losses: ``mu`` of the level (:data:`HINGE_ESCALATION_LEVELS`) whose smoothed
        problem this round escalates.
    previous : float or None
        A continuation: the level of the round it continues.
    warm : object
        The solver's own state to continue from (ADMM's ``(U, Lambda, rho)``), or None.
    """

    start: str = "random"
    intermediate: bool = True
    smoothing: float = HINGE_ESCALATION_LEVELS[0]
    previous: float | None = None
    warm: object = None

    def stages(self, schedule):
        """The part of a smoothing ``schedule`` (``mu`` per stage, 0 exact) this round runs.

        With ``j`` the last smoothed stage at ``mu >= smoothing``: an intermediate round
        stops after stage ``j`` (its problem sets the rank); a random or warm start begins
        at the first stage, a round after an escalation at stage ``j`` (a point near the
        optimum of a larger problem), a continuation after the stage of ``previous``.
        Without such stages (a smooth loss) every round runs the whole schedule, a
        continuation its last (exact) stage.
        """
        schedule = list(schedule)
        j = _stage_index(schedule, self.smoothing)
        if self.start == "continue":
            p = _stage_index(schedule, self.previous)
            first = len(schedule) - 1 if p is None else p + 1
        elif self.start == "restart" and j is not None:
            first = j
        else:
            first = 0
        if self.intermediate and j is not None:
            return schedule[first:j + 1]
        return schedule[first:]

    def after(self, escalated, levels, warm=None):
        """The next round: ``escalated`` (the new columns descend) or not, ``levels`` the
        escalation levels of the loss (:func:`escalation_levels`), ``warm`` the state this
        round's solver returned; None to stop."""
        if escalated:
            return AdaptiveRound(start="restart", smoothing=self.smoothing)
        if not self.intermediate:
            return None
        finer = [mu for mu in levels if mu < self.smoothing]
        if finer:
            return AdaptiveRound(start="continue", smoothing=finer[0],
                                 previous=self.smoothing, warm=warm)
        return AdaptiveRound(start="continue", intermediate=False, smoothing=self.smoothing,
                             previous=self.smoothing, warm=warm)


def escalation_levels(problem):
    """:data:`HINGE_ESCALATION_LEVELS` for a kinked loss (the hinge), else ``()``."""
    return HINGE_ESCALATION_LEVELS if _kinked(problem.terms()) else ()


@dataclass(frozen=True)
class Certificate:
    """Optimality certificate of a low-rank NPKL solution ``K = E E^T``.

    Attributes
    ----------
    objective : float
        ``f(E E^T)``.
    lower_bound : float
        ``D <= f*`` (see the module docstring).
    gap_bound : float
        ``f(E E^T) - D >= f(E E^T) - f*``.
    relative_gap : float
        ``gap_bound / max(|f(E E^T)|, tiny)``.
    lambda_min : float
        Smallest eigenvalue of the dual matrix ``S`` (lowered by its Lanczos residual).
    trace_bound : float
        ``tau >= tr(K*)`` used in the bound.
    certified : bool
        ``relative_gap <= tol``.
    tol : float
    """

    objective: float
    lower_bound: float
    gap_bound: float
    relative_gap: float
    lambda_min: float
    trace_bound: float
    certified: bool
    tol: float

    def as_dict(self):
        """The fields as plain Python numbers (for JSON)."""
        return {k: (bool(v) if isinstance(v, bool | np.bool_) else float(v))
                for k, v in self.__dict__.items()}


def laplacian_lower_bound(laplacian, n_power=30):
    """A lower bound of ``lambda_min(L)`` by the weighted Gershgorin theorem.

    For ``w > 0``, ``Diag(w)^{-1} L Diag(w)`` has the spectrum of ``L``, and Gershgorin's
    discs of its rows give ``lambda_min(L) >= min_i (L_ii - sum_{j != i} |L_ij| w_j / w_i)``.
    The Perron vector of ``|A|`` (``A`` the off-diagonal part) makes the bound tight when
    ``L_ii`` is constant; two approximations of it are tried and the larger bound kept:
    ``n_power`` power steps ``w <- (|A| + I) w`` from ones, and ``|v|`` with ``v`` the
    Lanczos (ARPACK) eigenvector of the largest eigenvalue of ``|A|``, followed by
    ``n_power`` power steps. Power steps from ones converge at the rate of the spectral gap
    of ``|A|``, small on large kNN graphs (on the a9a graph, ``k = 50``, 30 steps left the
    bound at ``-9e-4`` for ``lambda_min = 0.01``); Lanczos gets the Perron vector to a small
    absolute residual, and the power steps after it fix the relative error of its tiny
    entries (points of tiny degree), which the ratios ``(|A| w)_i / w_i`` amplify. The bound
    holds for any ``w > 0``, however poorly it approximates the Perron vector.
    """
    L = sp.csr_matrix(laplacian)
    d = L.diagonal()
    A = abs(L - sp.diags(d)).tocsr()
    n = L.shape[0]

    def bound(w):
        w = np.maximum(w, np.finfo(float).tiny)
        return float(np.min(d - (A @ w) / w))

    def power(w):
        for _ in range(n_power):
            w = A @ w + w
            w /= w.max()
        return w

    w = power(np.ones(n))
    best = bound(w)
    if n > 2 and A.nnz:
        try:
            _, V = eigsh(A, k=1, which="LA", v0=w, tol=1e-10, ncv=min(n, 32), maxiter=100)
        except ArpackNoConvergence as exc:
            V = exc.eigenvectors
        if V is not None and V.shape[1]:
            v = np.abs(V[:, 0])
            best = max(best, bound(v), bound(power(v)))
    return best


def _kinked(terms):
    """Whether the loss is piecewise linear with a kink at the target (the hinge).

    Read from the table: the conjugate ``h`` is linear (zero curvature) on a nondegenerate
    domain ``lo < hi``, so the multiplier of a term at its kink ``z = t`` is any point of
    ``[lo, hi]`` (the subdifferential) and is chosen (given or fitted), not computed.
    """
    if len(terms) == 0:
        return False
    lo, hi = terms.loss.domain(terms.weights)
    with np.errstate(divide="ignore"):  # gamma = 0: infinite curvature, not kinked
        flat = np.all(terms.loss.curvature(terms.weights) == 0)
    return bool(flat and np.any(lo < hi))


def smoothed_multipliers(terms, E, mu):
    """Multipliers ``a_mu`` of the Moreau envelopes of kinked terms, and the margins ``z``.

    From the conjugate: ``w l_mu(z) = max_{a in [lo, hi]} h(a) - a z - mu a^2 / (2 w)``;
    ``h`` is linear (slope ``h'``), so the maximizer is ``a = clip(w (h' - z) / mu, lo,
    hi)``, which is also ``-w l_mu'(z)``: ``S(a_mu)`` is the gradient of the smoothed
    objective at ``K = E E^T`` (hinge: ``clip(gamma (1 - z) / mu, 0, gamma)``).
    """
    loss, t, w = terms.loss, terms.targets, terms.weights
    z = terms.margins(E)
    lo, hi = loss.domain(w)
    return np.clip(w * (loss.conjugate_derivative(lo, t, w) - z) / mu, lo, hi), z


def _smoothed_objective(problem, terms, E, mu):
    """Objective with each kinked term replaced by its Moreau envelope (Huber smoothing).

    ``w l_mu(z) = h(a) - a z - mu a^2 / (2 w)`` at ``a`` of :func:`smoothed_multipliers`;
    for the hinge ``w (u - mu / 2)`` for ``u = t - z > mu``, ``w u^2 / (2 mu)`` on
    ``[0, mu]``, 0 below.
    """
    a, z = smoothed_multipliers(terms, E, mu)
    t, w = terms.targets, terms.weights
    penalty = terms.loss.conjugate(a, t, w) - a * z - mu * a * a / (2.0 * w)
    return float(np.sum(E * (problem.laplacian @ E))) + float(penalty.sum())


def _kink_multipliers(problem, terms, E):
    """Kinked-loss ``alpha`` in its domain: ``-w l'(z)`` off the kink, least squares on
    ``S E`` at it."""
    z = terms.margins(E)
    alpha = terms.multipliers(E)
    kink = np.flatnonzero(np.abs(terms.targets - z) <= KINK * max(1.0, float(np.abs(z).max())))
    if len(kink) == 0:
        return alpha
    alpha[kink] = 0.0
    # S E without the kink terms
    residual = (sp.csr_matrix(problem.laplacian) - terms.matrix(alpha)) @ E
    n, r = E.shape
    i, j, c = terms.rows[kink], terms.cols[kink], terms.coef[kink]
    # column of term k: d(S E)/d alpha_k = -c_k (row i: e_j / 2, row j: e_i / 2)
    rows = np.concatenate([(i[:, None] * r + np.arange(r)).ravel(),
                           (j[:, None] * r + np.arange(r)).ravel()])
    vals = np.concatenate([(-0.5 * c[:, None] * E[j]).ravel(),
                           (-0.5 * c[:, None] * E[i]).ravel()])
    cols = np.concatenate([np.repeat(np.arange(len(kink)), r)] * 2)
    A = sp.csr_matrix((vals, (rows, cols)), shape=(n * r, len(kink)))
    lo, hi = terms.loss.domain(terms.weights[kink])
    sol = lsq_linear(A, -residual.ravel(), bounds=(lo, hi), lsmr_tol="auto", tol=1e-12)
    alpha[kink] = np.clip(sol.x, lo, hi)
    return alpha


def _clip_to_domain(terms, alpha):
    """Given multipliers, clipped to the domain of the conjugate."""
    lo, hi = terms.loss.domain(terms.weights)
    return np.clip(np.asarray(alpha, dtype=np.float64), lo, hi)


def dual_matrix(problem, E, multipliers=None):
    """The dual matrix ``S`` at ``K = E E^T`` and the conjugate part of the lower bound.

    Read from the loss table (:mod:`psdlearn.npkl.losses`): with the terms
    ``sum_k w_k l(c_k K_{i_k j_k}; t_k)`` of the problem and their multipliers
    ``alpha_k = -w_k l'(z_k; t_k)``, ``S = L - sum_k alpha_k c_k S_k`` and the conjugate
    part is ``sum_k h(alpha_k; t_k, w_k)``; a ``bounded`` loss adds ``Diag(mu)`` and
    ``-b^2 sum_i mu_i`` (module docstring).

    Parameters
    ----------
    problem : NPKLProblem
    E : ndarray of shape (n_samples, rank)
    multipliers : ndarray of shape (m,), optional
        Kinked losses (the hinge) only: ``alpha_k`` in the domain of the conjugate,
        ``[0, gamma]`` (clipped), e.g. from the BCD dual QPs; by default fitted (see the
        module docstring). Ignored by the other losses.

    Returns
    -------
    S : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
    conjugate : float
        ``-sum_k g_k^*(y_k) - b^2 sum_i mu_i``.
    """
    E = np.asarray(E, dtype=np.float64)
    terms = problem.terms()
    loss = terms.loss
    if not _kinked(terms):
        alpha = terms.multipliers(E)
    elif multipliers is None:
        alpha = _kink_multipliers(problem, terms, E)
    else:
        alpha = _clip_to_domain(terms, multipliers)
    S = (sp.csr_matrix(problem.laplacian) - terms.matrix(alpha)).tocsr()
    # h divides by the weights: with gamma = 0 every multiplier is 0 and so is h
    conj = (float(np.sum(loss.conjugate(alpha, terms.targets, terms.weights)))
            if problem.gamma > 0 else 0.0)
    if loss.bounded:
        # mu_i makes row i of S E orthogonal to e_i (module docstring)
        sq = np.einsum("ij,ij->i", E, E)
        num = -np.einsum("ij,ij->i", E, S @ E)
        mu = np.maximum(np.divide(num, sq, out=np.zeros_like(sq), where=sq > 0), 0.0)
        return (S + sp.diags(mu)).tocsr(), conj - float(problem.b) ** 2 * float(mu.sum())
    return S, conj


def smallest_eigenpairs(S, k=1, *, deflate=None, tol=1e-9, random_state=0):
    """``k`` smallest eigenpairs of sparse symmetric ``S`` by Lanczos, lowered by residuals.

    Parameters
    ----------
    S : sparse matrix of shape (n, n)
    k : int
    deflate : ndarray of shape (n, r), optional
        Orthonormal columns ``Q`` moved out of the way: the eigenpairs are those of
        ``S + c Q Q^T`` (``c`` a Gershgorin bound of ``lambda_max(S)``). ``range(E)`` is
        (nearly) in the null space of ``S`` at a solution; left there, its ``r`` nearly
        equal eigenvalues stall Lanczos.
    tol : float
        ARPACK tolerance, relative to the shift ``c`` (not to the eigenvalues near 0).

    Returns
    -------
    values : ndarray of shape (k',)
        Ritz values minus their residual norms, ascending (``k' <= k`` if Lanczos stopped
        early; then the converged ones).
    vectors : ndarray of shape (n, k')
    """
    n = S.shape[0]
    k = int(min(k, n - 1))
    c = float(np.max(abs(S) @ np.ones(n)))
    Q = np.zeros((n, 0)) if deflate is None else np.asarray(deflate)

    def apply(x):
        return S @ x + c * (Q @ (Q.T @ x))

    if n <= 2 * k + 2 + Q.shape[1]:  # too small for ARPACK
        lam, U = np.linalg.eigh(apply(np.eye(n)))
        return lam[:k], U[:, :k]
    v0 = np.random.default_rng(random_state).standard_normal(n)
    # ARPACK's test is relative to |theta|, hopeless for the eigenvalues near 0 that matter
    # here: shift by 2 c >= lambda_max(S + c Q Q^T) so that they sit near -2 c
    shifted = LinearOperator((n, n), matvec=lambda x: apply(x) - 2.0 * c * x,
                             matmat=lambda X: apply(X) - 2.0 * c * X, dtype=np.float64)
    lam = np.zeros(0)
    # a cluster of nearly equal eigenvalues near 0 (a fit whose E has many tiny columns)
    # stalls a k-block; then the smallest alone, which converges, then looser
    for kk, tt, it in ((k, tol, 100), (1, tol, 300), (1, 1e3 * tol, 300)):
        try:
            lam, U = eigsh(shifted, k=kk, which="SA", tol=tt, v0=v0,
                           ncv=min(n, max(2 * kk + 1, 32)), maxiter=it)
        except ArpackNoConvergence as exc:
            lam, U = exc.eigenvalues, exc.eigenvectors
        if len(lam):
            break
    if len(lam) == 0:
        warnings.warn("Lanczos did not converge on the dual matrix; the certificate "
                      "uses the Gershgorin bound of lambda_min.", RuntimeWarning,
                      stacklevel=2)
        return np.array([laplacian_lower_bound(S, n_power=0)]), np.zeros((n, 0))
    lam = lam + 2.0 * c
    res = np.linalg.norm(apply(U) - U * lam, axis=0)
    order = np.argsort(lam)
    return (lam - res)[order], U[:, order]


def _null_basis(S, E):
    """Orthonormal directions of ``range(E)`` that ``S`` (nearly) annihilates.

    The left singular vectors ``u`` of ``E`` with ``||S u|| <= 1e-7 c`` (``c`` the
    Gershgorin bound of ``S``): at a solution ``S E = 0``, but a direction with a tiny
    singular value is not held to it, and deflating it would only weaken the bound.
    """
    if E.shape[1] == 0:
        return np.zeros((E.shape[0], 0))
    U, sv, _ = np.linalg.svd(E, full_matrices=False)
    U = U[:, sv > 1e-12 * max(sv[0], np.finfo(float).tiny)]
    c = float(np.max(abs(S) @ np.ones(S.shape[0])))
    return U[:, np.linalg.norm(S @ U, axis=0) <= 1e-7 * c]


def _inverse_quadratic(L, u, lmin):
    """An upper bound of ``u^T L^{-1} u``: ``u^T x + ||u|| ||u - L x|| / lambda_min(L)``."""
    x, _ = cg(L, u, rtol=1e-10, maxiter=10 * L.shape[0])
    return float(u @ x) + float(np.linalg.norm(u) * np.linalg.norm(u - L @ x)) / lmin


def _eigen_weights(problem, vectors, tau, f, lmin):
    """``w_i >= u_i^T K* u_i``: ``tau``, or for the nonnegative losses the smaller
    ``f u_i^T L^{-1} u_i`` (the largest ``u^T K u`` under ``<L, K> <= f``, by Cauchy-Schwarz
    in the ``L`` inner product)."""
    w = np.full(vectors.shape[1], tau)
    if lmin is not None and lmin > 0:
        L = sp.csr_matrix(problem.laplacian)
        for i in range(vectors.shape[1]):
            w[i] = min(tau, f * _inverse_quadratic(L, vectors[:, i], lmin))
    return w


def _times(x, tau):
    """``x * tau`` with ``0 * inf = 0``: ``tau = inf`` (no trace bound, ``lambda_min(L) <= 0``)
    costs nothing where the eigenvalue part is zero, instead of making the bound NaN."""
    with np.errstate(invalid="ignore"):
        return np.where(np.asarray(x) == 0.0, 0.0, np.asarray(x) * tau)


def _negative_part(values, w, tau):
    """A lower bound of ``<S, K*>`` from the ``k`` smallest eigenpairs of ``S``.

    With ``nu = min(lambda_k, 0)``, ``S >= sum_{i < k} (lambda_i - nu) u_i u_i^T + nu I``,
    so ``<S, K*> >= sum_{i < k} min(lambda_i - nu, 0) w_i + nu tau`` for any
    ``w_i >= u_i^T K* u_i`` (:func:`_eigen_weights`).
    """
    values = np.asarray(values, dtype=np.float64)
    if values[0] >= 0:
        return 0.0
    if len(values) == 1 or len(w) < len(values) - 1:
        return float(_times(min(values[0], 0.0), tau))
    nu = min(float(values[-1]), 0.0)
    head = np.minimum(values[:-1] - nu, 0.0)
    return float(np.sum(_times(head, w[: len(head)])) + _times(nu, tau))


def _diagonal_trace_bound(terms, f):
    """``tau >= tr(K*)`` from quadratic diagonal terms ``w_i (K_ii - t_i)^2`` on every sample.

    They sum to at most ``f(E E^T)`` at ``K*`` (nonnegative loss and graph term), so by
    Cauchy-Schwarz ``tr(K*) <= sum_i t_i + sqrt(f sum_i 1 / w_i)`` (pcp: ``n +
    sqrt(2 n f / gamma)``); ``inf`` when the loss has no such terms.
    """
    diag = terms.rows == terms.cols
    w = terms.weights[diag]
    if (not terms.loss.quadratic or np.count_nonzero(diag) != terms.n_samples
            or not np.all(w > 0)
            or not np.array_equal(np.sort(terms.rows[diag]), np.arange(terms.n_samples))):
        return np.inf
    t = terms.coef[diag] * terms.targets[diag]
    return float(np.sum(t)) + float(np.sqrt(f * np.sum(1.0 / w)))


def certify(problem, E, multipliers=None, *, tol=CERTIFICATE_TOL, laplacian_min_eig=None,
            n_eig=1, return_eigenvectors=False, refine=True):
    """Bound the gap ``f(E E^T) - f*`` of a low-rank NPKL solution to the convex optimum.

    See the module docstring for the mathematics.

    Parameters
    ----------
    problem : NPKLProblem
        Any loss (hinge, squared_hinge, square, linear with ``||e_i|| <= b``, pcp).
    E : ndarray of shape (n_samples, rank)
        Solution; for the linear loss its rows must satisfy ``||e_i|| <= b``.
    multipliers : ndarray of shape (m,) or list of them, optional
        Hinge only: candidate pair multipliers ``alpha_k`` in ``[0, gamma]`` (clipped), e.g.
        those of every BCD stage; the best bound over them is kept. Without them they are
        fitted (see the module docstring).
    tol : float, default=1e-4
        ``certified`` when ``relative_gap <= tol``.
    laplacian_min_eig : float, optional
        A lower bound of ``lambda_min(L)`` (``delta`` for the normalized Laplacian);
        default: :func:`laplacian_lower_bound`.
    n_eig : int, default=1
        Number of smallest eigenpairs of ``S`` computed.
    return_eigenvectors : bool, default=False
        Also return the eigenvalues and eigenvectors (for :func:`escalate`).
    refine : bool, default=True
        ``False``: the cheap bound of an intermediate round of ``rank="adaptive"``: only
        the first candidate (the largest ``sum(alpha)``), no eigenvector weights
        (``w_i = tau``; the CG solves on ``L`` are skipped) and Lanczos to
        :data:`CHEAP_EIG_TOL`. Still valid, only looser.

    Returns
    -------
    Certificate, or (Certificate, values, vectors)
    """
    E = np.asarray(E, dtype=np.float64)
    n = E.shape[0]
    f = float(problem.objective(E))
    terms = problem.terms()
    lmin = None
    if terms.loss.bounded:
        tau = n * float(problem.b) ** 2
    else:
        lmin = (laplacian_lower_bound(problem.laplacian) if laplacian_min_eig is None
                else float(laplacian_min_eig))
        tau = f / lmin if lmin > 0 else np.inf
        tau = min(tau, _diagonal_trace_bound(terms, f))
    # hinge: every alpha in [0, gamma]^m gives a valid bound; keep the best of the given
    # ones (the fitted one only without them: its least squares costs more than a fit),
    # trying the largest sum(alpha) first (an upper bound of D)
    candidates = [None]
    if _kinked(terms) and multipliers is not None:
        given = [multipliers] if np.ndim(multipliers) == 1 else list(multipliers)
        candidates = [_clip_to_domain(terms, a) for a in given if a is not None] or [None]
        candidates.sort(key=lambda a: -np.inf if a is None else -float(a.sum()))
    if not refine:
        candidates = candidates[:1]
    eig_tol = 1e-9 if refine else CHEAP_EIG_TOL

    def prepare(alpha):
        S, conj = dual_matrix(problem, E, alpha)
        Q = _null_basis(S, E)
        # split R^n = range(Q) + its complement, Q a basis of (most of) range(E): with
        # omega = lambda_min(Q^T S Q) and eps = ||(I - Q Q^T) S Q||, the cross terms are
        # 2 x^T S y >= -eps (eta ||x||^2 + ||y||^2 / eta), so S >= omega - eps eta on
        # range(Q) and S - eps / eta on the complement, where S agrees with S + c Q Q^T
        # (whose eigenpairs are computed: range(E) deflated)
        SQ = S @ Q
        G = Q.T @ SQ
        omega = float(np.linalg.eigvalsh(G)[0]) if Q.shape[1] else 0.0
        eps = float(np.linalg.norm(SQ - Q @ G, 2)) if Q.shape[1] else 0.0
        return S, conj, Q, omega, eps

    def bound(prepared, k):
        S, conj, Q, omega, eps = prepared
        values, vectors = smallest_eigenpairs(S, k, deflate=Q, tol=eig_tol)
        w = (_eigen_weights(problem, vectors[:, :-1], tau, f, lmin)
             if vectors.shape[1] > 1 and refine else np.zeros(0))
        # the split above holds with eps eta on range(Q) and eps / eta on its
        # complement for any eta > 0 (2 ab <= eta a^2 + b^2 / eta): best eta of a grid
        part, eta = max((_negative_part(values - eps / eta, w, tau)
                         + float(_times(min(omega - eps * eta, 0.0), tau)), eta)
                        for eta in np.logspace(-8, 4, 49))
        lam = min(float(values[0]) - eps / eta, omega - eps * eta)
        return conj + part, lam, values, vectors

    # every candidate's bound from its smallest eigenpair alone first (a k-block costs
    # several times more Lanczos steps, and its eigenvector weights a CG solve each); the
    # block only for the best candidate, when its lambda_min is negative and the bound
    # does not certify (or the escalation needs n_eig vectors)
    best = None
    for alpha in candidates:
        if best is not None and alpha is not None and float(alpha.sum()) <= best[0][0]:
            continue
        prepared = prepare(alpha)
        found = bound(prepared, 1)
        if best is None or found[0] > best[0][0]:
            best = (found, prepared)
    (lower, lam, values, vectors), prepared = best
    k_block = max(n_eig, N_BOUND_EIG if refine else 1)
    if k_block > 1 and values[0] < 0 and f - lower > tol * max(abs(f), np.finfo(float).tiny):
        block_lower, block_lam, values, vectors = bound(prepared, k_block)
        # several strongly negative eigenvalues can make the k-block bound lower than
        # the single-eigenvalue one: both are valid, keep the larger
        if block_lower > lower:
            lower, lam = block_lower, block_lam
    gap = max(f - lower, 0.0)
    rel = gap / max(abs(f), np.finfo(float).tiny)
    cert = Certificate(objective=f, lower_bound=float(lower), gap_bound=float(gap),
                       relative_gap=float(rel), lambda_min=lam, trace_bound=float(tau),
                       certified=bool(rel <= tol), tol=float(tol))
    if return_eigenvectors:
        return cert, values, vectors
    return cert


def escalate(problem, E, values, vectors, smoothing=HINGE_ESCALATION_SMOOTHING):
    """Append the eigenvectors of the negative eigenvalues of ``S`` as new columns of ``E``.

    ``E_new = [E, sqrt(s) U]`` (``U`` the eigenvectors with ``values < 0``, ``K_new = K + s
    U U^T``), with ``s >= 0`` minimizing the exact objective along that ray (bounded
    scalar search, convex in ``s``). For the linear loss rows longer than ``b`` are
    scaled back onto the ball.

    Parameters
    ----------
    problem : NPKLProblem
    E : ndarray of shape (n_samples, rank)
    values, vectors : ndarray
        Eigenpairs of the dual matrix (of :func:`certify`); for the hinge those of
        ``S(a_mu)`` (:func:`smoothed_multipliers`), the gradient of the smoothed objective.
    smoothing : float, default=HINGE_ESCALATION_SMOOTHING
        Kinked losses: the search minimizes the Huber-smoothed objective at this ``mu``,
        which BCD then continues from.

    Returns
    -------
    E_new : ndarray of shape (n_samples, rank + p)
    step : float
        The chosen ``s`` (0 when no eigenvalue is negative or the ray does not descend).
    """
    E = np.asarray(E, dtype=np.float64)
    values = np.asarray(values)[: vectors.shape[1]]  # no vectors after a Lanczos failure
    U = vectors[:, values < 0]
    if U.shape[1] == 0:
        return E, 0.0
    terms = problem.terms()
    radius = float(problem.b) if terms.loss.bounded else None

    def candidate(s):
        out = np.hstack([E, np.sqrt(max(s, 0.0)) * U])
        if radius is not None:
            norms = np.linalg.norm(out, axis=1)
            over = norms > radius
            out[over] *= (radius / norms[over])[:, None]
        return out

    objective = _escalation_objective(problem, terms, smoothing)
    f0 = objective(E)
    scale = max(float(np.einsum("ij,ij->", E, E)) / max(E.shape[1], 1), 1.0)
    hi = scale
    # grow the bracket while the objective still decreases at its right end
    while hi < 1e6 * scale and objective(candidate(2 * hi)) < objective(candidate(hi)):
        hi *= 2.0
    res = minimize_scalar(lambda s: objective(candidate(s)), bounds=(0.0, 2 * hi),
                          method="bounded", options={"xatol": 1e-6 * hi})
    s = float(res.x)
    if objective(candidate(s)) >= f0:
        s = 0.0
    return candidate(s), s


def _escalation_objective(problem, terms, smoothing):
    """The objective whose descent :func:`escalate` seeks: ``f``, or for a kinked loss (the
    hinge, not differentiable along ``u u^T`` at a kink) its ``C^1`` Huber smoothing."""
    if not _kinked(terms):
        return problem.objective
    return lambda E: _smoothed_objective(problem, terms, E, smoothing)


#: ``rank="adaptive"`` escalates only when the new columns decrease the objective by more
#: than this fraction of ``certificate_tol`` (relative).
ESCALATION_MIN_DECREASE = 1e-2


def certify_and_escalate(problem, E, multipliers, *, tol, laplacian_min_eig, n_eig,
                         intermediate=False, smoothing=HINGE_ESCALATION_SMOOTHING):
    """One round of ``NPKL(rank="adaptive")``: the certificate of ``E``, then its growth.

    Parameters
    ----------
    problem : NPKLProblem
    E : ndarray of shape (n_samples, rank)
    multipliers : object
        Candidate pair multipliers of the solver (see :func:`certify`).
    tol : float
        ``certificate_tol``.
    laplacian_min_eig : float
    n_eig : int
        The most columns to add (0: certify only).
    intermediate : bool, default=False
        An intermediate round (:class:`AdaptiveRound`): the cheap bound
        (``refine=False``); for a kinked loss the multipliers are ``a_mu`` of
        :func:`smoothed_multipliers` at ``smoothing``, whose ``S`` is the gradient of the
        smoothed problem that sets the rank. A final round of a kinked loss never
        escalates: its rank was set by the intermediate rounds, where the escalation is a
        descent step of a differentiable objective (module docstring).
    smoothing : float, default=HINGE_ESCALATION_SMOOTHING

    Returns
    -------
    cert : Certificate
    E_new : ndarray of shape (n_samples, rank + p) or None
        ``E`` with the escalation columns of :func:`escalate`; None when ``E`` is certified,
        ``n_eig = 0``, or the columns decrease the objective of :func:`escalate` by no more
        than ``ESCALATION_MIN_DECREASE * tol`` (relative): a negative eigenvalue that buys
        no decrease is a first-order residual of the fit, not missing rank, and more
        columns would only cost time.
    """
    E = np.asarray(E, dtype=np.float64)
    terms = problem.terms()
    kinked = _kinked(terms)
    if kinked and intermediate:
        multipliers, _ = smoothed_multipliers(terms, E, smoothing)
    # an intermediate round's cheap bound needs one eigenpair (the k-block below if needed)
    cert, values, vectors = certify(problem, E, multipliers, tol=tol,
                                    laplacian_min_eig=laplacian_min_eig,
                                    n_eig=1 if intermediate else max(n_eig, 1),
                                    return_eigenvectors=True, refine=not intermediate)
    if cert.certified or n_eig <= 0 or (kinked and not intermediate):
        return cert, None
    objective = _escalation_objective(problem, terms, smoothing)
    f0 = objective(E)

    def descends(E_new, step):
        return step > 0 and f0 - objective(E_new) > ESCALATION_MIN_DECREASE * tol * abs(f0)

    if intermediate:
        # the most negative eigenvector alone first (the Lanczos run of the cheap bound):
        # where it buys no decrease the rank looks sufficient, and no k-block is computed
        E_one, step = escalate(problem, E, values[:1], vectors[:, :1], smoothing)
        if not descends(E_one, step):
            return cert, None
        if n_eig == 1:
            return cert, E_one
        S, _ = dual_matrix(problem, E, multipliers)
        values, vectors = smallest_eigenpairs(S, n_eig, deflate=_null_basis(S, E),
                                              tol=CHEAP_EIG_TOL)
    E_new, step = escalate(problem, E, values[:n_eig], vectors[:, :n_eig], smoothing)
    if descends(E_new, step):
        # every negative eigenvector that descends with one common step: the solver
        # then grows the new columns (the common step is set by the most curved one, so
        # it can buy a little less than the single column; the rank grows faster)
        return cert, E_new
    return cert, (E_one if intermediate else None)
