r"""Rank escalation and the rounds of ``NPKL(rank="adaptive")``.

Every round's fit is bounded by :func:`psdlearn.npkl.certificate.certify` (the duality
certificate; its module docstring has the dual matrix ``S`` and the bound); this module
grows ``E`` along the eigenvectors of the negative eigenvalues of ``S``.

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
again). The hinge's final round never escalates, and its exact BCD stage also stops on an
objective plateau (``psdlearn.npkl.bcd.FINAL_PLATEAU_FACTOR``). ``certificate_`` is
always that of the last, final round: every bound is valid at any ``E``, so a loose stage
can make the certificate looser, never false.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from .certificate import (
    CHEAP_EIG_TOL,
    _kinked,
    _null_basis,
    _range_basis,
    certify,
    dual_matrix,
    smallest_eigenpairs,
)
from .problem import graph_term

__all__ = ["AdaptiveRound", "certify_and_escalate", "escalate", "escalation_levels",
           "rank_descent", "smoothed_multipliers"]

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



def smoothed_multipliers(terms, E, mu):
    """Multipliers ``a_mu`` of the Moreau envelopes of kinked terms, and the margins ``z``.

    From the conjugate: ``w l_mu(z) = max_{a in [lo, hi]} h(a) - a z - mu a^2 / (2 w)``;
    ``h`` is linear (slope ``h'``), so the maximizer is ``a = clip(w (h' - z) / mu, lo,
    hi)``, which is also ``-w l_mu'(z)``: ``S(a_mu)`` is the gradient of the smoothed
    objective at ``K = E E^T`` (hinge: ``clip(gamma (1 - z) / mu, 0, gamma)``).
    """
    z = terms.margins(E)
    return _envelope_multipliers(terms, z, mu), z


def _envelope_multipliers(terms, z, mu):
    """``a_mu`` of :func:`smoothed_multipliers` at the margins ``z``."""
    loss, t, w = terms.loss, terms.targets, terms.weights
    lo, hi = loss.domain(w)
    return np.clip(w * (loss.conjugate_derivative(lo, t, w) - z) / mu, lo, hi)


def _penalty(terms, z, mu):
    """The loss term at the margins ``z``: ``sum_k w_k l(z_k; t_k)``, or with ``mu > 0``
    each kinked term replaced by its Moreau envelope (Huber smoothing), ``w l_mu(z) = h(a)
    - a z - mu a^2 / (2 w)`` at ``a`` of :func:`smoothed_multipliers`; for the hinge ``w (u
    - mu / 2)`` for ``u = t - z > mu``, ``w u^2 / (2 mu)`` on ``[0, mu]``, 0 below."""
    t, w = terms.targets, terms.weights
    if not mu:
        return float(w @ terms.loss.value(z, t)) if len(terms) else 0.0
    a = _envelope_multipliers(terms, z, mu)
    return float(np.sum(terms.loss.conjugate(a, t, w) - a * z - mu * a * a / (2.0 * w)))


def _smoothed_objective(problem, terms, E, mu):
    """Objective with each kinked term replaced by its Moreau envelope (:func:`_penalty`)."""
    return graph_term(E, problem.laplacian) + _penalty(terms, terms.margins(E), mu)


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
        which BCD then continues from (the exact objective at 0).

    Returns
    -------
    E_new : ndarray of shape (n_samples, rank + p)
    step : float
        The chosen ``s`` (0 when no eigenvalue is negative or the ray does not descend).
    """
    candidate, s, _, _ = _ray_search(problem, E, values, vectors, smoothing)
    return candidate(s), s


def _ray_search(problem, E, values, vectors, smoothing, f0=None):
    """The scalar search of :func:`escalate`: ``(candidate, s, f0, f_s)``, with
    ``candidate(s)`` the embedding at ``s``, ``f0`` the searched objective at ``E`` (the
    caller's when it has it) and ``f_s`` at the chosen ``s`` (``s = 0`` and ``f_s = f0``
    when the ray does not descend; ``s = 0`` and ``f0 = f_s = None`` when no eigenvalue is
    negative)."""
    E = np.asarray(E, dtype=np.float64)
    values = np.asarray(values)[: vectors.shape[1]]  # no vectors after a Lanczos failure
    U = vectors[:, values < 0]
    if U.shape[1] == 0:
        return (lambda s: E), 0.0, None, None
    terms = problem.terms()
    radius = float(problem.b) if terms.loss.bounded else None

    def candidate(s):
        out = np.hstack([E, np.sqrt(max(s, 0.0)) * U])
        if radius is not None:
            norms = np.linalg.norm(out, axis=1)
            over = norms > radius
            out[over] *= (radius / norms[over])[:, None]
        return out

    on_ray = _ray_objective(problem, terms, E, U, smoothing, f0)
    if on_ray is None:  # the ball's projection: the objective of each candidate
        objective = _escalation_objective(problem, terms, smoothing)

        def on_ray(s):
            return objective(candidate(s))

    f0 = on_ray(0.0)
    scale = max(float(np.einsum("ij,ij->", E, E)) / max(E.shape[1], 1), 1.0)
    hi = scale
    # grow the bracket while the objective still decreases at its right end
    while hi < 1e6 * scale and on_ray(2 * hi) < on_ray(hi):
        hi *= 2.0
    res = minimize_scalar(on_ray, bounds=(0.0, 2 * hi), method="bounded",
                          options={"xatol": 1e-6 * hi})
    if res.fun >= f0:  # res.fun: the objective at res.x
        return candidate, 0.0, f0, f0
    return candidate, float(res.x), f0, float(res.fun)


