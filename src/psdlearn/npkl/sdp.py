r"""Reference solver: the convex NPKL semidefinite program, solved to optimality with cvxpy.

The low-rank solvers (``bcd``, ``admm``, ...) minimize the nonconvex objective (10) of
Hu & Kwok 2015 over a factor ``E`` of ``K = E E^T``. Before factorization, the problem is the
convex SDP (3) of Hu & Kwok 2015,

.. math::

    (P) \qquad \min_{K \succeq 0} \; \operatorname{tr}(L K)
        + \gamma \sum_{k=1}^{m} \ell(T_k K_{i_k j_k})
        \quad [\text{and } K_{ii} \le b^2 \text{ for the linear loss}],

with each unordered constrained pair ``(i_k, j_k)`` counted once, ``T_k = +1`` for a
must-link and ``-1`` for a cannot-link, ``l(z) = max(1 - z, 0)`` (hinge),
``max(1 - z, 0)^2`` (squared hinge), ``(1 - z)^2`` (square) or ``-z`` (linear; the bound
``K_ii <= b^2`` is ``||e_i|| <= b`` of Hu & Kwok 2015 eq. 29, imposed on every sample). The
``pcp`` loss of Hu & Kwok 2013 eq. (1) adds ``gamma (K_ij - t_k)^2`` per pair (``t = 1`` / ``0``
for must / cannot) and ``gamma / 2 (K_ii - 1)^2`` per sample. Its
optimal value is a lower bound on the objective of every ``E``, and it is attained at any
``E`` with ``E E^T`` optimal for (P); this module computes it.

Two equivalent cvxpy models are offered.

``formulation="primal"`` is (P) as written, with ``K = cp.Variable((n, n), PSD=True)``
and ``tr(L K)`` expressed through the stored entries of the sparse ``L`` only.

``formulation="dual"`` (the default) is the Lagrange dual of (P). With
``S_k = (e_i e_j^T + e_j e_i^T) / 2`` (so that ``<S_k, K> = K_ij``) and the
multipliers ``alpha_k = -gamma l'(T_k K_ij)`` of the pairs and ``mu_i >= 0`` of the
diagonal bounds, conjugating the losses gives

.. math::

    (D) \qquad \max_{\alpha, \mu} \; \sum_k g(\alpha_k) - b^2 \sum_i \mu_i
    \quad \text{s.t.} \quad
    Z = L - \sum_k \alpha_k T_k S_k + \operatorname{Diag}(\mu) \succeq 0,

where ``g(a) = a`` on ``0 <= a <= gamma`` (hinge), ``g(a) = a - a^2 / (4 gamma)`` on
``a >= 0`` (squared hinge) or on all ``a`` (square), and ``alpha_k = gamma`` fixed
(linear; ``mu = 0`` for the other losses). For ``pcp`` each term ``w (K_ij - t)^2`` (pairs
with ``w = gamma``, and the diagonal with ``w = gamma / 2``) enters with its own multiplier
and ``g(a) = t a - a^2 / (4 w)``, without the sign ``T_k``. ``K`` is the multiplier of
``Z >= 0``; at the optimum ``Z K = 0`` (complementary slackness) and the optimal values of
(P) and (D) coincide (``K = epsilon I`` is strictly feasible for (P), so Slater's condition
holds).
``Z`` has the sparsity of ``L`` plus the constrained pairs, so Clarabel splits the
``n x n`` cone into the cliques of a chordal extension of that pattern and returns a
positive semidefinite completion of ``K``. Any PSD completion is optimal, since (P) reads
``K`` only on that pattern.

Cost, measured on one machine (2 CPU threads; Clarabel 0.11.1 through cvxpy 1.9.3 with
the tolerances used here): kNN Laplacian (``k = 5``) of iris-like data, 3 Gaussian
classes in 4-D, ``0.6 n`` must-link plus ``0.6 n`` cannot-link random pairs,
``gamma = 1``; seconds of ``solve_sdp`` for the hinge, squared hinge, square and linear
losses:

=====  ==================================  ===============================
``n``  ``formulation="dual"``              ``formulation="primal"``
=====  ==================================  ===============================
 50    0.14, 0.16, 0.14, 0.13              1.4, 1.1, 0.7, 1.0
100    3.6, 3.2, 2.9, 2.7                  24, 22, 16, 23
150    11.5, 9.7, 8.3, 9.4                 314 (hinge)
200    27.7, 25.5, 24.2, 17.1              (not run; about 30 min by n^6)
300    224 (hinge), 181 (square); 4.8 GB   (not run)
=====  ==================================  ===============================

The dense primal model carries ``n (n + 1) / 2`` unknowns in one PSD cone, and an
interior point method factors a dense matrix of that order at every iteration:
``O(n^6)`` time and ``O(n^4)`` memory, as measured (x13 from ``n = 100`` to ``150``).
The chordal dual is much cheaper, but its cliques grow with the number of random
long-range pairs (``1.2 n`` here): about ``n^4`` up to ``n = 200`` and ``n^5`` beyond
(x8 from 200 to 300, with 4.8 GB of memory). Hence :data:`DEFAULT_MAX_SAMPLES` ``= 200``
(under half a minute); this is a reference for small problems, not a solver for data
sets.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from psdlearn._linalg import psd_factor
from psdlearn._solver import SolverResult
from psdlearn.npkl.losses import get_loss

__all__ = ["DEFAULT_EIG_TOL", "DEFAULT_MAX_SAMPLES", "FORMULATIONS", "fit_sdp", "solve_sdp"]

#: Largest ``n`` solved without ``force=True``: about 30 s at ``n = 200`` with the default
#: (dual, Clarabel) model, but about 4 minutes and 4.8 GB at ``n = 300`` (module docstring).
DEFAULT_MAX_SAMPLES = 200

#: Eigenvalues of ``K`` below ``DEFAULT_EIG_TOL * lambda_max(K)`` are dropped from the
#: embedding. Interior point solutions leave spurious eigenvalues around ``1e-10`` times
#: the largest; the genuine ones measured were above ``1e-3`` times the largest.
DEFAULT_EIG_TOL = 1e-6

#: Accepted values of ``formulation``.
FORMULATIONS = ("dual", "primal")

# Interior point tolerances tighter than Clarabel's 1e-8 defaults; the reference solution
# must be more accurate than the solvers it judges.
_SOLVER_OPTIONS = {
    "CLARABEL": {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9, "max_iter": 500},
    "SCS": {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 200_000},
}

_MEASURED = (
    "measured with the default dual model and Clarabel on kNN graphs with 1.2 n pairs: "
    "n=100: 3 s, n=150: 10 s, n=200: 25 s, n=300: 200 s and 4.8 GB; the primal model is "
    "O(n^6) time and O(n^4) memory, 314 s already at n=150"
)


def _import_cvxpy():
    """Import cvxpy, or explain how to install the optional extra."""
    try:
        import cvxpy as cp
    except ImportError as exc:
        raise ImportError(
            "The 'sdp' reference solver needs cvxpy with an SDP solver (Clarabel or SCS); "
            "install them with `pip install psdlearn[sdp]`."
        ) from exc
    return cp


def _pick_solver(cp, solver):
    """cvxpy solver name: Clarabel if installed, else SCS, or the one asked for."""
    installed = cp.installed_solvers()
    if solver is None:
        for name in ("CLARABEL", "SCS"):
            if name in installed:
                return name
        raise ImportError(
            "cvxpy is installed but neither Clarabel nor SCS is; install them with "
            "`pip install psdlearn[sdp]`, or pass solver= one of the installed SDP solvers."
        )
    if not isinstance(solver, str):
        raise TypeError(f"solver must be a cvxpy solver name or None, got {solver!r}.")
    name = solver.upper()
    if name not in installed:
        raise ValueError(f"solver={solver!r} is not an installed cvxpy solver: {installed}.")
    return name


def _arrays(problem):
    """``(L, pairs, signs, gamma, b)`` of ``problem`` as the models read them."""
    L = sp.csr_matrix(problem.laplacian, dtype=np.float64)
    pairs = np.asarray(problem.pairs, dtype=np.int64).reshape(-1, 2)
    signs = np.asarray(problem.signs, dtype=np.float64).reshape(-1)
    return L, pairs, signs, float(problem.gamma), float(problem.b)


def _primal_model(cp, L, pairs, signs, loss, gamma, b):
    """Model (P) with a dense PSD variable; returns ``(problem, kernel_getter)``.

    The loss enters as ``sum_k w_k l(c_k K_{i_k j_k}; t_k)`` over the terms of its entry in
    :data:`psdlearn.npkl.losses.LOSS_TABLE`.
    """
    n = L.shape[0]
    table = get_loss(loss)
    terms = table.terms(pairs, signs, n, gamma)
    K = cp.Variable((n, n), PSD=True, name="K")
    k_vec = cp.vec(K, order="F")  # K_ij at position i + n j
    coo = L.tocoo()
    # tr(L K) = sum_ij L_ij K_ji = sum_ij L_ij K_ij over the stored entries of L (K = K^T)
    objective = coo.data @ k_vec[coo.row.astype(np.int64) + n * coo.col.astype(np.int64)]
    if len(terms) and gamma > 0:
        z = cp.multiply(terms.coef, k_vec[terms.rows + n * terms.cols])
        objective = objective + table.cvxpy_penalty(cp, z, terms.targets, terms.weights)
    constraints = [cp.diag(K) <= b * b] if table.bounded else []
    return cp.Problem(cp.Minimize(objective), constraints), lambda: K.value


def _dual_model(cp, L, pairs, signs, loss, gamma, b):
    """Model (D) with a sparse LMI; returns ``(problem, kernel_getter)``.

    One multiplier ``alpha_k`` per term of the loss (:mod:`psdlearn.npkl.losses`), with
    ``Z = L - sum_k alpha_k c_k S_k [+ Diag(mu)]`` and the objective
    ``sum_k h(alpha_k; t_k, w_k) [- b^2 sum_i mu_i]`` (``h`` the conjugate in multiplier form).
    """
    n = L.shape[0]
    table = get_loss(loss)
    terms = table.terms(pairs, signs, n, gamma)
    m = len(terms)
    if m:
        # column k is vec(c_k S_k) = c_k (e_i e_j^T + e_j e_i^T) / 2, C-order vec (a diagonal
        # term's two halves add up to c_k e_i e_i^T)
        half = 0.5 * np.concatenate([terms.coef, terms.coef])
        rows = np.concatenate([terms.rows * n + terms.cols, terms.cols * n + terms.rows])
        A = sp.csc_matrix((half, (rows, np.concatenate([np.arange(m)] * 2))), shape=(n * n, m))
    else:
        A = sp.csc_matrix((n * n, 1))  # one dummy multiplier, fixed at zero below
    alpha = cp.Variable(A.shape[1], name="alpha")
    if m and gamma > 0:
        objective, constraints = table.cvxpy_conjugate(cp, alpha, terms.targets, terms.weights)
    else:
        objective, constraints = cp.sum(alpha), [alpha == 0.0]
    z_vec = -(A @ alpha)
    if table.bounded:
        # multipliers mu >= 0 of K_ii <= b^2: Z gains Diag(mu), the objective -b^2 sum(mu)
        mu = cp.Variable(n, name="mu", nonneg=True)
        diag = sp.csc_matrix((np.ones(n), (np.arange(n) * (n + 1), np.arange(n))),
                             shape=(n * n, n))
        objective = objective - (b * b) * cp.sum(mu)
        z_vec = z_vec + diag @ mu
    Z = cp.reshape(z_vec, (n, n), order="C") + L
    lmi = Z >> 0
    constraints.append(lmi)
    return cp.Problem(cp.Maximize(objective), constraints), lambda: lmi.dual_value


def _embedding(K, eig_tol):
    """PSD part of ``(K + K^T) / 2`` and its factor ``U_r Lambda_r^{1/2}``, largest first.

    The factor keeps the eigenvalues above ``eig_tol * lambda_max`` (at least one column).
    """
    F = psd_factor(K, rtol=0.0, min_rank=1)  # every positive eigenvalue, largest first
    K_psd = F @ F.T
    K_psd = 0.5 * (K_psd + K_psd.T)
    lam = np.einsum("ij,ij->j", F, F)
    keep = lam > eig_tol * lam[0]
    keep[0] = True
    return K_psd, np.ascontiguousarray(F[:, keep])


def solve_sdp(
    problem,
    *,
    solver=None,
    max_samples=DEFAULT_MAX_SAMPLES,
    force=False,
    eig_tol=DEFAULT_EIG_TOL,
    verbose=False,
    formulation="dual",
    solver_options=None,
):
    r"""Solve the NPKL semidefinite program (3) of Hu & Kwok 2015 to global optimality.

    Minimizes ``tr(L K) + gamma * sum_k loss(T_k K_{i_k j_k})`` over ``K >= 0`` (plus
    ``K_ii <= b^2`` for the linear loss) with an interior point solver; see the module
    docstring for the primal and dual models and their measured cost.

    Parameters
    ----------
    problem : NPKLProblem
        Laplacian, constraints, loss (``hinge``, ``squared_hinge``, ``square``,
        ``linear`` or ``pcp``), ``gamma >= 0`` and, for the linear loss, ``b > 0``.
    solver : str or None, default=None
        cvxpy solver name; ``None`` picks Clarabel if installed, else SCS. Clarabel runs
        with gap and feasibility tolerances ``1e-9``, SCS with ``eps = 1e-7``.
    max_samples : int, default=DEFAULT_MAX_SAMPLES (200)
        Refuse problems with more samples unless ``force=True``.
    force : bool, default=False
        Solve even when ``n > max_samples``.
    eig_tol : float, default=DEFAULT_EIG_TOL (1e-6)
        Relative eigenvalue threshold of the embedding: eigenpairs with
        ``lambda <= eig_tol * lambda_max`` are dropped.
    verbose : bool, default=False
        Passed to ``cvxpy.Problem.solve``.
    formulation : {"dual", "primal"}, default="dual"
        Which model cvxpy solves; both give the same optimal value. ``"dual"`` is the
        sparse, much faster one.
    solver_options : dict or None, default=None
        Extra keyword arguments for ``cvxpy.Problem.solve``; they override the
        tolerances above.

    Returns
    -------
    SolverResult
        ``embedding``: ``E = U_r Lambda_r^{1/2}`` from the eigenpairs of ``K`` whose
        eigenvalues exceed ``eig_tol * lambda_max(K)``, largest first, so that
        ``E E^T ~= K`` (at least one column, zero when ``K = 0``); ``objective_history``:
        ``[problem.objective(embedding)]``, the number every NPKL solver reports (also
        ``objective``); ``time_history``: ``[solve_time]``; ``n_iter``: 1;
        ``converged``: the status is ``"optimal"``. ``info``: ``K`` (the optimal kernel:
        the solver's matrix symmetrized, with its negative eigenvalues set to zero),
        ``sdp_value`` (the optimal value reported by cvxpy for the model solved, primal (P)
        or dual (D); equal to ``objective`` up to the solver's tolerance), ``status``
        (cvxpy status, ``"optimal"`` or, with a :class:`ConvergenceWarning`,
        ``"optimal_inaccurate"`` / ``"user_limit"``), ``solver`` (cvxpy name of the
        solver used), ``solve_time`` (seconds in ``cvxpy.Problem.solve``, compilation
        included) and ``formulation``.

    Raises
    ------
    ImportError
        If cvxpy (or an SDP solver for it) is not installed: ``pip install psdlearn[sdp]``.
    ValueError
        If ``n_samples > max_samples`` and not ``force``, or ``formulation``, ``eig_tol``
        or ``solver`` is invalid (the problem itself is trusted: :class:`~psdlearn.NPKL`
        validates it).
    RuntimeError
        If the solver fails, or reports the SDP infeasible or unbounded (for example when
        ``L`` is not positive semidefinite).

    Warns
    -----
    ConvergenceWarning
        If the solver stops with a usable but non-optimal status (``optimal_inaccurate``,
        ``user_limit``).
    """
    # formulation and eig_tol are solver-only arguments: no estimator validates them
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}.")
    if not 0 <= eig_tol < 1:
        raise ValueError(f"eig_tol must be a float in [0, 1), got {eig_tol!r}.")
    n = problem.n_samples
    if n > max_samples and not force:
        raise ValueError(
            f"The exact SDP has {n} samples > max_samples={max_samples}. Its cost grows "
            f"steeply with n ({_MEASURED}). Use a low-rank solver (e.g. solver='bcd'), or "
            "pass force=True or a larger max_samples (NPKL: solver_options={'force': True} "
            "or {'max_samples': ...}) to solve it anyway."
        )
    cp = _import_cvxpy()
    name = _pick_solver(cp, solver)
    L, pairs, signs, gamma, b = _arrays(problem)
    build = _dual_model if formulation == "dual" else _primal_model
    prob, kernel = build(cp, L, pairs, signs, problem.loss, gamma, b)
    options = dict(_SOLVER_OPTIONS.get(name, {}))
    options.update(solver_options or {})

    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            # cvxpy's generic note; the status is reported below as a ConvergenceWarning
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            prob.solve(solver=name, verbose=verbose, **options)
    except cp.error.SolverError as exc:
        raise RuntimeError(f"{name} failed on the NPKL SDP ({formulation} model): {exc}") from exc
    solve_time = time.perf_counter() - start

    status = prob.status
    K = kernel()
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE, cp.USER_LIMIT) or K is None:
        hint = ""
        if status in (
            cp.INFEASIBLE,
            cp.INFEASIBLE_INACCURATE,
            cp.UNBOUNDED,
            cp.UNBOUNDED_INACCURATE,
        ):
            hint = (
                " The NPKL SDP is feasible and bounded when L is positive semidefinite "
                "(and b > 0 for the linear loss); check the Laplacian."
            )
        raise RuntimeError(
            f"{name} returned status {status!r} on the NPKL SDP ({formulation} model).{hint}"
        )
    if status != cp.OPTIMAL:
        warnings.warn(
            f"{name} stopped with status {status!r}: the SDP solution is not accurate to "
            "the requested tolerance. Loosen the tolerances through solver_options, or try "
            "another solver.",
            ConvergenceWarning,
            stacklevel=2,
        )
    K_psd, E = _embedding(np.asarray(K, dtype=np.float64), float(eig_tol))
    return SolverResult(
        embedding=E,
        objective_history=[float(problem.objective(E))],
        time_history=[solve_time],
        n_iter=1,
        converged=status == cp.OPTIMAL,
        info={"K": K_psd, "sdp_value": float(prob.value), "status": str(status),
              "solver": name, "solve_time": solve_time, "formulation": formulation},
    )


def fit_sdp(problem, E0, options):
    """The ``"sdp"`` entry of :data:`psdlearn.npkl.solvers.NPKL_SOLVERS`.

    :func:`solve_sdp` with ``max_samples = options.params["max_samples"]`` and
    ``force = options.params["force"]`` (no start, no rank: the SDP is solved over
    every ``K >= 0``), with ``info["sdp_status"]``, the cvxpy status.
    """
    res = solve_sdp(problem, max_samples=options.params["max_samples"],
                    force=options.params["force"], verbose=bool(options.verbose))
    return replace(res, info={**res.info, "sdp_status": res.status})
