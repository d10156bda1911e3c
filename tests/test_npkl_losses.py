"""The NPKL loss table checked against mathematics: derivatives, conjugates, cvxpy models."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

import psdlearn.npkl as npkl
from psdlearn.npkl import _kernels as K
from psdlearn.npkl.losses import LOSS_TABLE, LOSSES, get_loss
from psdlearn.npkl.problem import NPKLProblem, loss_values

KINK_GAP = 1e-3  # finite differences stay this far from a kink


def _problem(loss, n=25, m=18, seed=0, gamma=0.7):
    """Random SPD Laplacian-like matrix, distinct pairs i < j and signs."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.2, random_state=seed)
    A = A + A.T
    L = sp.csr_matrix(sp.diags(np.asarray(abs(A).sum(axis=1)).ravel() + 0.5) - A)
    seen = set()
    while len(seen) < m:
        seen.add(tuple(sorted(rng.choice(n, 2, replace=False).tolist())))
    pairs = np.array(sorted(seen), dtype=np.int64)
    signs = rng.choice([-1.0, 1.0], size=m)
    return NPKLProblem(L, pairs, signs, loss, gamma, 0.9)


def _points(loss, rng, size=200):
    """Margins ``z``, targets ``t`` and weights ``w`` of the loss's kind, away from kinks."""
    t = rng.choice([0.0, 1.0], size=size) if loss == "pcp" else np.ones(size)
    z = rng.uniform(-3.0, 3.0, size=size)
    if loss in ("hinge", "squared_hinge"):
        z = np.where(np.abs(z - t) < KINK_GAP, z + 3 * KINK_GAP, z)
    return z, t, rng.uniform(0.2, 3.0, size=size)


def _in_domain(loss, w, rng):
    """Random multipliers in the domain of the conjugate, inside it where it is an interval."""
    lo, hi = loss.domain(w)
    a = rng.uniform(-4.0, 4.0, size=w.shape)
    a = np.where(np.isfinite(lo), np.maximum(a, lo), a)
    a = np.where(np.isfinite(hi), np.minimum(a, hi), a)
    inner = (lo < hi) & np.isfinite(lo) & np.isfinite(hi)
    u = rng.uniform(0.05, 0.95, size=w.shape)
    a[inner] = lo[inner] + (hi[inner] - lo[inner]) * u[inner]
    return a


def test_table_is_the_public_loss_list():
    assert LOSSES == tuple(LOSS_TABLE) == npkl.LOSSES
    assert set(LOSSES) == {"hinge", "squared_hinge", "square", "linear", "pcp"}
    for name in LOSSES:
        assert get_loss(name).name == name
    with pytest.raises(ValueError, match="loss must be one of"):
        get_loss("logistic")


