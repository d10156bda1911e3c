"""The certificate's deflation of ``range(E)`` without copies of the basis.

At a solution ``S E = 0``: the directions of ``range(E)`` that the dual matrix ``S``
annihilates are deflated from its eigen-solve, and the split of ``R^n`` into their span
and its complement costs ``omega = lambda_min(Q^T S Q)`` and
``eps = ||(I - Q Q^T) S Q||_2``. These are computed from ``S U`` and a column mask, never
from a copy ``Q`` of the columns: the tests check the values against the direct formulas
and the memory against the size of such a copy. The basis of ``range(E)`` comes from the
Gram matrix ``E^T E``, and the rank-descent search evaluates its objective along the ray
from quantities computed once: both against their direct forms.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from psdlearn.graph import knn_laplacian
from psdlearn.npkl.certificate import (
    _deflation_split,
    _null_basis,
    _range_basis,
    smallest_eigenpairs,
)
from psdlearn.npkl.escalation import _escalation_objective, _ray_objective
from psdlearn.npkl.problem import NPKLProblem


def _dual_like(n, r, seed=0):
    """A graph Laplacian minus a rank-3 part (``S`` away from the optimum), and an
    orthonormal ``U`` of ``r`` columns."""
    rng = np.random.default_rng(seed)
    L = knn_laplacian(rng.normal(size=(n, 2)), n_neighbors=5, delta=1e-2)
    V = np.linalg.qr(rng.standard_normal((n, 3)))[0]
    S = sp.csr_matrix(L.toarray() - V @ np.diag([0.4, 0.2, 0.1]) @ V.T)
    U = np.linalg.qr(rng.standard_normal((n, r)))[0]
    return S, U


def test_deflation_split_equals_the_direct_formulas():
    S, U = _dual_like(600, 6)
    mask = np.array([True, False, True, True, False, True])
    Q = U[:, mask]
    SQ = S @ Q
    G = Q.T @ SQ
    omega, eps = _deflation_split(U, S @ U, mask)
    assert omega == pytest.approx(np.linalg.eigvalsh(G)[0], rel=1e-12, abs=1e-14)
    assert eps == pytest.approx(np.linalg.norm(SQ - Q @ G, 2), rel=1e-10)
    assert _deflation_split(U, S @ U, np.zeros(6, dtype=bool)) == (0.0, 0.0)


def test_masked_deflation_equals_deflating_the_copied_columns():
    """``deflate_mask`` deflates ``U[:, mask]``: the same eigenvalues as the copy, and
    those of ``S + c Q Q^T`` computed densely."""
    S, U = _dual_like(500, 5, seed=1)
    mask = np.array([True, True, False, True, False])
    masked, _ = smallest_eigenpairs(S, 3, deflate=U, deflate_mask=mask, tol=1e-12)
    copied, _ = smallest_eigenpairs(S, 3, deflate=U[:, mask], tol=1e-12)
    c = float(np.max(abs(S) @ np.ones(S.shape[0])))
    Q = U[:, mask]
    dense = np.linalg.eigvalsh(S.toarray() + c * Q @ Q.T)[:3]
    assert np.allclose(masked, copied, atol=1e-9)
    assert np.all(masked <= dense + 1e-12) and np.allclose(masked, dense, atol=1e-8)


def test_null_basis_is_a_mask_of_the_annihilated_directions():
    """At ``S E = 0`` every direction of ``range(E)`` is annihilated; a direction that
    ``S`` moves is not."""
    S, _ = _dual_like(400, 1, seed=2)
    lam, vecs = np.linalg.eigh(S.toarray())
    # E in the span of eigenvectors shifted to eigenvalue 0: S' E = 0 exactly there
    E = vecs[:, :3] @ np.diag([3.0, 2.0, 1.0])
    S0 = sp.csr_matrix(S.toarray() - vecs[:, :3] @ np.diag(lam[:3]) @ vecs[:, :3].T)
    U = _range_basis(E)
    assert U.shape == (400, 3) and U.flags.c_contiguous
    assert np.all(_null_basis(S0, U))
    moved = np.column_stack([U, vecs[:, -1]])
    assert _null_basis(S0, moved).tolist() == [True, True, True, False]


def test_deflation_split_allocates_blocks_not_copies_of_the_basis():
    """The split's extra memory is a few blocks of rows: below one ``n x r`` copy (the
    former ``Q``, ``S Q``, ``Q G`` and the residual were four, and ``norm(., 2)`` a fifth)."""
    n, r = 200_000, 8
    rng = np.random.default_rng(3)
    U = rng.standard_normal((n, r))
    SU = rng.standard_normal((n, r))
    mask = np.ones(r, dtype=bool)
    tracemalloc.start()
    try:
        _deflation_split(U, SU, mask)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * n * r


def test_range_basis_is_orthonormal_and_spans_the_strong_directions_of_E():
    """The Gram-matrix basis: orthonormal to rounding, ``E`` within it up to the
    directions below the cut (singular values under ``sqrt(RANGE_RTOL)`` of the largest),
    which it leaves out; a float32 ``E`` gets the same basis."""
    rng = np.random.default_rng(4)
    n = 3000
    Q, _ = np.linalg.qr(rng.standard_normal((n, 6)))
    sv = np.array([50.0, 3.0, 1e-2, 1e-4, 1e-9, 0.0])
    E = Q @ np.diag(sv) @ np.linalg.qr(rng.standard_normal((6, 6)))[0]
    U = _range_basis(E)
    assert U.shape == (n, 4)  # 1e-9 and 0 are below sqrt(RANGE_RTOL) * 50
    assert np.abs(U.T @ U - np.eye(4)).max() < 1e-13
    # the kept directions are Q's first four: E's residual is its two dropped ones
    assert np.linalg.norm(E - U @ (U.T @ E)) < 1e-8
    assert np.allclose(np.abs(np.linalg.svd(Q[:, :4].T @ U, compute_uv=False)), 1.0,
                       atol=1e-10)
    U32 = _range_basis(E.astype(np.float32))
    assert np.abs(U32.T @ U32 - np.eye(U32.shape[1])).max() < 1e-13
    assert _range_basis(np.zeros((10, 3))).shape == (10, 0)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "square", "pcp", "linear"])
@pytest.mark.parametrize("mu", [0.0, 1e-2])
def test_ray_objective_is_the_objective_of_the_candidates(loss, mu):
    """Along ``K(s) = E E^T + s U U^T`` the searched objective, from the graph term and
    margins computed once, equals the objective of the embedding ``[E, sqrt(s) U]``
    (smoothed for the hinge at ``mu > 0``); the ball's loss has no such form (None)."""
    rng = np.random.default_rng(5)
    n = 60
    X = rng.standard_normal((n, 3))
    L = sp.csr_matrix(knn_laplacian(X, n_neighbors=5))
    pairs = np.array(sorted({tuple(sorted(p)) for p in rng.integers(0, n, (80, 2))
                             if p[0] != p[1]}), dtype=np.int64)
    signs = np.where(rng.random(len(pairs)) < 0.5, 1.0, -1.0)
    problem = NPKLProblem(L, pairs, signs, loss, 2.0, 1.0)
    terms = problem.terms()
    E = 0.3 * rng.standard_normal((n, 4))
    U = np.linalg.qr(rng.standard_normal((n, 2)))[0]
    on_ray = _ray_objective(problem, terms, E, U, mu)
    if loss == "linear":
        assert on_ray is None
        return
    full = _escalation_objective(problem, terms, mu)
    # the same from the caller's objective at E (the graph term then read off it)
    given = _ray_objective(problem, terms, E, U, mu, f0=full(E))
    for s in (0.0, 0.05, 1.0, 30.0):
        expected = full(np.hstack([E, np.sqrt(s) * U]))
        assert on_ray(s) == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert given(s) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def _rank_one_fit(loss, seed):
    """Three blobs, 200 random pairs and a rank-1 fit where the optimum needs more: its
    dual matrix has negative eigenvalues and it is not certified."""
    import psdlearn as pl

    rng = np.random.default_rng(seed)
    n = 150
    y = np.arange(n) % 3
    X = rng.normal(scale=2.0, size=(3, 2))[y] + rng.normal(size=(n, 2))
    L = sp.csr_matrix(knn_laplacian(X, n_neighbors=5))
    iu, ju = np.triu_indices(n, 1)
    pick = rng.choice(len(iu), 200, replace=False)
    pairs = np.column_stack([iu[pick], ju[pick]]).astype(np.int64)
    signs = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1.0, -1.0)
    E = pl.NPKL(loss=loss, rank=1, graph="precomputed", gamma=5.0, certificate_tol=None,
                random_state=0).fit(L, np.column_stack([pairs, signs])).embedding_
    return NPKLProblem(L, pairs, signs, loss, 5.0, 1.0), E


