"""The rounds of ``NPKL(rank="adaptive")``: the hinge's escalation on its smoothed problem,
intermediate (loose) rounds, and a final round that is always solved to ``tol``.

The escalation of a kinked loss follows the eigenvectors of ``S(a_mu)``, the gradient of
the Huber-smoothed objective: it must descend at the rate ``u^T S(a_mu) u``. An
intermediate round stops early and is bounded cheaply; the certificate the fit reports
must still be that of a point solved to ``tol``, and valid against the SDP optimum.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("cvxpy")

from test_npkl_certificate import DELTA, make_problem  # noqa: E402

import psdlearn as pl  # noqa: E402
from psdlearn.npkl import bcd  # noqa: E402
from psdlearn.npkl.certificate import certify, dual_matrix  # noqa: E402
from psdlearn.npkl.escalation import (  # noqa: E402
    HINGE_ESCALATION_SMOOTHING,
    AdaptiveRound,
    _smoothed_objective,
    certify_and_escalate,
    escalate,
    smoothed_multipliers,
)
from psdlearn.npkl.sdp import solve_sdp  # noqa: E402

pytestmark = pytest.mark.sdp

MU = HINGE_ESCALATION_SMOOTHING


def _fit(problem, rank, **kw):
    y = np.column_stack([problem.pairs, problem.signs.astype(int)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pl.NPKL(loss=problem.loss, rank=rank, graph="precomputed", gamma=problem.gamma,
                       random_state=0, **{"tol": 1e-8, "max_iter": 5000, **kw}).fit(
            problem.laplacian, y)


@pytest.fixture(scope="module")
def hinge():
    problem = make_problem("hinge")
    return problem, solve_sdp(problem).objective


def test_smoothed_multipliers_give_the_gradient_of_the_smoothed_objective(hinge):
    """``S(a_mu)`` is the gradient of ``f_mu``: ``<S, v v^T>`` by finite differences."""
    problem, _ = hinge
    terms = problem.terms()
    rng = np.random.default_rng(5)
    for scale in (0.3, 1.0):
        E = scale * rng.standard_normal((problem.n_samples, 3))
        for mu in (MU, 0.1):
            a, _ = smoothed_multipliers(terms, E, mu)
            assert np.all((a >= 0) & (a <= problem.gamma))
            S, _ = dual_matrix(problem, E, a)
            v = rng.standard_normal(problem.n_samples)
            eps = 1e-7
            fd = (_smoothed_objective(problem, terms, np.column_stack([E, np.sqrt(eps) * v]),
                                      mu) - _smoothed_objective(problem, terms, E, mu)) / eps
            assert fd == pytest.approx(float(v @ (S @ v)), rel=1e-3, abs=1e-6)


def test_hinge_escalation_descends_at_rate_lambda_min(hinge):
    """At a rank-1 fit of the smoothed problem the most negative eigenvector of ``S(a_mu)``
    descends ``f_mu`` at the rate of its eigenvalue, and the round's escalation step
    decreases ``f_mu`` (the objective the next BCD stage minimizes)."""
    problem, _ = hinge
    terms = problem.terms()
    E = bcd.solve_bcd(problem, bcd.initial_embedding(problem.n_samples, 1, 0), tol=1e-9,
                      max_iter=5000, smoothing=MU, random_state=0).embedding
    a, _ = smoothed_multipliers(terms, E, MU)
    cert, values, vectors = certify(problem, E, a, laplacian_min_eig=DELTA, n_eig=2,
                                    return_eigenvectors=True)
    assert values[0] < 0 and not cert.certified
    f0 = _smoothed_objective(problem, terms, E, MU)
    s = 1e-7
    fd = (_smoothed_objective(problem, terms, np.hstack([E, np.sqrt(s) * vectors[:, :1]]), MU)
          - f0) / s
    assert fd == pytest.approx(values[0], rel=1e-2, abs=1e-5)
    E_new, step = escalate(problem, E, values, vectors, MU)
    assert step > 0 and _smoothed_objective(problem, terms, E_new, MU) < f0
    _, E_round = certify_and_escalate(problem, E, None, tol=1e-4, laplacian_min_eig=DELTA,
                                      n_eig=4, intermediate=True)
    assert E_round is not None and E_round.shape[1] > 1
    assert _smoothed_objective(problem, terms, E_round, MU) < f0


def test_final_round_of_a_kinked_loss_does_not_escalate(hinge):
    problem, _ = hinge
    E = _fit(problem, 1).embedding_
    cert, E_new = certify_and_escalate(problem, E, None, tol=1e-4, laplacian_min_eig=DELTA,
                                       n_eig=4)
    assert not cert.certified and E_new is None


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "square", "linear"])
def test_cheap_bound_is_valid_and_looser(loss):
    """``refine=False`` (intermediate rounds): still a lower bound of ``f*``, never above
    the refined one."""
    problem = make_problem(loss)
    f_star = solve_sdp(problem).objective
    rng = np.random.default_rng(6)
    E = 0.5 * rng.standard_normal((problem.n_samples, 2))
    if loss == "linear":
        norms = np.linalg.norm(E, axis=1)
        E[norms > 1] /= norms[norms > 1, None]
    full = certify(problem, E, laplacian_min_eig=DELTA, n_eig=4)
    cheap = certify(problem, E, laplacian_min_eig=DELTA, n_eig=4, refine=False)
    assert cheap.lower_bound <= f_star + 1e-7 * abs(f_star)
    assert cheap.lower_bound <= full.lower_bound + 1e-9 * abs(f_star)
    assert cheap.gap_bound >= problem.objective(E) - f_star - 1e-7 * abs(f_star)


def test_round_stages_of_the_smoothing_schedule():
    hinge = [1e-1, 1e-2, 1e-3, 1e-4, 0.0]
    assert AdaptiveRound(smoothing=1e-3).stages(hinge) == [1e-1, 1e-2, 1e-3]
    assert AdaptiveRound(smoothing=1e-1).stages(hinge) == [1e-1]
    assert AdaptiveRound(start="restart", smoothing=1e-3).stages(hinge) == [1e-3]
    assert AdaptiveRound(start="continue", smoothing=1e-2, previous=1e-1).stages(hinge) == [1e-2]
    final = AdaptiveRound(start="continue", intermediate=False, smoothing=1e-3, previous=1e-3)
    assert final.stages(hinge) == [1e-4, 0.0]
    assert AdaptiveRound(start="warm", intermediate=False).stages(hinge) == hinge
    for start in ("random", "restart", "continue"):  # a smooth loss: the exact stage
        assert AdaptiveRound(start=start).stages([0.0]) == [0.0]
    # no smoothed stage at or above mu: the whole schedule, a continuation its last stage
    assert AdaptiveRound(smoothing=1e-3).stages([1e-4, 0.0]) == [1e-4, 0.0]
    assert AdaptiveRound(start="continue", smoothing=1e-3).stages([1e-4, 0.0]) == [0.0]


def test_round_sequence_over_the_levels():
    """Escalate at a level while it descends; then the next (finer) level; after the last
    one a final round; a final round ends the fit (its escalation restarts the levels'
    last one)."""
    levels = (1e-1, 1e-3)
    first = AdaptiveRound(smoothing=1e-1)
    assert first.after(True, levels) == AdaptiveRound(start="restart", smoothing=1e-1)
    nxt = first.after(False, levels, warm="w")
    assert nxt == AdaptiveRound(start="continue", smoothing=1e-3, previous=1e-1, warm="w")
    last = nxt.after(False, levels)
    assert not last.intermediate and last.start == "continue" and last.previous == 1e-3
    assert last.after(False, levels) is None
    assert last.after(True, levels) == AdaptiveRound(start="restart", smoothing=1e-3)
    smooth = AdaptiveRound().after(False, ())
    assert not smooth.intermediate and smooth.stages([0.0]) == [0.0]


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "square", "linear"])
def test_intermediate_rounds_never_end_in_a_false_certificate(loss, monkeypatch):
    """Every solve of an intermediate round stops at the loose tolerance; the fit ends with
    a solve at ``tol`` whose certificate is the reported one, valid against cvxpy."""
    problem = make_problem(loss)
    f_star = solve_sdp(problem).objective
    calls = []
    solve = bcd.solve_bcd

    def recording(problem, E0, **kw):
        res = solve(problem, E0, **kw)
        calls.append((kw["tol"], kw["smoothing"], res.embedding.shape[1]))
        return res

    monkeypatch.setattr(bcd, "solve_bcd", recording)
    tol = 1e-8
    model = _fit(problem, "adaptive", rank_init=1, tol=tol)
    if loss == "hinge":  # intermediate rounds end at the smoothed stage that sets the rank
        exact = [c for c in calls if c[1] == 0]
        assert exact == calls[-1:] and any(c[1] == MU for c in calls[:-2])
    else:
        loose = [c for c in calls if c[0] > tol]
        assert loose and all(t == pytest.approx(bcd.INTERMEDIATE_TOL_FACTOR * tol)
                             for t, _, _ in loose)
    assert calls[-1][:2] == (tol, 0.0) and calls[-1][2] == model.rank_
    # the final round is a continuation at the last rank: one more certificate there
    assert model.rank_path_[-1][0] == model.rank_path_[-2][0] == model.rank_
    cert = model.certificate_
    f = problem.objective(model.embedding_)
    assert cert.objective == pytest.approx(f, rel=1e-12)
    assert cert.gap_bound >= f - f_star - 1e-7 * abs(f_star)
    assert (f - f_star) / abs(f_star) <= 1e-4
    if cert.certified:
        assert (f - f_star) / abs(f_star) <= cert.tol


def test_admm_intermediate_round_is_loose_and_final_continues(monkeypatch):
    from psdlearn.npkl import admm

    problem = make_problem("square")
    f_star = solve_sdp(problem).objective
    calls = []
    solve = admm.solve_admm

    def recording(problem, V0, U0=None, lam0=None, **kw):
        calls.append((kw["tol"], U0 is not None, V0.shape[1]))
        return solve(problem, V0, U0, lam0, **kw)

    monkeypatch.setattr(admm, "solve_admm", recording)
    model = _fit(problem, "adaptive", solver="admm", rank_init=1)
    assert calls[0] == (admm.INTERMEDIATE_TOL_FACTOR * 1e-8, False, 1)
    # the final round continues from the intermediate round's (U, Lambda, rho)
    assert calls[-1] == (1e-8, True, model.rank_)
    assert model.certificate_.certified
    assert (problem.objective(model.embedding_) - f_star) / f_star <= 1e-4


def test_plateau_stops_at_the_first_flat_window():
    """``plateau_tol``: BCD stops at the first multiple ``t`` of ``REFRESH`` where the
    last ``REFRESH`` sweeps lowered the (exactly evaluated) objective by less than
    ``plateau_tol |f_t|``, on the same path as the run without it."""
    problem = make_problem("hinge")
    E0 = bcd.initial_embedding(problem.n_samples, 3, 0)
    plateau, R = 1e-5, bcd.REFRESH
    kw = {"max_iter": 40 * R, "tol": 1e-15, "random_state": 0, "parallel": False}
    full = bcd.solve_bcd(problem, E0, **kw)
    res = bcd.solve_bcd(problem, E0, plateau_tol=plateau, **kw)
    t = res.n_iter
    assert res.converged and t % R == 0 and t < full.n_iter
    h = np.asarray(full.info["surrogate_history"])
    np.testing.assert_allclose(res.objective_history, full.objective_history[:t + 1],
                               rtol=1e-12)
    assert res.objective_history[-1] == pytest.approx(problem.objective(res.embedding),
                                                      rel=1e-12)
    flat = [k for k in range(R, len(h), R) if h[k - R] - h[k] < plateau * abs(h[k])]
    assert flat and flat[0] == t


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_only_the_final_exact_hinge_stage_stops_on_a_plateau(loss, monkeypatch):
    """The final round of ``rank="adaptive"`` on the hinge stops its exact stage on a
    plateau of ``FINAL_PLATEAU_FACTOR * certificate_tol``; every other solve (smoothed
    stages, intermediate rounds, smooth losses) keeps the step test alone, and the fit
    still reaches the SDP optimum."""
    problem = make_problem(loss)
    f_star = solve_sdp(problem).objective
    calls = []
    solve = bcd.solve_bcd

    def recording(problem, E0, **kw):
        calls.append((kw["smoothing"], kw["tol"], kw.get("plateau_tol")))
        return solve(problem, E0, **kw)

    monkeypatch.setattr(bcd, "solve_bcd", recording)
    model = _fit(problem, "adaptive", rank_init=1, certificate_tol=1e-4)
    plateaus = [c for c in calls if c[2] is not None]
    if loss == "hinge":
        assert plateaus == calls[-1:] == [(0.0, 1e-8, bcd.FINAL_PLATEAU_FACTOR * 1e-4)]
    else:
        assert plateaus == []
    f = problem.objective(model.embedding_)
    assert (f - f_star) / abs(f_star) <= 1e-4
    assert model.certificate_.gap_bound >= f - f_star - 1e-7 * abs(f_star)