@pytest.mark.parametrize("name", LOSSES)
def test_derivative_by_finite_differences(name):
    loss, rng = get_loss(name), np.random.default_rng(1)
    z, t, _ = _points(name, rng)
    h = 1e-6
    numeric = (loss.value(z + h, t) - loss.value(z - h, t)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(z, t), numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", LOSSES)
def test_fenchel_young(name):
    """``h(a) <= w l(z) + a z`` for every ``z``, with equality at ``a = -w l'(z)``."""
    loss, rng = get_loss(name), np.random.default_rng(2)
    z, t, w = _points(name, rng)
    alpha = loss.multipliers(z, t, w)
    lo, hi = loss.domain(w)
    assert np.all(alpha >= lo - 1e-12) and np.all(alpha <= hi + 1e-12)
    np.testing.assert_allclose(loss.conjugate(alpha, t, w), w * loss.value(z, t) + alpha * z,
                               rtol=1e-12, atol=1e-12)
    a = _in_domain(loss, w, rng)
    for z_other in (rng.uniform(-5, 5, size=z.shape), z):
        assert np.all(loss.conjugate(a, t, w)
                      <= w * loss.value(z_other, t) + a * z_other + 1e-12)


@pytest.mark.parametrize("name", LOSSES)
def test_conjugate_is_the_minimum(name):
    """``h(a) = min_z w l(z) + a z`` by a scalar search, and ``h'(a)`` is its minimizer."""
    loss, rng = get_loss(name), np.random.default_rng(3)
    _, t, w = _points(name, rng, size=12)
    a = _in_domain(loss, w, rng)
    for ak, tk, wk in zip(a, t, w, strict=True):
        h = float(loss.conjugate(ak, tk, wk))
        f = lambda z, ak=ak, tk=tk, wk=wk: float(wk * loss.value(z, tk) + ak * z)  # noqa: E731
        res = minimize_scalar(f, bounds=(-20.0, 20.0), method="bounded",
                              options={"xatol": 1e-10})
        assert res.fun == pytest.approx(h, abs=1e-7)
        z_star = float(loss.conjugate_derivative(ak, tk, wk))
        if name != "linear":  # h is finite at one point only: any z attains the minimum
            assert f(z_star) == pytest.approx(h, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", LOSSES)
def test_conjugate_outside_its_domain_is_minus_infinity(name):
    """Past an end of ``dom h`` the function ``w l(z) + a z`` is unbounded below."""
    loss, rng = get_loss(name), np.random.default_rng(4)
    _, t, w = _points(name, rng, size=20)
    lo, hi = loss.domain(w)
    big = 1e6
    for end, step, z in ((lo, -1.0, big), (hi, 1.0, -big)):
        finite = np.isfinite(end)
        a = end + step
        assert np.all((w * loss.value(z, t) + a * z)[finite] < -0.5 * big)


@pytest.mark.parametrize("name", LOSSES)
def test_conjugate_derivative_and_curvature(name):
    """``h'`` by finite differences inside the domain; ``|h''| <= curvature``."""
    loss, rng = get_loss(name), np.random.default_rng(5)
    _, t, w = _points(name, rng)
    lo, hi = loss.domain(w)
    if np.array_equal(lo, hi):  # linear: a single point, nothing to differentiate
        assert np.all(loss.curvature(w) == 0)
        return
    a = _in_domain(loss, w, rng)
    d = 1e-6
    numeric = (loss.conjugate(a + d, t, w) - loss.conjugate(a - d, t, w)) / (2 * d)
    np.testing.assert_allclose(loss.conjugate_derivative(a, t, w), numeric, rtol=1e-6,
                               atol=1e-7)
    b = _in_domain(loss, w, rng)
    slope = np.abs(loss.conjugate_derivative(a, t, w) - loss.conjugate_derivative(b, t, w))
    assert np.all(slope <= loss.curvature(w) * np.abs(a - b) * (1 + 1e-12) + 1e-15)


@pytest.mark.parametrize("name", LOSSES)
def test_multipliers_of_zero_maximize_the_conjugate(name):
    """``alpha(0)``, SimpleNPKL's start, maximizes ``h`` over its domain (``z = 0`` is
    ``h'`` vanishing, or the end of the domain where ``h`` increases)."""
    loss, rng = get_loss(name), np.random.default_rng(6)
    _, t, w = _points(name, rng)
    a0 = loss.multipliers(np.zeros_like(t), t, w)
    best = loss.conjugate(a0, t, w)
    for _ in range(5):
        assert np.all(loss.conjugate(_in_domain(loss, w, rng), t, w) <= best + 1e-12)


@pytest.mark.parametrize("name", LOSSES)
def test_terms_match_the_problem_definition(name):
    """The terms reproduce eq. (10) (margin losses) and Hu & Kwok 2013 eq. (1) (pcp) on the
    dense ``K``, and ``<sum_k a_k c_k S_k, K> = sum_k a_k c_k K_ij``."""
    problem = _problem(name)
    rng = np.random.default_rng(7)
    E = rng.standard_normal((problem.n_samples, 3))
    Kd = E @ E.T
    i, j = problem.pairs.T
    smooth = float(np.trace(problem.laplacian.toarray() @ Kd))
    g = problem.gamma
    if name == "pcp":
        expected = (smooth + g * np.sum((Kd[i, j] - (problem.signs > 0)) ** 2)
                    + 0.5 * g * np.sum((np.diag(Kd) - 1.0) ** 2))
    else:
        z = problem.signs * Kd[i, j]
        ell = {"hinge": np.maximum(1 - z, 0), "squared_hinge": np.maximum(1 - z, 0) ** 2,
               "square": (1 - z) ** 2, "linear": -z}[name]
        expected = smooth + g * np.sum(ell)
        np.testing.assert_allclose(loss_values(z, name), ell, rtol=1e-15)
    assert problem.objective(E) == pytest.approx(expected, rel=1e-12)
    terms = problem.terms()
    table_sum = smooth + np.sum(terms.weights * get_loss(name).value(
        terms.coef * Kd[terms.rows, terms.cols], terms.targets))
    assert problem.objective(E) == pytest.approx(table_sum, rel=1e-12)
    a = rng.standard_normal(len(terms))
    M = terms.matrix(a).toarray()
    np.testing.assert_allclose(M, M.T)
    assert np.sum(M * Kd) == pytest.approx(np.sum(a * terms.coef * Kd[terms.rows, terms.cols]),
                                           rel=1e-12)


def test_pcp_is_not_a_margin_loss():
    with pytest.raises(ValueError, match="not a function of the margin"):
        loss_values(np.zeros(3), "pcp")


@pytest.mark.parametrize("name", [n for n in LOSSES if get_loss(n).quadratic])
def test_ordered_targets_give_the_objective(name):
    """ADMM's ordered form ``gamma / 2 sum_T (K_ij - t_ij)^2`` is the table's objective."""
    problem = _problem(name, seed=3)
    E = np.random.default_rng(8).standard_normal((problem.n_samples, 4))
    Tp, Ti, Tt = problem.ordered_targets()
    rows = np.repeat(np.arange(problem.n_samples), np.diff(Tp))
    k_ij = np.einsum("ij,ij->i", E[rows], E[Ti])
    ordered = float(np.sum(E * (problem.laplacian @ E))) + 0.5 * problem.gamma * np.sum(
        (k_ij - Tt) ** 2)
    assert problem.objective(E) == pytest.approx(ordered, rel=1e-12)


@pytest.mark.parametrize("name", [n for n in LOSSES if get_loss(n).kernel is not None])
def test_kernel_values_match_the_table(name):
    """The compiled objective of the BCD kernels computes the table's value."""
    problem = _problem(name, seed=4)
    E = np.random.default_rng(9).standard_normal((problem.n_samples, 3))
    L = problem.laplacian
    code = K.LOSS_CODES[name]
    assert code == get_loss(name).kernel
    f = K.objective(E, L.indptr.astype(np.int64), L.indices.astype(np.int64), L.data,
                    problem.pairs, problem.signs, code, problem.gamma)
    assert f == pytest.approx(problem.objective(E), rel=1e-12)


@pytest.mark.sdp
@pytest.mark.parametrize("name", LOSSES)
def test_cvxpy_expressions_equal_numpy(name):
    """The cvxpy penalty and conjugate, evaluated at a point of their domain, are the
    NumPy values, and the domain constraints hold there."""
    cp = pytest.importorskip("cvxpy")
    loss, rng = get_loss(name), np.random.default_rng(10)
    z0, t, w = _points(name, rng, size=30)
    z = cp.Variable(len(z0))
    z.value = z0
    penalty = loss.cvxpy_penalty(cp, z, t, w)
    assert float(penalty.value) == pytest.approx(float(np.sum(w * loss.value(z0, t))),
                                                 rel=1e-12)
    a0 = _in_domain(loss, w, rng)
    a = cp.Variable(len(a0))
    a.value = a0
    conj, constraints = loss.cvxpy_conjugate(cp, a, t, w)
    assert float(conj.value) == pytest.approx(float(np.sum(loss.conjugate(a0, t, w))),
                                              rel=1e-12, abs=1e-12)
    for c in constraints:
        assert c.violation().max() <= 1e-12