@pytest.mark.parametrize("loss", ["square", "hinge"])
def test_block_bound_never_beats_what_its_first_eigenpair_allows(loss, monkeypatch):
    """The ``k``-block's bound is at most ``conj + lambda_1 min(tau, f / u_1^T L u_1)``
    (:func:`_block_may_help`), so skipping the block where that neither certifies nor
    shrinks the gap much loses no certificate: here the block is forced to run, and the
    bound it reaches (the larger of it and the single eigenvalue's) stays below that
    value."""
    import psdlearn.npkl.certificate as cm

    problem, E = _rank_one_fit(loss, seed=6)
    L = problem.laplacian
    seen = []

    def forced(problem_, f, conj, lower, lam, u, tau, lmin, tol):
        w = min(tau, f * float(u @ u) / float(u @ (L @ u)))
        seen.append((f, conj + float(cm._times(min(lam, 0.0), w))))
        return True

    monkeypatch.setattr(cm, "_block_may_help", forced)
    cert = cm.certify(problem, E, laplacian_min_eig=0.01)  # delta of knn_laplacian
    assert len(seen) == 1 and not cert.certified
    f, best = seen[0]
    assert cert.lower_bound <= best + 1e-12 * abs(f)


def test_block_past_the_budget_leaves_the_smallest_eigenpairs_bound(monkeypatch):
    """Under a time budget, a ``k``-block that passes it does not skip the certificate:
    the bound of the smallest eigenpair alone (the one a skipped block gives) is
    returned, with its numbers and no note."""
    import psdlearn.npkl.certificate as cm

    problem, E = _rank_one_fit("square", seed=7)
    monkeypatch.setattr(cm, "_block_may_help", lambda *args: False)
    single = cm.certify(problem, E, laplacian_min_eig=0.01)
    real = cm.smallest_eigenpairs

    def over_in_block(S, k=1, **kw):
        if k > 1:
            raise cm._OverBudget
        return real(S, k, **kw)

    monkeypatch.setattr(cm, "_block_may_help", lambda *args: True)
    monkeypatch.setattr(cm, "smallest_eigenpairs", over_in_block)
    cut = cm.certify(problem, E, laplacian_min_eig=0.01, time_budget=1e9)
    assert cut.note == "" and np.isfinite(cut.lower_bound) and not cut.certified
    assert cut.lower_bound == pytest.approx(single.lower_bound, rel=1e-12)

    def over(S, k=1, **kw):
        raise cm._OverBudget

    monkeypatch.setattr(cm, "smallest_eigenpairs", over)  # past it in the first eigenpair
    skipped = cm.certify(problem, E, laplacian_min_eig=0.01, time_budget=1e9)
    assert skipped.note.startswith("skipped") and np.isnan(skipped.lower_bound)


