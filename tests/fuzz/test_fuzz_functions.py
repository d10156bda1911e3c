"""Property-based tests of the public functions: graphs (``psdlearn.graph``), metrics
(``psdlearn.metrics``), model selection (``ConstraintKFold``, ``select_gamma``), the query
strategies (``psdlearn.active``) and the data generators (``psdlearn.datasets.make_*``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from _fuzz import Rejected, call, fuzz_settings, matrices, pair_rows, partial_labels
from hypothesis import given
from hypothesis import strategies as st

import psdlearn as pl
from psdlearn import active, graph, metrics, model_selection

K = st.sampled_from([1, 2, 3, 5, 0, -1, 2.5, None])


def _rows(X):
    return len(X) if isinstance(X, list) else X.shape[0]


@fuzz_settings(2.0)
@given(data=st.data())
def test_knn_graph_and_laplacian(data):
    X = data.draw(matrices(max_rows=14), label="X")
    k = data.draw(K, label="n_neighbors")
    sigma = data.draw(st.sampled_from(["auto", 1.0, 0.0, -1.0, np.nan, "x"]), label="sigma")
    try:
        S, width = call(graph.knn_graph, X, n_neighbors=k, sigma=sigma, knn_method="exact")
    except Rejected:
        return
    n = _rows(X)
    assert np.isfinite(width) and width > 0
    assert sp.issparse(S) and S.shape == (n, n)
    assert np.all(np.isfinite(S.data)) and np.all(S.data >= 0)
    assert abs(S - S.T).max() <= 1e-12 if n else True
    L = call(graph.knn_laplacian, X, n_neighbors=k, sigma=sigma, knn_method="exact")
    assert L.shape == (n, n) and np.all(np.isfinite(L.data))
    if n:
        assert np.linalg.eigvalsh(L.toarray()).min() > 0  # (1 + delta) I - normalized S


@fuzz_settings(2.0)
@given(data=st.data())
def test_normalized_laplacian_and_sigma_rule(data):
    S = data.draw(matrices(max_rows=6, min_cols=0, max_cols=6, sparse=True), label="S")
    delta = data.draw(st.sampled_from([1e-4, 0.0, -1.0, np.inf]), label="delta")
    try:
        L = call(graph.normalized_laplacian, S, delta=delta)
    except Rejected:
        pass
    else:
        assert L.shape[0] == L.shape[1] and np.all(np.isfinite(L.toarray()
                                                               if sp.issparse(L) else L))
    D = data.draw(matrices(max_rows=6, max_cols=4, sparse=False), label="distances")
    try:
        sigma = call(graph.sigma_rule, np.asarray(D, dtype=float)
                     if not isinstance(D, list) else D)
    except Rejected:
        return
    assert np.isfinite(sigma) and sigma > 0


@fuzz_settings(2.0)
@given(data=st.data())
def test_neighbor_index(data):
    X = data.draw(matrices(max_rows=12), label="X")
    k = data.draw(K, label="n_neighbors")
    try:
        index = call(graph.NeighborIndex("exact").fit, X)
        dist, ind = call(index.kneighbors, n_neighbors=k)
    except Rejected:
        return
    n = _rows(X)
    assert dist.shape == ind.shape and dist.shape[0] == n
    assert np.all(np.isfinite(dist)) and np.all((ind >= 0) & (ind < n))
    assert np.all(ind != np.arange(n)[:, None])


@fuzz_settings(2.0)
@given(data=st.data())
def test_metrics(data):
    n = data.draw(st.integers(0, 12), label="n")
    y = data.draw(partial_labels(n), label="y_true")
    y_pred = data.draw(partial_labels(n), label="y_pred")
    try:
        r = call(metrics.pairwise_accuracy, y, y_pred)
    except Rejected:
        pass
    else:
        assert 0.0 <= r <= 1.0
    Z = data.draw(matrices(min_rows=n, max_rows=n, sparse=False), label="Z")
    try:
        J = call(metrics.class_separation, Z, y, random_state=0)
    except Rejected:
        pass
    else:
        assert J >= 0  # inf when every class collapses to a point
    K1 = data.draw(matrices(min_rows=n, max_rows=n, min_cols=n, max_cols=n, sparse=False),
                   label="K1")
    K2 = data.draw(matrices(min_rows=n, max_rows=n, min_cols=n, max_cols=n, sparse=False),
                   label="K2")
    try:
        a = call(metrics.centered_alignment, K1, K2)
    except Rejected:
        return
    assert -1 - 1e-9 <= a <= 1 + 1e-9


@fuzz_settings(2.0)
@given(data=st.data())
def test_constraint_kfold_and_select_gamma(data):
    n = data.draw(st.integers(0, 12), label="n")
    rows = data.draw(pair_rows(n), label="pairs")
    n_splits = data.draw(st.sampled_from([2, 3, 1, 2.0]), label="n_splits")
    groups = data.draw(st.sampled_from(["pairs", "components"]), label="groups")
    try:
        cv = call(pl.ConstraintKFold, n_splits, shuffle=True, random_state=0, groups=groups)
        folds = call(lambda X: list(cv.split(X)), rows)
    except Rejected:
        pass
    else:
        tests = np.concatenate([t for _, t in folds]) if folds else np.empty(0, int)
        assert len(folds) == n_splits
        assert np.array_equal(np.sort(tests), np.unique(tests))
        for train, test in folds:
            assert np.intersect1d(train, test).size == 0
    scores = data.draw(matrices(max_rows=5, max_cols=4, sparse=False), label="scores")
    rule = data.draw(st.sampled_from(["best", "one_se", "x"]), label="rule")
    try:
        i = call(model_selection.select_gamma, scores, rule=rule)
    except Rejected:
        return
    assert 0 <= i < _rows(scores)


STRATEGIES = {
    "random": lambda: active.RandomPairs(),
    "explore": lambda: active.ExploreConsolidate(2),
    "minmax": lambda: active.MinMax(2),
    "uncertainty": lambda: active.KernelUncertainty(2, n_candidates=50),
}


@fuzz_settings(2.0)
@given(data=st.data())
def test_query_strategies(data):
    X = data.draw(matrices(max_rows=12, sparse=False), label="X")
    n = _rows(X)
    rows = data.draw(st.one_of(st.none(), pair_rows(n)), label="constraints")
    n_pairs = data.draw(st.sampled_from([1, 3, 0, -1, 100]), label="n_pairs")
    name = data.draw(st.sampled_from(sorted(STRATEGIES)), label="strategy")
    try:
        pairs = call(STRATEGIES[name]().select, X, rows, n_pairs, random_state=0)
    except Rejected:
        return
    assert pairs.ndim == 2 and pairs.shape[1] == 2 and len(pairs) <= n_pairs
    assert np.all(pairs[:, 0] < pairs[:, 1]) and np.all((pairs >= 0) & (pairs < n))
    asked = {tuple(sorted(p)) for p in np.asarray(rows).reshape(-1, 3)[:, :2].tolist()} \
        if rows is not None else set()
    assert not asked & {tuple(p) for p in pairs.tolist()}


@fuzz_settings(1.0)
@given(data=st.data())
def test_label_oracle_and_active_learning(data):
    n = data.draw(st.integers(4, 12), label="n")
    y = data.draw(partial_labels(n), label="y")
    budget = data.draw(st.sampled_from([0, 2, 5, -1]), label="budget")
    strategy = data.draw(st.sampled_from(["random", "explore_consolidate", "min_max"]),
                         label="strategy")
    X = np.random.default_rng(0).normal(size=(n, 2))
    try:
        oracle = call(active.LabelOracle, y, random_state=0)
        # the oracle counts its answers: passed outside the unchanged-input check
        result = call(lambda X, strategy, budget: active.active_learning(
            pl.RCA(), X, oracle, strategy=strategy, budget=budget, batch_size=2,
            random_state=0), X, strategy, budget)
    except Rejected:
        return
    assert result.constraints.n_pairs <= max(budget, 0)
    assert oracle.n_queries_ == result.constraints.n_pairs


GENERATORS = {
    "two_gaussians": lambda n, r: pl.datasets.make_two_gaussians(n, 3, random_state=r),
    "xor": lambda n, r: pl.datasets.make_xor(n, random_state=r),
    "chessboard": lambda n, r: pl.datasets.make_chessboard(n, random_state=r),
    "double_spiral": lambda n, r: pl.datasets.make_double_spiral(n, random_state=r),
    "triplet_synthetic": lambda n, r: pl.datasets.make_triplet_synthetic(
        n, 6, random_state=r),
}


@fuzz_settings(2.0)
@given(name=st.sampled_from(sorted(GENERATORS)),
       n=st.sampled_from([0, 1, 2, 3, 7, 30, -1, 2.5]), seed=st.integers(0, 3))
def test_generators(name, n, seed):
    try:
        X, y = call(GENERATORS[name], n, seed)
    except Rejected:
        return
    assert X.dtype == np.float64 and X.ndim == 2 and X.shape[0] == n == len(y)
    assert np.all(np.isfinite(X)) and y.dtype.kind == "i"