def _ray_objective(problem, terms, E, U, smoothing, f0=None):
    """The searched objective along ``K(s) = E E^T + s U U^T`` as a function of ``s``, in
    ``O(m)`` a call: its graph term is ``tr(E^T L E) + s tr(U^T L U)`` and its margins
    ``z(s) = z_E + s z_U``, each computed once (``tr(E^T L E)`` as ``f0`` minus the loss
    term when the searched objective at ``E`` is given). None for the ball-constrained
    loss, whose candidates have their long rows scaled back (not linear in ``s``)."""
    if terms.loss.bounded:
        return None
    mu = smoothing if _kinked(terms) else 0.0
    z_E, z_U = terms.margins(E), terms.margins(U)
    graph_E = (graph_term(E, problem.laplacian) if f0 is None
               else f0 - _penalty(terms, z_E, mu))
    graph_U = graph_term(U, problem.laplacian)
    return lambda s: graph_E + s * graph_U + _penalty(terms, z_E + s * z_U, mu)


def rank_descent(problem, E, values, vectors, objective=None):
    """The relative decrease of the objective along the given eigenvectors.

    ``(f(E) - f(E_new)) / |f(E)|`` with ``E_new`` of :func:`escalate` on ``f`` itself (the
    exact hinge too: a scalar search needs no derivative), 0 when the ray does not
    descend: what one more column in that direction is worth to the problem that was
    solved. ``Certificate.rank_descent`` (the most negative eigenvector) tells the advice
    of an uncertified fit whether the rank is what is missing. ``objective``: ``f(E)``
    when the caller has it (the certificate does), which spares one pass over ``L``.
    """
    _, step, f0, f_step = _ray_search(problem, E, values, vectors, smoothing=0.0,
                                      f0=objective)
    if step <= 0:
        return 0.0
    return max(f0 - f_step, 0.0) / max(abs(f0), np.finfo(float).tiny)


def _escalation_objective(problem, terms, smoothing):
    """The objective whose descent :func:`escalate` seeks: ``f``, or for a kinked loss (the
    hinge, not differentiable along ``u u^T`` at a kink) its ``C^1`` Huber smoothing at
    ``smoothing`` (``f`` itself at 0)."""
    if not _kinked(terms) or not smoothing:
        return problem.objective
    return lambda E: _smoothed_objective(problem, terms, E, smoothing)


#: ``rank="adaptive"`` escalates only when the new columns decrease the objective by more
#: than this fraction of ``certificate_tol`` (relative).
ESCALATION_MIN_DECREASE = 1e-2


def certify_and_escalate(problem, E, multipliers, *, tol, laplacian_min_eig, n_eig,
                         intermediate=False, smoothing=HINGE_ESCALATION_SMOOTHING,
                         time_budget=None):
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
    time_budget : float, optional
        Seconds the certificate may take (:func:`certify`).

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
    # an intermediate round's cheap bound needs one eigenpair (the k-block below if needed);
    # a kinked loss's final round never escalates: the bound's own block is enough
    cert, values, vectors = certify(problem, E, multipliers, tol=tol,
                                    laplacian_min_eig=laplacian_min_eig,
                                    n_eig=1 if intermediate or kinked else max(n_eig, 1),
                                    return_eigenvectors=True, refine=not intermediate,
                                    time_budget=time_budget)
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
        basis = _range_basis(E)
        values, vectors = smallest_eigenpairs(S, n_eig, deflate=basis,
                                              deflate_mask=_null_basis(S, basis),
                                              tol=CHEAP_EIG_TOL)
    E_new, step = escalate(problem, E, values[:n_eig], vectors[:, :n_eig], smoothing)
    if descends(E_new, step):
        # every negative eigenvector that descends with one common step: the solver
        # then grows the new columns (the common step is set by the most curved one, so
        # it can buy a little less than the single column; the rank grows faster)
        return cert, E_new
    return cert, (E_one if intermediate else None)