def test_bound_without_an_eigenvector_still_runs_the_block(monkeypatch):
    """Where Lanczos gives no eigenvector (the Gershgorin fallback of
    ``smallest_eigenpairs``), nothing predicts the block's bound: it runs, and the
    certificate is computed."""
    import psdlearn.npkl.certificate as cm

    rng = np.random.default_rng(8)
    n = 120
    L = sp.csr_matrix(knn_laplacian(rng.standard_normal((n, 2)), n_neighbors=5))
    pairs = np.column_stack([np.arange(0, 60), np.arange(60, 120)]).astype(np.int64)
    signs = np.where(np.arange(60) % 2 == 0, 1.0, -1.0)
    problem = NPKLProblem(L, pairs, signs, "square", 5.0, 1.0)
    E = 0.1 * rng.standard_normal((n, 1))
    real = cm.smallest_eigenpairs
    ks = []

    def no_vector_alone(S, k=1, **kw):
        ks.append(k)
        if k == 1:
            return np.array([-1.0]), np.zeros((S.shape[0], 0))
        return real(S, k, **kw)

    monkeypatch.setattr(cm, "smallest_eigenpairs", no_vector_alone)
    cert = cm.certify(problem, E, laplacian_min_eig=0.01)
    assert ks == [1, cm.N_BOUND_EIG] and np.isfinite(cert.lower_bound)
