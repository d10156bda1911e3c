"""The per-point normalized-Laplacian row of NPKL's out-of-sample extension (Hu & Kwok 2015,
III-E, one new point attached to the fixed training graph)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

import psdlearn as pl
from psdlearn.graph import knn_graph, normalized_laplacian
from psdlearn.npkl._out_of_sample import harmonic_rows, normalized_rows


def _fitted(n=90, n_new=20, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), (n + n_new) // 3 + 1)[: n + n_new]
    rng.shuffle(y)
    X = rng.normal(size=(n + n_new, 4)) * 0.7 + 3.0 * np.eye(3, 4)[y]
    C = pl.PairwiseConstraints.from_labels(y[:n], random_state=seed)
    model = pl.NPKL(loss="square", knn_method="exact", random_state=seed).fit(X[:n], C)
    return model, X[:n], X[n:]


@pytest.mark.parametrize("k", [7, None])
def test_normalized_row_minimizes_the_graph_term_with_the_point_attached(k):
    """For each new point x, build the (n + 1)-point graph: the training graph plus x's
    edges to its k' nearest training points, its normalized Laplacian L', and minimize
    tr([E; e]^T L' [E; e]) over e by solving the 1-row normal equation; the closed form must
    give that e, and perturbing it must increase the term. k=None: the default
    NPKL.transform, with its own k' = n_neighbors_transform_."""
    model, X_tr, X_new = _fitted()
    n = len(X_tr)
    S, sigma = knn_graph(X_tr, n_neighbors=model.n_neighbors_, sigma=model.sigma_)
    np.testing.assert_allclose(np.asarray(S.sum(axis=1)).ravel(), model.degrees_, rtol=1e-12)
    default = k is None
    k = model.n_neighbors_transform_ if default else k
    dist, ind = NearestNeighbors(n_neighbors=k).fit(X_tr).kneighbors(X_new)
    rows = (model.transform(X_new) if default else
            normalized_rows(dist, ind, model.embedding_, model.degrees_, sigma, model.delta))
    E = model.embedding_
    for b in range(len(X_new)):
        S1 = np.zeros((n + 1, n + 1))
        S1[:n, :n] = S.toarray()
        S1[n, ind[b]] = S1[ind[b], n] = np.exp(-dist[b] ** 2 / (2 * sigma**2))
        L1 = normalized_laplacian(S1, model.delta).toarray()
        e_star = -(L1[n, :n] @ E) / L1[n, n]  # the zero of the gradient in e
        np.testing.assert_allclose(rows[b], e_star, rtol=1e-10, atol=1e-13)

        def term(e, L1=L1):
            F = np.vstack([E, e])
            return np.sum(F * (L1 @ F))

        step = np.random.default_rng(b).normal(size=E.shape[1]) * 1e-3
        assert term(rows[b] + step) > term(rows[b])
        assert term(rows[b] - step) > term(rows[b])


def test_normalized_row_is_per_point_and_scales_with_the_density():
    """Rows do not depend on the batch; scaling every weight s_j by t (a denser
    neighbourhood of x, with the same neighbours) scales the row by sqrt(t) when the
    neighbours' degrees dominate, whereas the weighted mean does not change."""
    model, X_tr, X_new = _fitted(seed=1)
    dist, ind = model.neighbor_index_.kneighbors(X_new, n_neighbors=5)
    args = (model.embedding_, model.degrees_, model.sigma_, model.delta)
    batch = normalized_rows(dist, ind, *args)
    single = np.vstack([normalized_rows(dist[i:i + 1], ind[i:i + 1], *args)
                        for i in range(len(X_new))])
    np.testing.assert_array_equal(batch, single)
    # s_j -> t s_j is d -> sqrt(d^2 - 2 sigma^2 log t)
    t = 0.25
    closer = np.sqrt(dist**2 - 2 * model.sigma_**2 * np.log(t))
    big_deg = np.full_like(model.degrees_, 1e12)
    ratio = (normalized_rows(closer, ind, model.embedding_, big_deg, model.sigma_, 0.0)
             / normalized_rows(dist, ind, model.embedding_, big_deg, model.sigma_, 0.0))
    np.testing.assert_allclose(ratio, np.sqrt(t), rtol=1e-6)
    np.testing.assert_allclose(harmonic_rows(closer, ind, model.embedding_, model.sigma_),
                               harmonic_rows(dist, ind, model.embedding_, model.sigma_),
                               rtol=1e-12, atol=1e-14)


def test_normalized_row_of_a_point_far_from_all_is_zero():
    model, _, X_new = _fitted(seed=2)
    dist, ind = model.neighbor_index_.kneighbors(X_new[:2] + 1e6, n_neighbors=5)
    rows = normalized_rows(dist, ind, model.embedding_, model.degrees_, model.sigma_,
                           model.delta)
    assert np.array_equal(rows, np.zeros_like(rows))


def test_training_row_is_the_fixed_point_of_its_own_graph_edges():
    """Why the extension of x_i is not e_i, and what holds instead. Fit to a tight tolerance; for
    an unconstrained training point i, attach it by its own edges S_ij of the training graph
    with the degrees D_jj (which already count those edges: pass D_jj - S_ij so that
    normalized_rows adds S_ij back): the normalized row is then update (13) of the fit for
    row i, and returns e_i. Through transform, x_i is its own nearest neighbour and its
    k' nearest replace its graph edges, so its row differs."""
    rng = np.random.default_rng(3)
    y = np.repeat(np.arange(3), 30)
    X = rng.normal(size=(90, 4)) * 0.7 + 3.0 * np.eye(3, 4)[y]
    C = pl.PairwiseConstraints.from_labels(y, n_must=6, n_cannot=6, random_state=0)
    model = pl.NPKL(loss="square", knn_method="exact", tol=1e-13, max_iter=100000,
                    random_state=0).fit(X, C)
    assert model.converged_
    E, sigma = model.embedding_, model.sigma_
    S, _ = knn_graph(X, n_neighbors=model.n_neighbors_, sigma=sigma)
    S = S.tocsr()
    free = np.setdiff1d(np.arange(90), C.pairs.ravel())
    assert len(free) >= 60
    scale = np.abs(E).max()
    for i in free:
        nbrs = S.indices[S.indptr[i]:S.indptr[i + 1]]
        w = S.data[S.indptr[i]:S.indptr[i + 1]]
        degrees = model.degrees_.copy()
        degrees[nbrs] -= w
        dist = np.sqrt(-2 * sigma**2 * np.log(w))
        row = normalized_rows(dist[None], nbrs[None], E, degrees, sigma, model.delta)[0]
        np.testing.assert_allclose(row, E[i], rtol=0, atol=1e-8 * scale)
    # through the extension, x_i is its own nearest neighbour and its k' nearest replace
    # its graph edges, so its row differs (transform itself returns e_i: it recognises x_i)
    through_extension = model._extend(X[free])
    assert np.abs(through_extension - E[free]).max() > 1e-3 * scale
    np.testing.assert_array_equal(model.transform(X[free]), E[free])


def test_training_rows_lookup_is_exact():
    """Matches are exact values (dense or sparse, -0.0 == 0.0); rows that a linear hash of
    the bits would confuse (signs flipped in two columns) are not matched; a duplicated
    training row answers with its smallest index."""
    from psdlearn._training_rows import TrainingRows, row_hashes

    rng = np.random.default_rng(0)
    A = rng.normal(size=(50, 6))
    A[rng.random(A.shape) < 0.4] = 0.0
    A[10] = A[3]
    lookup = TrainingRows(A)
    np.testing.assert_array_equal(row_hashes(A), row_hashes(sp.csr_matrix(A)))
    expected = np.arange(50)
    expected[10] = 3
    np.testing.assert_array_equal(lookup.match(A), expected)
    np.testing.assert_array_equal(lookup.match(sp.csr_matrix(A)), expected)
    np.testing.assert_array_equal(TrainingRows(sp.csr_matrix(A)).match(A), expected)
    B = np.array([[1.0, 1.0, 0, 0, 0, 0], [-1.0, -1.0, 0, 0, 0, 0]])
    pair = TrainingRows(B[:1])
    np.testing.assert_array_equal(pair.match(B), [0, -1])
    np.testing.assert_array_equal(pair.match(-0.0 * B[:1] + B[:1]), [0])
    np.testing.assert_array_equal(lookup.match(A[:, :5]), np.full(50, -1))


def test_transform_neighbourhood_is_chosen_on_first_use_from_the_fit(monkeypatch):
    """fit does not run the leave-one-out search of n_neighbors_transform_; the first new
    point does, once, and gets the k' of the fit's sample and embedding (the same as the
    search run eagerly), also after partial_fit has moved the embedding and after a
    pickle round trip."""
    import pickle

    from psdlearn._exact_knn import value_order
    from psdlearn.npkl import _out_of_sample, estimator

    calls = []
    real = _out_of_sample.select_n_neighbors

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(estimator, "select_n_neighbors", counting)
    model, X_tr, X_new = _fitted(seed=3)
    assert calls == []
    model.transform(X_tr)  # training rows: looked up, no search
    assert calls == []
    eager = real(model.neighbor_index_, model.X_fit_, model.embedding_, model.sigma_,
                 model.n_neighbors_, 3, order=None,
                 rows=_out_of_sample.loo_sample(len(X_tr), 3, order=value_order(X_tr)))
    twin = pickle.loads(pickle.dumps(model))
    model.transform(X_new)
    model.transform(X_new)
    assert calls == [1]
    assert model.n_neighbors_transform_ == eager == twin.n_neighbors_transform_
    # partial_fit keeps the choice of the fit, made on the fit's embedding
    refit, _, _ = _fitted(seed=3)
    before = refit.embedding_.copy()
    near = np.argsort(((X_tr - X_tr[0]) ** 2).sum(axis=1))[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pair already given is merged with a warning
        refit.partial_fit(X_tr, np.array([[0, near, 1]]))
    assert not np.allclose(refit.embedding_, before)
    assert refit.n_neighbors_transform_ == eager
