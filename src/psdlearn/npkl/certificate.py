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
valid up to the Lanczos iteration not having missed a lower eigenvalue. The bound takes
the smallest eigenpair first; the ``k``-block that refines it (eigenvector weights, below)
converges slowly where the eigenvalues near ``lambda_min`` cluster, which is exactly where
it cannot beat the single eigenvalue (``nu ~ lambda_min``): it gets
:data:`BLOCK_RESTARTS` ARPACK restarts, and the single-eigenvalue bound stands if it has
not converged by then (a9a hinge at rank 16: the block at 100 restarts did not converge
in 12 s of CPU, after which the fallback recomputed the known smallest eigenpair; its
converged values, ``-1.08e-4 ... -7.9e-5``, form such a cluster). The block runs only
where its bound could certify or shrink the gap by :data:`BLOCK_MIN_GAIN` (its best value
follows from the smallest eigenpair, :func:`_block_may_help`), and under a time budget a
block that passes it leaves the smallest eigenpair's bound in place; the basis of
``range(E)`` comes from the Gram matrix ``E^T E`` (:func:`_range_basis`).

**Rank escalation** and the rounds of ``rank="adaptive"`` are in
:mod:`psdlearn.npkl.escalation`, which bounds each round's fit with :func:`certify`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
from scipy.optimize import lsq_linear
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, cg, eigsh
from threadpoolctl import threadpool_limits

__all__ = ["Certificate", "certify", "dual_matrix", "laplacian_lower_bound", "smallest_eigenpairs"]

#: Default relative-gap tolerance of :func:`certify`.
CERTIFICATE_TOL = 1e-4
#: Margins ``|1 - z|`` below which a hinge pair is at the kink (multiplier fitted).
KINK = 1e-6
#: Eigenpairs of ``S`` used by the bound (see :func:`_negative_part`).
N_BOUND_EIG = 4
#: ARPACK restarts of the ``N_BOUND_EIG``-block of the bound (module docstring, "Cost").
BLOCK_RESTARTS = 20
#: The ``k``-block of the bound runs only where it could certify or shrink the gap of the
#: smallest eigenpair's bound by at least this share (:func:`_block_may_help`).
BLOCK_MIN_GAIN = 0.5
#: Lanczos tolerance (relative to the shift) of the cheap bound (``refine=False``): the
#: Ritz values are lowered by their residuals, so the bound stays valid, only looser; the
#: intermediate rounds need the eigenvectors as directions, not ``lambda_min`` to 1e-9.
CHEAP_EIG_TOL = 1e-6
#: ``NPKL.fit`` at a fixed rank gives its certificate at most this share of the solve's
#: CPU seconds, or :data:`CERTIFICATE_MIN_SECONDS` if more: past it the bound is skipped and
#: ``certificate_.note`` says so (at 2e6 points the eigen-solve outlasted the solve).
CERTIFICATE_SHARE = 0.2
#: The certificate's budget is never below this many seconds (small fits certify as ever).
CERTIFICATE_MIN_SECONDS = 10.0
#: The tightest Lanczos tolerance of the full bound (``certify`` ties it to ``tol``).
FINE_EIG_TOL = 1e-9
#: Eigenvalues of ``E^T E`` below this share of the largest are left out of the basis of
#: ``range(E)`` (:func:`_range_basis`): above it, the Gram matrix gives their directions
#: to about ``eps / RANGE_RTOL``, which one Cholesky QR step makes orthonormal.
RANGE_RTOL = 1e-12
#: Rows per block of the deflation split's residual (:func:`_deflation_split`).
_ROW_BLOCK = 16384


class _OverBudget(Exception):
    """The certificate's eigen-solve passed its time budget (:func:`certify`)."""


