"""Tests of the subspace extrapolation of the BCD sweeps (psdlearn.npkl._extrapolation)."""

from __future__ import annotations

import numpy as np
import pytest
from test_npkl_bcd import _blob_problem

from psdlearn.npkl import _kernels as K
from psdlearn.npkl._extrapolation import Extrapolation, laplacian_forms, pair_coefficients
from psdlearn.npkl.bcd import initial_embedding, solve_bcd
from psdlearn.npkl.losses import get_loss

SMOOTH_LOSSES = ("squared_hinge", "square")


def test_plane_coefficients_give_the_exact_objective_on_the_plane():
    """The graph forms and the pair coefficients reproduce tr(E^T L E) and every K_ij at
    E + b1 D1 + b2 D2 (against dense products)."""
    prob = _blob_problem(60, 3, 3, "square")
    rng = np.random.default_rng(0)
    E, P, D2 = (rng.standard_normal((60, 5)) for _ in range(3))
    L = prob.laplacian.tocsr()
    forms = laplacian_forms(E, P, D2, L.indptr.astype(np.int64), L.indices.astype(np.int64),
                            L.data)
    coef = pair_coefficients(E, P, D2, prob.pairs)
    Ld = L.toarray()
    for b1, b2 in [(0.7, -0.3), (2.0, 1.5)]:
        X = E + b1 * (E - P) + b2 * D2
        graph = (np.trace(E.T @ Ld @ E) + 2 * (b1 * forms[0] + b2 * forms[1])
                 + b1 * b1 * forms[2] + 2 * b1 * b2 * forms[3] + b2 * b2 * forms[4])
        assert graph == pytest.approx(np.trace(X.T @ Ld @ X), rel=1e-12)
        z = coef @ np.array([1, b1, b2, b1 * b1, b1 * b2, b2 * b2])
        want = np.einsum("ij,ij->i", X[prob.pairs[:, 0]], X[prob.pairs[:, 1]])
        np.testing.assert_allclose(z, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", ("hinge", *SMOOTH_LOSSES))
def test_a_search_never_raises_the_objective_and_reports_its_change(loss):
    prob = _blob_problem(80, 3, 5, loss, gamma=2.0)
    L = prob.laplacian.tocsr()
    arrays = (L.indptr.astype(np.int64), L.indices.astype(np.int64), L.data)
    code = get_loss(loss).kernel
    ex = Extrapolation(None, prob.pairs, prob.signs, code, code, 1.0, prob.gamma, window=1)
    res = solve_bcd(prob, initial_embedding(80, 6, 0), max_iter=3, tol=0, random_state=0)
    E = res.embedding
    moved = 0
    for it in range(1, 9):  # a few sweeps between searches, from different points
        E = solve_bcd(prob, E, max_iter=1, tol=0, random_state=it).embedding
        before = prob.objective(E)
        d_obj, d_sur = ex.after_sweep(it, E, *arrays)
        after = prob.objective(E)
        assert d_obj <= 0.0 and d_obj == d_sur
        assert after - before == pytest.approx(d_obj, abs=1e-9 * abs(before))
        moved += d_obj < 0
    assert moved > 0  # the test exercised real steps


@pytest.mark.parametrize("loss", ("hinge", *SMOOTH_LOSSES))
def test_extrapolated_bcd_is_monotone_and_reaches_the_plain_optimum(loss):
    """The history never rises, and at a tight tol the objective matches plain BCD
    (the hinge: its smoothed objective, whose BCD fixed points are stationary)."""
    prob = _blob_problem(120, 3, 4, loss, gamma=1.0, frac=0.2)
    E0 = initial_embedding(prob.n_samples, 8, 2)
    mu = 0.01 if loss == "hinge" else 0.0
    kw = dict(max_iter=4000, tol=1e-10, random_state=0, omega=1.5, smoothing=mu)
    plain = solve_bcd(prob, E0, **kw)
    fast = solve_bcd(prob, E0, extrapolate=3, **kw)
    assert fast.info["extrapolations"] > 0
    for res in (plain, fast):
        h = np.asarray(res.info["surrogate_history"])
        assert np.all(np.diff(h) <= 1e-10 * np.abs(h).max())
    f0, f1 = plain.info["surrogate_history"][-1], fast.info["surrogate_history"][-1]
    assert f1 == pytest.approx(f0, rel=1e-6)
    # the objective history stays the exact objective of the iterate
    assert fast.objective_history[-1] == pytest.approx(prob.objective(fast.embedding),
                                                       rel=1e-9)


def test_the_linear_loss_is_not_extrapolated():
    prob = _blob_problem(60, 3, 1, "linear")
    res = solve_bcd(prob, initial_embedding(60, 4, 0, max_norm=1.0), max_iter=30, tol=0,
                    random_state=0, extrapolate=2)
    assert res.info["extrapolations"] == 0
    assert np.linalg.norm(res.embedding, axis=1).max() <= 1.0 + 1e-12


def test_smoothed_stage_reports_the_hinge_change_apart():
    """In a smoothed stage the search lowers the smoothed objective; the change of the
    hinge objective it reports is the exact one."""
    prob = _blob_problem(80, 3, 6, "hinge", gamma=2.0)
    L = prob.laplacian.tocsr()
    arrays = (L.indptr.astype(np.int64), L.indices.astype(np.int64), L.data)
    ex = Extrapolation(None, prob.pairs, prob.signs, K.HINGE, K.SMOOTH_HINGE, 0.1, prob.gamma,
                       window=1)
    E = initial_embedding(80, 6, 0)
    for it in range(1, 7):
        E = solve_bcd(prob, E, max_iter=1, tol=0, random_state=it, smoothing=0.1).embedding
        before = prob.objective(E)
        d_obj, _ = ex.after_sweep(it, E, *arrays)
        assert prob.objective(E) - before == pytest.approx(d_obj, abs=1e-9 * abs(before))
