"""The NPKL solver registry: a solver added by one ``register`` call runs through ``NPKL``.

The test solver is projected gradient on the convex problem over ``K >= 0``,

    K <- Pi_PSD(K - grad f(K) / Lip),   f(K) = tr(L K) + gamma sum_k l(T_k K_ij),

for the smooth losses. With ``S_k = (e_i e_j^T + e_j e_i^T) / 2`` (``<S_k, K> = K_ij``; the
``S_k`` of distinct pairs are orthogonal, ``||S_k||_F^2 = 1/2``) and ``l'' <= 2`` (square,
squared hinge), the gradient ``L + gamma sum_k T_k l'(T_k K_ij) S_k`` is ``gamma``-Lipschitz;
so is that of pcp (``2 gamma (K_ij - t) S_k`` per pair, ``gamma (K_ii - 1)`` on the
diagonal). With the step ``1 / gamma`` every step decreases ``f`` (descent lemma for the
projected step), and the iterates reach the optimum of the SDP.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import psdlearn as pl
from psdlearn._linalg import psd_factor
from psdlearn._solver import SolverResult, SolverSpec
from psdlearn.cli import _parser
from psdlearn.graph import knn_laplacian
from psdlearn.npkl.admm import solve_admm
from psdlearn.npkl.bcd import initial_embedding, solve_bcd
from psdlearn.npkl.mfpc import solve_mfpc
from psdlearn.npkl.problem import NPKLProblem
from psdlearn.npkl.simplenpkl import solve_simplenpkl
from psdlearn.npkl.solvers import NPKL_SOLVERS

SMOOTH = ("square", "squared_hinge", "pcp")


def _gradient(problem, K):
    """``grad f(K)``, dense (see the module docstring)."""
    G = problem.laplacian.toarray()
    i, j = problem.pairs[:, 0], problem.pairs[:, 1]
    T, gamma = problem.signs, problem.gamma
    if problem.loss == "pcp":
        c = 2.0 * gamma * (K[i, j] - (T > 0))
        G[np.diag_indices_from(G)] += gamma * (np.diag(K) - 1.0)
    else:
        r = 1.0 - T * K[i, j]
        c = -2.0 * gamma * T * (np.maximum(r, 0.0) if problem.loss == "squared_hinge" else r)
    np.add.at(G, (i, j), 0.5 * c)
    np.add.at(G, (j, i), 0.5 * c)
    return G


def fit_pg(problem, E0, options):
    """Projected gradient from ``K = E0 E0^T`` with the step ``1 / gamma``."""
    step = 1.0 / problem.gamma
    F = E0
    K = F @ F.T
    history, times, converged, stopped, it = [problem.objective(F)], [0.0], False, False, 0
    for it in range(1, options.max_iter + 1):
        F = psd_factor(K - step * _gradient(problem, K), rtol=0.0)
        K_new = F @ F.T
        change = np.linalg.norm(K_new - K)
        K = K_new
        history.append(problem.objective(F))
        times.append(float(it))
        if options.callback is not None and options.callback(it, F, history[-1]) is True:
            stopped = True
            break
        if change <= options.tol * np.linalg.norm(K):
            converged = True
            break
    return SolverResult(embedding=F, objective_history=history, time_history=times,
                        n_iter=it, converged=converged, interrupted=stopped,
                        info={"step": step, "change_history": [0.0] * it})


@pytest.fixture
def pg():
    spec = NPKL_SOLVERS.register(SolverSpec(
        name="pg", solve=fit_pg, losses=SMOOTH, warm_start=True, rank=False, unit="steps",
        stop_rule="the relative change of K fell below tol={tol}",
        attributes=("step", "change_history")))
    yield spec
    NPKL_SOLVERS.unregister("pg")


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(scale=2.0, size=(2, 3))[y] + rng.normal(size=(n, 3))
    return X, pl.PairwiseConstraints.from_labels(y, n_must=0.5, n_cannot=0.5, random_state=0)


@pytest.mark.parametrize("loss", SMOOTH)
def test_registered_solver_runs_through_npkl(pg, loss):
    X, C = _data()
    model = pl.NPKL(solver="pg", loss=loss, gamma=1.0, max_iter=300, tol=1e-9,
                    random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, C)
    h = np.asarray(model.objective_history_)
    assert len(h) == model.n_iter_ + 1
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h).max())  # the descent lemma
    assert h[-1] < h[0]
    assert model.objective() == pytest.approx(h[-1], rel=1e-12)
    # the info keys named in the spec became fitted attributes, generically
    assert model.step_ == 1.0 / model.gamma_
    assert model.change_history_ == [0.0] * model.n_iter_
    assert model.rank_ == model.embedding_.shape[1]


@pytest.mark.parametrize("loss", ["square", "squared_hinge"])
def test_registered_solver_agrees_with_bcd(pg, loss):
    X, C = _data(n=30, seed=1)
    kw = dict(loss=loss, gamma=1.0, tol=1e-10, random_state=0)
    bcd = pl.NPKL(solver="bcd", rank=30, max_iter=20000, **kw).fit(X, C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pgm = pl.NPKL(solver="pg", max_iter=20000, **kw).fit(X, C)
    assert pgm.objective_history_[-1] == pytest.approx(bcd.objective_history_[-1], rel=1e-5)


def test_compatibility_check_rejects_other_losses(pg):
    X, C = _data()
    with pytest.raises(ValueError, match="handles the losses"):
        pl.NPKL(solver="pg", loss="hinge").fit(X, C)
    with pytest.raises(ValueError, match="certificate"):
        pl.NPKL(solver="pg", loss="square", rank="adaptive").fit(X, C)


def test_unregistered_solver_is_rejected():
    X, C = _data()
    assert "pg" not in NPKL_SOLVERS
    with pytest.raises(ValueError, match="solver"):
        pl.NPKL(solver="pg", loss="square").fit(X, C)


def _cli_solver_choices():
    fit = _parser()._subparsers._group_actions[0].choices["fit"]
    return next(a for a in fit._actions if "--solver" in a.option_strings).choices


def test_cli_choices_are_the_registry(pg):
    assert list(_cli_solver_choices()) == list(NPKL_SOLVERS.names())
    assert "pg" in _cli_solver_choices()


# ----------------------------------------------------------- the callback's stop signal


def _problem(loss, n=40):
    X, C = _data(n)
    L = knn_laplacian(X, n_neighbors=5)
    return NPKLProblem(L, C.pairs, C.signs.astype(np.float64), loss, 1.0)


def _stop_at_two(seen):
    def callback(it, iterate, objective):
        seen.append(objective)
        return it == 2
    return callback


@pytest.mark.parametrize("solver", ["bcd", "admm", "mfpc", "simplenpkl"])
def test_callback_returning_true_stops_at_that_iteration(solver):
    loss = "square"
    problem, seen = _problem(loss), []
    E0 = initial_embedding(problem.n_samples, 5, 0)
    cb = _stop_at_two(seen)
    if solver == "bcd":
        res = solve_bcd(problem, E0, max_iter=100, tol=0.0, random_state=0, callback=cb)
    elif solver == "admm":
        res = solve_admm(problem, E0, max_iter=100, tol=0.0, callback=cb)
    elif solver == "mfpc":
        res = solve_mfpc(problem, 5, max_iter=100, tol=0.0, random_state=0, callback=cb)
    else:
        res = solve_simplenpkl(problem, B=100.0, rank=5, max_iter=100, tol=0.0,
                               random_state=0, callback=cb)
    assert res.n_iter == 2 and res.interrupted and not res.converged
    assert len(res.objective_history) == 3 and list(res.objective_history[1:]) == seen
    # the last iterate is returned: its objective is the last entry
    assert problem.objective(res.embedding) == pytest.approx(res.objective_history[-1],
                                                             rel=1e-9)