def _check(deadline):
    if deadline is not None and time.process_time() > deadline:
        raise _OverBudget


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
    note : str
        Empty for a computed bound; why the bound was skipped otherwise (then
        ``lower_bound``, ``gap_bound``, ``relative_gap``, ``lambda_min`` and
        ``trace_bound`` are NaN and ``certified`` is False).
    rank_descent : float
        Where the bound does not certify and its negative eigenvalue accounts for at least
        half of it: the relative decrease of the objective along that eigenvalue's
        direction, ``K + s u u^T`` with the best ``s >= 0``. Near 0, a larger rank would
        not lower the objective: the negative eigenvalue is a residual of the solve. NaN
        where not measured.
    """

    objective: float
    lower_bound: float
    gap_bound: float
    relative_gap: float
    lambda_min: float
    trace_bound: float
    certified: bool
    tol: float
    note: str = ""
    rank_descent: float = float("nan")

    def as_dict(self):
        """The fields as plain Python numbers and strings (for JSON)."""
        return {k: (v if isinstance(v, str) else bool(v) if isinstance(v, bool | np.bool_)
                    else float(v)) for k, v in self.__dict__.items()}


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
            with threadpool_limits(1, "blas"):  # as in smallest_eigenpairs
                _, V = eigsh(A, k=1, which="LA", v0=w, tol=1e-10, ncv=min(n, 32),
                             maxiter=100)
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


def smallest_eigenpairs(S, k=1, *, deflate=None, deflate_mask=None, tol=1e-9, random_state=0,
                        v0=None, maxiter=100, fallback=True, deadline=None):
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
    deflate_mask : ndarray of shape (r,), bool, optional
        Deflate only these columns of ``deflate`` (the others are ignored), without
        copying them out: ``Q`` is then ``deflate[:, deflate_mask]``.
    tol : float
        ARPACK tolerance, relative to the shift ``c`` (not to the eigenvalues near 0).
    v0 : ndarray of shape (n,), optional
        Lanczos starting vector, e.g. the smallest eigenvector of a nearby ``S`` (another
        dual candidate at the same ``E``); default: random. Only the speed depends on it:
        the returned values are lowered by their own residuals either way.
    maxiter : int, default=100
        ARPACK restarts of the ``k``-block.
    fallback : bool, default=True
        When the ``k``-block does not converge: the smallest eigenpair alone, then looser
        (below). ``False``: the block only if all ``k`` converged, else nothing (for a
        caller that already has the smallest eigenpair).
    deadline : float, optional
        A ``time.process_time()`` value after which a product with ``S`` raises the
        private ``_OverBudget`` (:func:`certify` catches it).

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
    mask = None if deflate_mask is None else np.asarray(deflate_mask, dtype=bool)
    if mask is not None and not mask.any():
        Q, mask = np.zeros((n, 0)), None  # nothing to deflate: no products with Q
    # a partial mask: 0/1 weights on all of Q's columns (Q D Q^T), no copy of them
    weights = None if mask is None or mask.all() else mask.astype(np.float64)

    def apply(x):
        _check(deadline)
        coef = Q.T @ x
        if weights is not None:
            coef *= weights if coef.ndim == 1 else weights[:, None]
        return S @ x + c * (Q @ coef)

    n_deflated = Q.shape[1] if weights is None else int(np.count_nonzero(weights))
    if n <= 2 * k + 2 + n_deflated:  # too small for ARPACK
        lam, U = np.linalg.eigh(apply(np.eye(n)))
        return lam[:k], U[:, :k]
    if v0 is None or not np.any(v0):
        v0 = np.random.default_rng(random_state).standard_normal(n)
    # ARPACK's test is relative to |theta|, hopeless for the eigenvalues near 0 that matter
    # here: shift by 2 c >= lambda_max(S + c Q Q^T) so that they sit near -2 c
    shifted = LinearOperator((n, n), matvec=lambda x: apply(x) - 2.0 * c * x,
                             matmat=lambda X: apply(X) - 2.0 * c * X, dtype=np.float64)
    lam = np.zeros(0)
    # a cluster of nearly equal eigenvalues near 0 (a fit whose E has many tiny columns)
    # stalls a k-block; then the smallest alone, which converges, then looser
    attempts = ((k, tol, maxiter), (1, tol, 300), (1, 1e3 * tol, 300))
    for kk, tt, it in attempts if fallback else attempts[:1]:
        # one BLAS thread: ARPACK's orthogonalization against its ncv vectors is most of a
        # step, and two threads there doubled the CPU seconds for a tenth less wall time
        try:
            with threadpool_limits(1, "blas"):
                lam, U = eigsh(shifted, k=kk, which="SA", tol=tt, v0=v0,
                               ncv=min(n, max(2 * kk + 1, 32)), maxiter=it)
        except ArpackNoConvergence as exc:
            lam, U = exc.eigenvalues, exc.eigenvectors
        if len(lam):
            break
    if not fallback and len(lam) < k:
        # a partly converged block may have skipped an eigenvalue below its last one
        return np.zeros(0), np.zeros((n, 0))
    if len(lam) == 0:
        warnings.warn("Lanczos did not converge on the dual matrix; the certificate "
                      "uses the Gershgorin bound of lambda_min.", RuntimeWarning,
                      stacklevel=2)
        return np.array([laplacian_lower_bound(S, n_power=0)]), np.zeros((n, 0))
    lam = lam + 2.0 * c
    res = np.linalg.norm(apply(U) - U * lam, axis=0)
    order = np.argsort(lam)
    return (lam - res)[order], U[:, order]


def _range_basis(E):
    """Orthonormal basis of ``range(E)`` (computed once per certificate; every dual
    candidate filters it in :func:`_null_basis`).

    From the Gram matrix: ``E^T E = V diag(lam) V^T``, ``U = E V_k diag(lam_k)^{-1/2}``
    over the eigenvalues above :data:`RANGE_RTOL` times the largest (the directions of
    ``E`` whose singular values exceed ``sqrt(RANGE_RTOL)`` times the largest), then one
    Cholesky QR step ``U <- U R^{-T}`` with ``U^T U = R R^T``, which restores orthonormality
    to rounding (the first step's columns are orthogonal to ``eps / RANGE_RTOL``). Any
    orthonormal ``U`` keeps the bound valid; a direction left out (a singular value below
    the cut) is one that :func:`_null_basis` would not hold to ``S u = 0`` anyway.
    """
    E = np.asarray(E, dtype=np.float64)  # the Gram matrix needs double precision
    n, r = E.shape
    if r == 0:
        return np.zeros((n, 0))
    # one BLAS thread: the budget counts CPU seconds, and threads on these tall, thin
    # products cost far more CPU than they save in wall time
    with threadpool_limits(1, "blas"):
        lam, V = np.linalg.eigh(E.T @ E)
        keep = lam > RANGE_RTOL * max(float(lam[-1]), np.finfo(float).tiny)
        if not keep.any():
            return np.zeros((n, 0))
        # descending, as the singular vectors: the strongest direction first
        U = E @ (V[:, keep] / np.sqrt(lam[keep]))[:, ::-1]
        R = np.linalg.cholesky(U.T @ U)  # lower: U^T U = R R^T, and U R^{-T} is orthonormal
        return U @ sl.solve_triangular(R, np.eye(R.shape[0]), lower=True).T


def _null_basis(S, U, SU=None):
    """Which orthonormal directions of ``range(E)`` ``S`` (nearly) annihilates.

    The columns ``u`` of ``U`` (:func:`_range_basis`) with ``||S u|| <= 1e-7 c`` (``c`` the
    Gershgorin bound of ``S``): at a solution ``S E = 0``, but a direction with a tiny
    singular value is not held to it, and deflating it would only weaken the bound.

    Returns
    -------
    ndarray of shape (U.shape[1],), bool
        The mask of those columns (a mask, not their copy: ``8 n r`` bytes at large ``n``;
        :func:`smallest_eigenpairs` deflates them through ``deflate_mask``).
    """
    if U.shape[1] == 0:
        return np.zeros(0, dtype=bool)
    c = float(np.max(abs(S) @ np.ones(S.shape[0])))
    return np.linalg.norm(S @ U if SU is None else SU, axis=0) <= 1e-7 * c


def _deflation_split(U, SU, mask):
    """``omega = lambda_min(Q^T S Q)`` and ``eps = ||(I - Q Q^T) S Q||_2`` for
    ``Q = U[:, mask]``, from ``SU = S U`` without forming ``Q``, ``S Q`` or the residual
    (``eps^2`` is the largest eigenvalue of the residual's ``m x m`` Gram matrix,
    accumulated over blocks of rows)."""
    m = int(np.count_nonzero(mask))
    if m == 0:
        return 0.0, 0.0
    G = (U.T @ SU)[np.ix_(mask, mask)]
    gram = np.zeros((m, m))
    for start in range(0, U.shape[0], _ROW_BLOCK):
        rows = slice(start, start + _ROW_BLOCK)
        R = SU[rows][:, mask] - U[rows][:, mask] @ G
        gram += R.T @ R
    eps = float(np.sqrt(max(np.linalg.eigvalsh(gram)[-1], 0.0)))
    return float(np.linalg.eigvalsh(G)[0]), eps


def _inverse_quadratic(L, u, lmin):
    """An upper bound of ``u^T L^{-1} u``: ``u^T x + ||u|| ||u - L x|| / lambda_min(L)``."""
    x, _ = cg(L, u, rtol=1e-10, maxiter=10 * L.shape[0])
    return float(u @ x) + float(np.linalg.norm(u) * np.linalg.norm(u - L @ x)) / lmin


def _eigen_weights(problem, vectors, tau, f, lmin, deadline=None):
    """``w_i >= u_i^T K* u_i``: ``tau``, or for the nonnegative losses the smaller
    ``f u_i^T L^{-1} u_i`` (the largest ``u^T K u`` under ``<L, K> <= f``, by Cauchy-Schwarz
    in the ``L`` inner product)."""
    w = np.full(vectors.shape[1], tau)
    if lmin is not None and lmin > 0:
        L = sp.csr_matrix(problem.laplacian)
        for i in range(vectors.shape[1]):
            _check(deadline)
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


def _block_may_help(problem, f, conj, lower, lam, u, tau, lmin, tol):
    """Whether the ``k``-block's bound could certify, or halve the gap of ``lower``, the
    bound of the smallest eigenpair alone.

    With ``nu = min(lambda_k, 0) <= 0`` and ``w_1 <= tau``, the block's negative part
    (:func:`_negative_part`) is at most ``(lambda_1 - nu) w_1 + nu tau <= lambda_1 w_1``,
    and its weight (:func:`_eigen_weights`) is at least ``min(tau, f / u^T L u)`` (for a
    unit ``u``, ``u^T L^{-1} u >= 1 / u^T L u`` by Cauchy-Schwarz): one product with ``L``
    bounds the best lower bound the block can reach, ``conj + lambda_1 w_1``. Where that
    neither certifies nor gains :data:`BLOCK_MIN_GAIN` of the gap, the block (Lanczos on
    ``k`` vectors and a CG solve per eigenvector) is not run.
    """
    w = tau
    if lmin is not None and lmin > 0:
        curvature = float(u @ (problem.laplacian @ u)) / float(u @ u)
        if curvature > 0:
            w = min(tau, f / curvature)
    best_gap = f - (conj + float(_times(min(lam, 0.0), w)))
    return best_gap <= max(tol * max(abs(f), np.finfo(float).tiny),
                           (1.0 - BLOCK_MIN_GAIN) * (f - lower))


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
            n_eig=1, return_eigenvectors=False, refine=True, time_budget=None):
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
    time_budget : float, optional
        Seconds of process CPU time the certificate may take (checked at every product of
        the eigen-solve and before every CG solve of the weights); past it the bound is
        skipped and the certificate says so in ``note`` (its bounds NaN, ``certified``
        False), unless only the ``k``-block that refines it was running: the bound of the
        smallest eigenpair is then returned. None: no limit.

    Returns
    -------
    Certificate, or (Certificate, values, vectors)
    """
    start = time.process_time()
    deadline = None if time_budget is None else start + float(time_budget)
    E = np.asarray(E, dtype=np.float64)
    n = E.shape[0]
    f = float(problem.objective(E))
    try:
        return _certify(problem, E, f, multipliers, tol=tol,
                        laplacian_min_eig=laplacian_min_eig, n_eig=n_eig,
                        return_eigenvectors=return_eigenvectors, refine=refine,
                        deadline=deadline)
    except _OverBudget:
        note = (f"skipped: the bound's eigen-solve passed its budget of {time_budget:.3g} CPU s "
                f"after {time.process_time() - start:.3g} s (psdlearn.npkl.certificate."
                "certify(problem, E) bounds it without a budget)")
        cert = skipped(f, tol, note)
        if return_eigenvectors:
            return cert, np.zeros(0), np.zeros((n, 0))
        return cert


def skipped(objective, tol, note):
    """The :class:`Certificate` of a bound that was not computed: ``note`` says why, the
    bounds are NaN and ``certified`` is False."""
    nan = float("nan")
    return Certificate(objective=float(objective), lower_bound=nan, gap_bound=nan,
                       relative_gap=nan, lambda_min=nan, trace_bound=nan, certified=False,
                       tol=float(tol), note=note)


def _certify(problem, E, f, multipliers, *, tol, laplacian_min_eig, n_eig,
             return_eigenvectors, refine, deadline):
    """:func:`certify` at ``f = f(E E^T)``, its eigen-solves stopped at ``deadline``."""
    n = E.shape[0]
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
    # in the given order: BCD's stages, the most smoothed first (the better candidates,
    # module docstring), each skipped when it cannot beat the best so far (cannot_win)
    candidates = [None]
    if _kinked(terms) and multipliers is not None:
        given = [multipliers] if np.ndim(multipliers) == 1 else list(multipliers)
        candidates = [_clip_to_domain(terms, a) for a in given if a is not None] or [None]
    if not refine:
        candidates = candidates[:1]
    def lanczos_tol(S):
        # the bound loses at most tau times the Lanczos residual, which ARPACK keeps below
        # its tolerance times the shift 2 c: a twentieth of the certificate's tolerance
        # (of |f|) is enough, between FINE_EIG_TOL and CHEAP_EIG_TOL
        if not refine:
            return CHEAP_EIG_TOL
        c = float(np.max(abs(S) @ np.ones(n)))
        if not (np.isfinite(tau) and tau > 0 and c > 0):
            return FINE_EIG_TOL
        return float(np.clip(0.05 * tol * abs(f) / (2.0 * c * tau), FINE_EIG_TOL,
                             CHEAP_EIG_TOL))

    range_E = _range_basis(E)

    def prepare(alpha):
        S, conj = dual_matrix(problem, E, alpha)
        SU = S @ range_E
        mask = _null_basis(S, range_E, SU)
        # split R^n = range(Q) + its complement, Q = range_E[:, mask] a basis of (most
        # of) range(E): with omega = lambda_min(Q^T S Q) and eps = ||(I - Q Q^T) S Q||,
        # the cross terms are 2 x^T S y >= -eps (eta ||x||^2 + ||y||^2 / eta), so
        # S >= omega - eps eta on range(Q) and S - eps / eta on the complement, where S
        # agrees with S + c Q Q^T (whose eigenpairs are computed: range(E) deflated)
        omega, eps = _deflation_split(range_E, SU, mask)
        return S, conj, mask, omega, eps

    def split_bound(prepared, values, w):
        # the split above holds with eps eta on range(Q) and eps / eta on its
        # complement for any eta > 0 (2 ab <= eta a^2 + b^2 / eta): best eta of a grid
        _, conj, _, omega, eps = prepared
        part, eta = max((_negative_part(values - eps / eta, w, tau)
                         + float(_times(min(omega - eps * eta, 0.0), tau)), eta)
                        for eta in np.logspace(-8, 4, 49))
        return conj + part, min(float(values[0]) - eps / eta, omega - eps * eta)

    def bound(prepared, k, v0=None, **lanczos):
        S, _, mask, _, _ = prepared
        values, vectors = smallest_eigenpairs(S, k, deflate=range_E, deflate_mask=mask,
                                              tol=lanczos_tol(S), v0=v0, deadline=deadline,
                                              **lanczos)
        if len(values) == 0:  # a block that did not converge (fallback=False)
            return -np.inf, None, values, vectors
        w = (_eigen_weights(problem, vectors[:, :-1], tau, f, lmin, deadline)
             if vectors.shape[1] > 1 and refine else np.zeros(0))
        return *split_bound(prepared, values, w), values, vectors

    def cannot_win(prepared, x, best_lower):
        # the single-eigenvalue bound increases with lambda_min of the deflated S + c Q Q^T,
        # and any Rayleigh quotient bounds lambda_min from above: at the last candidate's
        # smallest eigenvector (one product with S) it bounds this candidate's bound, and
        # when that is no better than the best, its Lanczos run cannot change the result
        S, _, mask, _, _ = prepared
        c = float(np.max(abs(S) @ np.ones(n)))
        x = x / np.linalg.norm(x)
        rayleigh = float(x @ (S @ x)) + c * float(np.sum((range_E.T @ x)[mask] ** 2))
        return split_bound(prepared, np.array([rayleigh]), np.zeros(0))[0] <= best_lower

    # every candidate's bound from its smallest eigenpair alone first (a k-block costs
    # several times more Lanczos steps, and its eigenvector weights a CG solve each); the
    # block only for the best candidate, when its lambda_min is negative and the bound
    # does not certify (or the escalation needs n_eig vectors)
    # the candidates' S differ only in the multipliers of the pairs: Lanczos for the next
    # one starts from the last one's smallest eigenvector
    best, start = None, None
    for alpha in candidates:
        if best is not None and alpha is not None and float(alpha.sum()) <= best[0][0]:
            continue
        prepared = prepare(alpha)
        if best is not None and start is not None and cannot_win(prepared, start,
                                                                 best[0][0]):
            continue
        found = bound(prepared, 1, start)
        start = found[3][:, 0] if found[3].shape[1] else None
        if best is None or found[0] > best[0][0]:
            best = (found, prepared)
    (lower, lam, values, vectors), prepared = best
    k_block = max(n_eig, N_BOUND_EIG if refine else 1)
    if (k_block > 1 and values[0] < 0 and f - lower > tol * max(abs(f), np.finfo(float).tiny)
            and (n_eig > 1 or vectors.shape[1] == 0  # no eigenvector: Gershgorin's bound
                 or _block_may_help(problem, f, prepared[1], lower, values[0],
                                    vectors[:, 0], tau, lmin, tol))):
        # a block for the bound alone gets BLOCK_RESTARTS and no fallback (module
        # docstring, "Cost"); one whose vectors the escalation needs, the full search
        lanczos = {} if n_eig > 1 else {"maxiter": BLOCK_RESTARTS, "fallback": False}
        try:
            block_lower, block_lam, block_values, block_vectors = bound(prepared, k_block,
                                                                        **lanczos)
        except _OverBudget:
            if n_eig > 1:  # the escalation needs the block's vectors
                raise
            # the block only refines the bound: the smallest eigenpair's stands
            block_lower, block_lam, block_values = -np.inf, lam, np.zeros(0)
        # several strongly negative eigenvalues can make the k-block bound lower than
        # the single-eigenvalue one: both are valid, keep the larger
        if block_lower > lower:
            lower, lam = block_lower, block_lam
        if len(block_values):
            values, vectors = block_values, block_vectors
    gap = max(f - lower, 0.0)
    rel = gap / max(abs(f), np.finfo(float).tiny)
    descent = float("nan")
    if (refine and rel > tol and len(values) and values[0] < 0
            and -float(_times(min(lam, 0.0), tau)) >= 0.5 * gap):
        # the negative curvature dominates the bound: whether it is missing rank (a
        # scalar search along the ray, about the cost of one objective evaluation, also
        # past the budget: the warning's advice depends on it)
        from psdlearn.npkl.escalation import rank_descent

        descent = rank_descent(problem, E, values[:1], vectors[:, :1], objective=f)
    cert = Certificate(objective=f, lower_bound=float(lower), gap_bound=float(gap),
                       relative_gap=float(rel), lambda_min=lam, trace_bound=float(tau),
                       certified=bool(rel <= tol), tol=float(tol), rank_descent=descent)
    if return_eigenvectors:
        return cert, values, vectors
    return cert



#: Names of :mod:`psdlearn.npkl.escalation` also importable from here (``rank="adaptive"``
#: imported them from this module before the split).
_ESCALATION_NAMES = frozenset({"AdaptiveRound", "certify_and_escalate", "escalate",
                               "escalation_levels", "smoothed_multipliers"})


def __getattr__(name):
    # resolved lazily: escalation imports this module
    if name in _ESCALATION_NAMES:
        from psdlearn.npkl import escalation

        return getattr(escalation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
