r"""SimpleNPKL (Zhuang, Tsang & Hoi, JMLR 12, 2011): the baseline of Hu & Kwok 2015 and 2013.

SimpleNPKL adds the capacity constraint ``tr(K^p) <= B`` (``p = 2``) to the NPKL SDP of
Hu & Kwok 2015 eq. (3),

.. math::

    (P_B) \qquad \min_{K \succeq 0,\ \|K\|_F^2 \le B}\;
        \operatorname{tr}(L K) + \gamma \sum_{k=1}^{m} \ell(T_k K_{i_k j_k}),

each unordered pair ``(i_k, j_k)`` counted once, as in :mod:`psdlearn.npkl.problem`.

**Closed form** (JMLR Prop. 1, ``p = 2``). For a symmetric ``M``,
``max tr(M K)`` over ``K >= 0, ||K||_F^2 <= B`` is attained at
``K = sqrt(B) M_+ / ||M_+||_F`` (``M_+``: ``M`` with its negative eigenvalues set to zero)
with value ``sqrt(B) ||M_+||_F`` (Hoelder on the eigenvalues). The linear loss
``l(z) = -z`` makes (P_B) ``min tr(A K)`` with ``A = L - gamma sum_k T_k S_k`` (Hu & Kwok 2015
eqs. 6-7; ``S_k = (e_i e_j^T + e_j e_i^T) / 2``, so ``<S_k, K> = K_ij``); with
``M = -A = gamma sum_k T_k S_k - L`` the solution is the closed form, the JMLR paper's
``A = C sum T_ij - L`` (it writes the problem as a max; Hu & Kwok 2015's ``A_+`` is the PSD part
of this ``-A``). The constraint ``||e_i|| <= b`` of our linear loss is replaced by
``||K||_F^2 <= B``, as in the papers, so the returned ``K`` need not satisfy it.

**Saddle point** (JMLR sections 4.3-4.5). For the other losses, dualizing the margins with
multipliers ``a_k`` (coefficient ``c_k a_k`` on ``K_ij``, ``c_k = T_k``) gives

.. math::

    J(a) = \min_{K \succeq 0,\ \|K\|_F^2 \le B}
           \operatorname{tr}\big((L - \textstyle\sum_k c_k a_k S_k) K\big)
           + \sum_k h(a_k)
         = \sum_k h(a_k) - \sqrt{B}\, \|M(a)_+\|_F,
    \qquad M(a) = \sum_k c_k a_k S_k - L,

with ``h(a) = min_z [gamma l(z / c) + a z]`` (``C = 2 gamma`` in the JMLR notation):

- hinge: ``h(a) = a`` on ``0 <= a <= gamma``;
- squared hinge: ``h(a) = a - a^2 / (4 gamma)``, ``a >= 0``;
- square: ``h(a) = a - a^2 / (4 gamma)``, ``a`` free;
- pcp (Hu & Kwok 2013 eq. 1: ``w_k (K_ij - t_k)^2`` with ``w = gamma`` per unordered pair,
  ``gamma / 2`` per diagonal entry, targets 1 / 0 / 1, ``c_k = 1``):
  ``h(a) = t_k a - a^2 / (4 w_k)``, ``a`` free; the JMLR square-loss derivation carries
  over unchanged (a square loss on fixed entries of ``K``, the diagonal included).

``J`` is concave and, where ``M_+ != 0``, differentiable with (JMLR eq. 25 / Lemma 3)
``dJ / da_k = h'(a_k) - c_k K_{i_k j_k}`` at the closed-form ``K(a)``. Algorithm 1 of the
JMLR paper alternates the closed-form ``K(a)`` and a projected gradient step
``a <- Proj(a + grad J / eta)``. Its Prop. 6 needs ``eta`` at least the Lipschitz constant
of ``grad J``; Lemma 5 bounds it by ``m / G + 1 / C`` with ``G = ||M_+||_F / sqrt(B)``
(Prop. 2 form). With the exact norms (``||S_k||_F^2 = 1/2``, ``1`` on the diagonal, the
``S_k`` orthogonal) the same argument gives ``eta = s sqrt(B) / ||M_+||_F + max |h''|`` with
``s = max_k c_k^2 ||S_k||_F^2``. As ``G`` moves with ``a`` this is a local estimate, and
it is pessimistic (measured: 800 steps short of ``tol`` where the rule below converges in
125 on a 200-point hinge problem). Each step therefore tries the smaller of this ``eta``
and the previous accepted one, halved (a longer step) when that was accepted at its first
try, and accepts it only when the curvature of ``J`` along the step does not exceed
``eta``,

.. math::

    -\langle \nabla J(a^+) - \nabla J(a),\, a^+ - a\rangle \le \eta\, \|a^+ - a\|^2,

doubling ``eta`` otherwise (the role of ``eta >= L`` in Prop. 6). By concavity
``J(a^+) >= J(a) + <grad J(a^+), a^+ - a>``, and the projection gives
``<grad J(a), a^+ - a> >= eta ||a^+ - a||^2``, so an accepted step has
``J(a^+) >= J(a)``: ``J`` never decreases. (The test reads gradients only; the
function-value form (27) of Prop. 6 is swamped by rounding near the optimum.) ``J(a)`` is
a lower bound on the optimum of (P_B) and the primal
objective of ``K(a)`` an upper bound; they meet at the saddle point.

Every ``K(a)`` lies on the sphere ``||K||_F^2 = B``, so the iterations reach the optimum of
(P_B) only when the capacity binds there. When it does not (``B`` above ``||K*||_F^2`` of
the problem without it; e.g. ``B = 100 n`` with the pcp targets ``K_ii ~ 1``, for which
``||K*||_F^2 ~ n^2 / c`` with ``c`` balanced classes, when ``n < 100 c``), ``M(a)_+``
shrinks towards zero, the step ``1 / eta`` with it, and the iterations stall on the
sphere: this is the algorithm of the paper, reproduced as it is.

**Low rank.** Each ``K`` step needs the positive eigenpairs of the sparse ``M(a)`` (kNN
Laplacian plus ``m`` pair entries): the top ``r`` eigenpairs by Lanczos (``eigsh``,
``which="LA"``, restarted inside the previous positive eigenspace), ``r`` from the
``r (r + 1) / 2 <= m`` rule (JMLR Prop. 4), or dense ``eigh`` for small ``n``. When all
``r`` computed eigenvalues are positive, ``M_+`` may have more: ``K`` and ``J`` are then
those of the rank-``r`` truncation (``truncated`` in the result). ``K = E E^T`` is kept
as its ``n x r`` factor: a step costs the assembly of the sparse ``M(a)``, one Lanczos run,
and ``O(m r)`` for the dual gradient (the ``m`` entries ``K_ij`` read from ``E``); above
:data:`DENSE_MAX_N` no ``n x n`` dense matrix is formed.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh
from threadpoolctl import threadpool_limits

from psdlearn._solver import SolverResult
from psdlearn.npkl.losses import get_loss

__all__ = ["DEFAULT_B", "default_B", "fit_simplenpkl", "solve_simplenpkl"]

#: ``B`` of Hu & Kwok 2015 section IV-A.2 for its small sets (n <= 270 here).
DEFAULT_B = 100.0
#: Sets with more samples than this get ``B = 100 n``: Hu & Kwok 2015 uses 100 n on the adult
#: sets (n >= 1605) and 100 on the small ones (n <= 270); any threshold in between
#: reproduces both, and 1000 keeps ``||K||_F^2 / n^2`` above ``1e-4`` for ``B = 100``.
B_SWITCH_N = 1000
#: Up to this ``n`` the eigenpairs are computed densely: measured with ``r = 44`` on one
#: thread, dense ``eigh`` takes 0.03 s at n = 500 and 0.13 s at n = 1000, where ARPACK
#: takes 0.06 s; above it, no ``n x n`` dense matrix is formed.
DENSE_MAX_N = 500
#: Relative accuracy asked of the Lanczos eigenvalues.
EIG_TOL = 1e-10
#: Largest number of step-size doublings in one iteration.
MAX_BACKTRACK = 50


def default_B(n_samples, loss):
    """``B="auto"``: Hu & Kwok 2013 footnote 3 for ``pcp`` (``100 n``); else Hu & Kwok 2015 IV-A.2.

    Hu & Kwok 2015 sets ``B = 100`` on its small sets and ``100 n`` on the adult sets; the switch
    is at ``n > B_SWITCH_N`` (see there). Hu & Kwok 2013 sets ``100 n`` on every set ("better than
    the value suggested" by the JMLR paper).
    """
    n = int(n_samples)
    if loss == "pcp" or n > B_SWITCH_N:
        return 100.0 * n
    return DEFAULT_B


class _Terms:
    """The dualized entries of ``K``: the loss terms of :mod:`psdlearn.npkl.losses`.

    ``h(a)``, ``h'(a)``, the bounds of ``a`` and the curvature ``-h''`` are the conjugate
    of the loss's table entry (the module docstring lists them); ``fixed`` marks a loss whose
    multipliers have a single value (the linear loss: ``a = gamma``, no iteration).
    """

    def __init__(self, problem):
        self.loss, self.terms = get_loss(problem.loss), problem.terms()
        self.gamma = float(problem.gamma)
        self.c, self.t, self.w = self.terms.coef, self.terms.targets, self.terms.weights
        self.lo, self.hi = self.loss.domain(self.w)
        # a loss whose conjugate's domain is one point (for any weight) is not iterated
        self.fixed = bool(np.array_equal(*self.loss.domain(np.ones(1))))
        curv = self.loss.curvature(self.w)
        self.curv_max = float(np.max(curv)) if len(curv) else 0.0
        off = self.terms.rows != self.terms.cols
        # s of the Lipschitz estimate: max_k c_k^2 ||S_k||_F^2
        self.s = float(np.max(self.c**2 * np.where(off, 0.5, 1.0))) if len(self.c) else 0.0

    def start(self):
        """``a_0 = argmax sum_k h(a_k)``: the multipliers of ``K = 0``."""
        return self.loss.multipliers(np.zeros(len(self.c)), self.t, self.w)

    def h(self, a):
        return float(np.sum(self.loss.conjugate(a, self.t, self.w)))

    def dh(self, a):
        return self.loss.conjugate_derivative(a, self.t, self.w)

    def project(self, a):
        return np.clip(a, self.lo, self.hi)

    def matrix(self, a, L):
        """``M(a) = sum_k c_k a_k S_k - L`` (sparse CSR)."""
        return (self.terms.matrix(a) - L).tocsr()

    def entries(self, E):
        """``K_{i_k j_k}`` at ``K = E E^T``."""
        return self.terms.entries(E)


def _top_eigenpairs(M, rank, v0):
    """The ``rank`` largest eigenpairs of the symmetric ``M``, ascending."""
    n = M.shape[0]
    if n <= max(DENSE_MAX_N, 3 * rank):
        return sla.eigh(M.toarray(), subset_by_index=[n - rank, n - 1])
    return eigsh(M, k=rank, which="LA", v0=v0, tol=EIG_TOL)


class _KStep:
    """Closed-form ``K(a)`` (JMLR Prop. 1) through the top eigenpairs of ``M(a)``."""

    def __init__(self, terms, L, rank, B, rng):
        self.terms, self.L, self.rank, self.sqrt_B = terms, L, rank, np.sqrt(B)
        self.v0 = rng.standard_normal(L.shape[0])
        self.count = 0

    def __call__(self, a):
        """Return ``(E, ||M_+||_F, truncated)`` with ``E E^T = sqrt(B) M_+ / ||M_+||_F``."""
        sigma, U = _top_eigenpairs(self.terms.matrix(a, self.L), self.rank, self.v0)
        self.count += 1
        pos = np.maximum(sigma, 0.0)
        norm = float(np.linalg.norm(pos))
        if norm == 0.0:
            return np.zeros_like(U), 0.0, False
        self.v0 = U @ pos  # Lanczos restart inside the previous positive eigenspace
        E = U * np.sqrt(self.sqrt_B * pos / norm)
        return E, norm, bool(sigma[0] > 0)


def _relative_change_sq(E, E_prev):
    """``||E E^T - F F^T||_F^2 / ||E E^T||_F^2`` in ``O(n r^2)``."""
    ke = float(np.sum((E.T @ E) ** 2))
    kf = float(np.sum((E_prev.T @ E_prev) ** 2))
    cross = float(np.sum((E.T @ E_prev) ** 2))
    if ke == 0.0:
        return 0.0 if kf == 0.0 else np.inf
    return max(ke + kf - 2.0 * cross, 0.0) / ke


def solve_simplenpkl(
    problem,
    *,
    B=100.0,
    p=2,
    rank=1,
    max_iter=1000,
    tol=1e-5,
    random_state=None,
    callback=None,
):
    """Solve the NPKL problem with the capacity constraint ``||K||_F^2 <= B`` (SimpleNPKL).

    Parameters
    ----------
    problem : NPKLProblem
        Laplacian, constraints, loss (``"linear"``, ``"hinge"``, ``"squared_hinge"``,
        ``"square"`` or ``"pcp"``) and ``gamma`` (``b`` is not used: see the module
        docstring).
    B : float, default=100.0
        Capacity ``tr(K^2) <= B``; :func:`default_B` gives the papers' choice.
    p : int, default=2
        Exponent of ``tr(K^p)``; only ``p = 2`` (the papers' setting) is implemented.
    rank : int, default=1
        Number of top eigenpairs of ``M(a)`` computed per ``K`` step (``K`` has at most this
        rank).
    max_iter : int, default=1000
        Maximum gradient steps on the multipliers.
    tol : float, default=1e-5
        Stop when ``||K_t - K_{t-1}||_F / ||K_t||_F < tol`` (Hu & Kwok 2015 uses its BCD
        criterion for SimpleNPKL too).
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        Seeds the first Lanczos start vector. Same seed, same result.
    callback : callable, optional
        ``callback(n_iter, E, objective)`` after every step; returning ``True`` stops the
        steps there (``interrupted=True``).

    Returns
    -------
    SolverResult
        ``embedding``: ``E`` with ``K = E E^T = sqrt(B) M_+ / ||M_+||_F`` (columns of zero
        where ``M`` has fewer than ``rank`` positive eigenvalues); ``objective_history``:
        objective (10) of ``K(a_t)`` (``problem.objective``), ``t = 0 .. n_iter``, the
        number every NPKL solver reports; ``time_history``: cumulative solver seconds
        aligned with it (objective evaluations and callback excluded); ``n_iter``: gradient
        steps (0 for the linear loss); ``converged``: ``||K_t - K_{t-1}||_F / ||K_t||_F <
        tol`` was reached (always for the linear loss; stopping at ``max_iter`` is not an
        error here, callers decide whether to warn); ``interrupted``: a KeyboardInterrupt
        (``embedding`` is the last complete step and the last history entry its
        objective) or the callback stopped the steps. ``info``:
        ``simplenpkl_objective_history`` (the saddle-point dual ``J(a_t)`` that SimpleNPKL
        maximizes, non-decreasing; for the linear loss the single value ``tr(A K)`` of
        problem (6)), ``dual`` (the final multipliers ``a``), ``truncated`` (whether all
        ``rank`` eigenvalues of the last ``M(a)`` were positive, i.e. ``K`` may be the
        rank-``rank`` truncation of the closed form) and ``n_eig`` (eigendecompositions
        computed: one per accepted or rejected step, plus the start).
    """
    if p != 2:  # a solver-only argument: no estimator validates it
        raise ValueError(f"only p=2 is implemented (the papers' setting), got p={p!r}.")
    B = float(B)
    L = sp.csr_matrix(problem.laplacian, dtype=np.float64)
    if isinstance(random_state, np.random.RandomState):
        rng = random_state
    else:
        rng = np.random.default_rng(random_state)
    terms = _Terms(problem)
    k_step = _KStep(terms, L, int(rank), B, rng)

    # The dense work is n x r panels (Lanczos bases, Ritz vectors): too small to gain from
    # BLAS threads, and slowed several-fold by their contention on shared cores (measured:
    # 0.30 s vs 0.08 s per eigendecomposition at n = 1000, r = 44, 2 loaded cores).
    with threadpool_limits(1, "blas"):
        return _iterate(problem, terms, k_step, B, int(max_iter), tol, callback)


def _iterate(problem, terms, k_step, B, max_iter, tol, callback):
    """Algorithm 1 of the JMLR paper from ``a_0``; see :func:`solve_simplenpkl`."""
    t0 = time.perf_counter()
    a = terms.start()
    E, norm, truncated = k_step(a)
    J = terms.h(a) - np.sqrt(B) * norm
    elapsed = time.perf_counter() - t0
    history, dual_history, times = [problem.objective(E)], [J], [elapsed]
    converged, n_iter, eta_prev, shrink = terms.fixed, 0, None, 0.5
    interrupted = False
    if not terms.fixed:
        grad = terms.dh(a) - terms.c * terms.entries(E)
        try:
            for n_iter in range(1, max_iter + 1):
                t0 = time.perf_counter()
                # local Lipschitz estimate of grad J or a longer step, then the curvature test
                bound = terms.curv_max + (terms.s * np.sqrt(B) / norm if norm > 0 else 0.0)
                bound = bound if bound > 0 else 1.0 / terms.gamma
                eta = bound if eta_prev is None else min(bound, shrink * eta_prev)
                at_once = True
                for _ in range(MAX_BACKTRACK):
                    a_new = terms.project(a + grad / eta)
                    step = a_new - a
                    E_new, norm_new, trunc_new = k_step(a_new)
                    grad_new = terms.dh(a_new) - terms.c * terms.entries(E_new)
                    if -float((grad_new - grad) @ step) <= eta * float(step @ step):
                        break
                    eta *= 2.0
                    at_once = False
                # try a longer step next time only after a step accepted at once (each
                # rejection costs an eigendecomposition)
                eta_prev, shrink = eta, 0.5 if at_once else 1.0
                change = _relative_change_sq(E_new, E)
                a, E, norm, grad, truncated = a_new, E_new, norm_new, grad_new, trunc_new
                J = terms.h(a) - np.sqrt(B) * norm
                converged = change < tol * tol
                elapsed += time.perf_counter() - t0
                obj = problem.objective(E)
                history.append(obj)
                dual_history.append(J)
                times.append(elapsed)
                stop = callback is not None and callback(n_iter, E, obj) is True
                if converged or stop:
                    interrupted = not converged
                    break
        except KeyboardInterrupt:
            # (a, E) are replaced together: E is the last complete step
            interrupted, converged = True, False
            del history[n_iter + 1:], dual_history[n_iter + 1:], times[n_iter + 1:]
            obj = problem.objective(E)
            if obj != history[-1]:  # the step was taken but not yet recorded
                history.append(obj)
                dual_history.append(terms.h(a) - np.sqrt(B) * norm)
                times.append(elapsed)
            n_iter = len(history) - 1
    return SolverResult(
        embedding=E,
        objective_history=history,
        time_history=times,
        n_iter=n_iter,
        converged=bool(converged),
        interrupted=interrupted,
        info={"simplenpkl_objective_history": dual_history, "dual": a,
              "truncated": truncated, "n_eig": k_step.count},
    )


def fit_simplenpkl(problem, E0, options):
    """The ``"simplenpkl"`` entry of :data:`psdlearn.npkl.solvers.NPKL_SOLVERS`.

    :func:`solve_simplenpkl` at ``rank = options.params["rank"]`` with the capacity
    ``B = options.params["B"]`` (``"auto"``: :func:`default_B`); it starts from the
    multipliers of ``K = 0``: ``E0`` is not used. ``info["B"]`` is the capacity used.
    """
    B = options.params["B"]
    B = default_B(problem.n_samples, problem.loss) if B == "auto" else float(B)
    res = solve_simplenpkl(problem, B=B, rank=options.params["rank"],
                           max_iter=options.max_iter, tol=options.tol,
                           random_state=options.random_state, callback=options.callback)
    return replace(res, info={**res.info, "B": B})
