"""Active query selection (psdlearn.active): strategies, oracles and the query loop."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import rand_score

import psdlearn as pl
from psdlearn.active import (
    STRATEGIES,
    ExploreConsolidate,
    KernelPlacement,
    KernelUncertainty,
    LabelOracle,
    MaximumQueriesExceeded,
    MinMax,
    RandomPairs,
    active_learning,
)


def _blobs(n_per=30, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    X = np.vstack([c + rng.normal(size=(n_per, 2)) for c in centres])
    return X, np.repeat(np.arange(3), n_per)


def _answers(pairs, y):
    return np.column_stack([pairs, np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)])


def _npkl_clustering(k, seed=0):
    return pl.ConstrainedClustering(k, estimator=pl.NPKL(certificate_tol=None),
                                    random_state=seed)


class ExampleOracle:
    """The oracle of active-semi-supervised-clustering, as its users write it."""

    def __init__(self, labels, max_queries_cnt=20):
        self.labels = labels
        self.queries_cnt = 0
        self.max_queries_cnt = max_queries_cnt

    def query(self, i, j):
        if self.queries_cnt < self.max_queries_cnt:
            self.queries_cnt += 1
            return self.labels[i] == self.labels[j]
        raise MaximumQueriesExceeded


@pytest.fixture(scope="module")
def fitted():
    X, y = _blobs()
    C = pl.PairwiseConstraints.from_labels(y, n_must=15, n_cannot=15, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _npkl_clustering(3).fit(X, C)
    return X, y, C, model


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_strategies_return_new_distinct_pairs(name, fitted):
    X, y, C, model = fitted
    strategy = STRATEGIES[name]() if name == "random" else STRATEGIES[name](3)
    asked = C
    seen = {tuple(p) for p in C.pairs.tolist()}
    for round_ in range(3):
        pairs = strategy.select(X, asked, 25, model=model, random_state=round_)
        assert pairs.shape == (25, 2) and pairs.dtype == np.int64
        assert (pairs[:, 0] < pairs[:, 1]).all() and pairs.min() >= 0
        assert pairs.max() < len(X)
        new = {tuple(p) for p in pairs.tolist()}
        assert len(new) == 25 and not new & seen
        seen |= new
        asked = pl.PairwiseConstraints.from_array(
            np.vstack([asked.to_array(), _answers(pairs, y)]), n_samples=len(X))


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_strategy_on_tiny_set_stops_at_all_pairs(name):
    X = np.arange(4.0).reshape(-1, 1)
    strategy = STRATEGIES[name]() if name == "random" else STRATEGIES[name](2)
    pairs = strategy.select(X, [[0, 1, 1], [2, 3, 1]], 10, random_state=0)
    assert {tuple(p) for p in pairs.tolist()} == {(0, 2), (0, 3), (1, 2), (1, 3)}


def test_explore_is_farthest_first_on_a_line():
    # points on a line: from the seed, farthest-first visits the far end, then the middle
    X = np.array([[0.0], [1.0], [2.0], [4.0], [8.0], [9.0], [10.0]])
    C = [[0, 1, 1]]  # one neighbourhood {0, 1}
    first = ExploreConsolidate(n_clusters=4).select(X, C, 1)
    assert first.tolist() == [[1, 6]]  # 10 is farthest; compared with the nearest member
    # farthest-first order: 10, then 4 (3 from {1, 10}), then 8 (2 from {10}); each new
    # point is compared with the only neighbourhood, through its nearest member 1
    pairs = ExploreConsolidate(n_clusters=4).select(X, C, 3)
    assert pairs.tolist() == [[1, 6], [1, 3], [1, 4]]


def test_explore_compares_open_point_with_remaining_neighbourhoods():
    # neighbourhoods {0,1} (left), {4,5} (right, cannot-linked to the left), point 2 near
    # the left one was cannot-linked to it: its next question is the right neighbourhood,
    # and a new neighbourhood is explored, from the farthest point 7
    X = np.array([[0.0], [1.0], [2.5], [3.0], [10.0], [11.0], [20.0], [30.0]])
    C = [[0, 1, 1], [4, 5, 1], [1, 4, -1], [1, 2, -1]]
    pairs = ExploreConsolidate(n_clusters=4).select(X, C, 2)
    assert pairs.tolist() == [[2, 4], [5, 7]]


def test_explore_with_every_neighbourhood_cannot_linked_starts_a_new_one():
    X = np.array([[0.0], [1.0], [10.0], [11.0], [20.0], [21.0]])
    C = [[0, 1, 1], [2, 3, 1], [0, 2, -1], [4, 1, -1], [4, 3, -1]]
    state = ExploreConsolidate(3)
    # 4 was cannot-linked to both neighbourhoods: it is the third, so consolidation pairs
    # 5 with its nearest centroid, neighbourhood {4}
    assert state.select(X, C, 1).tolist() == [[4, 5]]


def test_consolidate_orders_neighbourhoods_by_centroid_distance():
    X = np.array([[0.0], [2.0], [10.0], [12.0], [5.0]])
    C = [[0, 1, 1], [2, 3, 1], [1, 2, -1]]  # neighbourhoods {0,1} (centroid 1), {2,3} (11)
    # the only free point, 4 (at 5), is nearer the left centroid: asked against it first
    assert ExploreConsolidate(2).select(X, C, 1).tolist() == [[1, 4]]
    # once cannot-linked to the left, against the right one
    C2 = [*C, [1, 4, -1]]
    assert ExploreConsolidate(2).select(X, C2, 1).tolist() == [[2, 4]]


def test_min_max_consolidates_least_covered_point():
    # skeleton {0,1} and {5,6}: the free point whose maximum similarity to the skeleton is
    # smallest is 3 (distance 3 to both 1 and 5), not 2 or 4
    X = np.array([[0.0], [1.0], [3.5], [4.0], [7.0], [8.0], [9.0]])
    C = [[0, 1, 1], [5, 6, 1], [1, 5, -1]]
    pairs = MinMax(2).select(X, C, 1)
    assert pairs.tolist() == [[1, 3]]  # its most similar skeleton point is 1 (3 < 4)
    # consolidation goes on with the next least covered point, 4 (3 away from 5)
    assert MinMax(2).select(X, C, 2).tolist() == [[1, 3], [4, 5]]


def test_uncertainty_prefers_pairs_near_threshold(fitted):
    X, y, C, model = fitted
    pairs = KernelUncertainty(3).select(X, C, 10, model=model, random_state=0)
    U = model.embedding_ / np.linalg.norm(model.embedding_, axis=1, keepdims=True)
    chosen = np.einsum("ij,ij->i", U[pairs[:, 0]], U[pairs[:, 1]])
    rng = np.random.default_rng(0)
    rand = rng.integers(len(X), size=(2000, 2))
    rand = rand[rand[:, 0] != rand[:, 1]]
    other = np.einsum("ij,ij->i", U[rand[:, 0]], U[rand[:, 1]])
    # random pairs mostly sit at the ends (same cluster ~1, different ~0 or below)
    tau = 0.5
    assert np.median(np.abs(chosen - tau)) < np.median(np.abs(other - tau))


def test_uncertainty_skips_pairs_implied_by_closure(fitted):
    X, y, C, model = fitted
    comp = C.must_link_components()
    pairs = KernelUncertainty(3).select(X, C, 30, model=model, random_state=0)
    assert not (comp[pairs[:, 0]] == comp[pairs[:, 1]]).any()


def test_uncertainty_without_model_explores():
    X, _ = _blobs()
    a = KernelUncertainty(3).select(X, None, 5, random_state=1)
    b = ExploreConsolidate(3).select(X, None, 5, random_state=1)
    assert a.tolist() == b.tolist()


def _placement_case():
    """Two neighbourhoods on a line (A = {0, 1} near -1, B = {2, 3} near +1, joined by a
    cannot-link) and free points at -0.8, 0.1 and 0.9, embedded in 2-d so that the
    normalised rows keep their order: u = (x, 1) / ||(x, 1)||."""
    x = np.array([-1.0, -1.2, 1.0, 1.2, -0.8, 0.1, 0.9])
    E = np.column_stack([x, np.ones_like(x)])
    C = pl.PairwiseConstraints([[0, 1], [2, 3], [1, 2]], [1, 1, -1], n_samples=7)
    return E, C


def test_placement_asks_the_point_of_least_margin_its_most_similar_member():
    E, C = _placement_case()
    stub = _FittedStub(E, np.array([0, 0, 1, 1, 0, 0, 1]), 2)
    U = E / np.linalg.norm(E, axis=1, keepdims=True)
    means = np.vstack([U[[0, 1]].mean(0), U[[2, 3]].mean(0)])
    affinity = U @ (means / np.linalg.norm(means, axis=1, keepdims=True)).T
    margins = np.abs(affinity[:, 0] - affinity[:, 1])[4:]
    assert np.argmin(margins) == 1  # the point at 0.1 is the least decided
    pairs = KernelPlacement(2).select(E, C, 3, model=stub, random_state=0)
    # by increasing margin: 0.1 (nearer B's mean), then -0.8 and 0.9, each paired with
    # the member of its best neighbourhood with the largest cosine
    expected = []
    for p in 4 + np.argsort(margins, kind="stable"):
        k = int(np.argmax(affinity[p]))
        members = [0, 1] if k == 0 else [2, 3]
        q = members[int(np.argmax(U[members] @ U[p]))]
        expected.append(sorted((int(p), q)))
    assert pairs.tolist() == expected


def test_placement_asks_an_open_point_its_next_neighbourhood_and_places_by_elimination():
    E, C = _placement_case()
    stub = _FittedStub(E, np.array([0, 0, 1, 1, 0, 0, 1]), 2)
    # the point at 0.1 was told it is not with B: with three clusters it is asked about
    # A next; with two it belongs to A and is not asked again
    C3 = pl.PairwiseConstraints(np.vstack([C.pairs, [[2, 5]]]),
                                np.concatenate([C.signs, [-1]]), 7)
    first = KernelPlacement(3).select(E, C3, 1, model=stub, random_state=0)
    assert first.tolist() == [[1, 5]] or first.tolist() == [[0, 5]]
    both = KernelPlacement(2).select(E, C3, 2, model=stub, random_state=0)
    assert 5 not in both.ravel()


def test_placement_without_model_explores():
    X, _ = _blobs()
    a = KernelPlacement(3).select(X, None, 5, random_state=1)
    b = ExploreConsolidate(3).select(X, None, 5, random_state=1)
    assert a.tolist() == b.tolist()


def test_placement_with_closure_recovers_well_separated_clusters():
    # each answer places a point; the closure gives every implied pair to the learner, so
    # about one question per point recovers the partition
    X, y = _blobs(n_per=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, C, _ = active_learning(_npkl_clustering(3), X, LabelOracle(y),
                                    strategy="placement", budget=80, batch_size=20,
                                    closure=True, random_state=0)
    assert rand_score(y, est.labels_) == 1.0
    # every answer is obeyed by the clustering
    same = est.labels_[C.pairs[:, 0]] == est.labels_[C.pairs[:, 1]]
    assert np.array_equal(same, C.signs > 0)


def test_loop_with_closure_fits_the_closure_and_falls_back_on_contradictions():
    X, y = _blobs(n_per=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, C, _ = active_learning(pl.NPKL(certificate_tol=None), X, LabelOracle(y),
                                    strategy="min_max", budget=30, batch_size=10,
                                    closure=True, random_state=0)
    closed = C.closure()
    assert est.side_info_.n_pairs == closed.n_pairs > C.n_pairs
    assert (set(map(tuple, est.side_info_.to_array().tolist()))
            == set(map(tuple, closed.to_array().tolist())))
    # a contradicting initial answer: one warning, and the answers as given
    bad = [[0, 1, 1], [1, 2, 1], [0, 2, -1]]
    with pytest.warns(UserWarning, match="contradict"):
        est, C, _ = active_learning(pl.NPKL(certificate_tol=None), X,
                                    LabelOracle(y), strategy="random", budget=10,
                                    batch_size=10, initial=bad, closure=True,
                                    random_state=0)
    assert est.side_info_.n_pairs == C.n_pairs == 13


def test_label_oracle_answers_noise_and_budget():
    y = np.repeat([0, 1], 50)
    oracle = LabelOracle(y, max_queries=3)
    assert oracle.query(0, 1) is True and oracle.query(0, 99) is False
    oracle.query(1, 2)
    with pytest.raises(MaximumQueriesExceeded):
        oracle.query(3, 4)
    noisy = LabelOracle(y, noise=0.2, random_state=0)
    truth = np.array([y[i] == y[j] for i, j in zip(range(100), range(1, 101), strict=False)
                      if j < 100])
    got = np.array([noisy.query(i, i + 1) for i in range(99)])
    wrong = int((got != truth).sum())
    assert wrong == noisy.n_mistakes_ and 5 <= wrong <= 40
    with pytest.raises(ValueError, match="noise"):
        LabelOracle(y, noise=1.5)


def test_loop_accepts_example_oracle_and_stops_at_its_budget():
    X, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, C, history = active_learning(_npkl_clustering(3), X, ExampleOracle(y, 30),
                                          strategy="explore_consolidate", budget=100,
                                          batch_size=20, random_state=0)
    assert C.n_pairs == 30 and history[-1]["n_queries"] == 30
    # the answers are those of the labels
    assert np.array_equal(C.signs, np.where(y[C.pairs[:, 0]] == y[C.pairs[:, 1]], 1, -1))
    assert len(est.labels_) == len(X)


def test_loop_budget_history_and_clustering():
    X, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, C, history = active_learning(_npkl_clustering(3), X, LabelOracle(y),
                                          strategy="uncertainty", budget=50, batch_size=20,
                                          random_state=0)
    assert C.n_pairs == 50 and [h["n_queries"] for h in history] == [20, 40, 50]
    assert rand_score(y, est.labels_) > 0.9
    assert history[0]["stability"] is None and history[1]["stability"] is not None


def test_loop_initial_answers_not_counted():
    X, y = _blobs()
    init = pl.PairwiseConstraints.from_labels(y, n_must=5, n_cannot=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, C, _ = active_learning(_npkl_clustering(3), X, LabelOracle(y), initial=init,
                                  strategy="random", budget=20, random_state=0)
    assert C.n_pairs == 30
    assert {tuple(p) for p in init.pairs.tolist()} <= {tuple(p) for p in C.pairs.tolist()}


def test_loop_stopping_rule_stops_early():
    X, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, C, history = active_learning(_npkl_clustering(3), X, LabelOracle(y),
                                        strategy="random", budget=200, batch_size=10,
                                        stop_tol=0.05, random_state=0)
    # separated blobs: the clustering settles long before 200 answers
    assert C.n_pairs < 200
    assert all(h["stability"] > 0.95 for h in history[-2:])


class _CountingEstimator(pl.ConstrainedClustering):
    """A clustering with a partial_fit that records what it was given."""

    def partial_fit(self, X, y):
        self.partial_calls_ = [*getattr(self, "partial_calls_", []), y.n_pairs]
        return self


def test_loop_uses_partial_fit_when_available():
    X, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, C, _ = active_learning(
            _CountingEstimator(3, estimator=pl.NPKL(certificate_tol=None), random_state=0),
            X, LabelOracle(y), strategy="random", budget=30, batch_size=10,
            initial=[[0, 1, 1]], random_state=0)
    assert est.partial_calls_ == [10, 10, 10]


def test_loop_validates_arguments():
    X, y = _blobs()
    with pytest.raises(TypeError, match="oracle"):
        active_learning(_npkl_clustering(3), X, object())
    with pytest.raises(ValueError, match="budget"):
        active_learning(_npkl_clustering(3), X, LabelOracle(y), budget=0)
    with pytest.raises(ValueError, match="strategy"):
        active_learning(_npkl_clustering(3), X, LabelOracle(y), strategy="nope")
    with pytest.raises(ValueError, match="n_pairs"):
        RandomPairs().select(X, None, -1)


def test_loop_with_npkl_updates_by_partial_fit():
    X, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, C, history = active_learning(pl.NPKL(certificate_tol=None, tol=1e-8, max_iter=5000),
                                          X, LabelOracle(y),
                                          strategy="min_max", budget=40, batch_size=20,
                                          random_state=0)
    assert est.side_info_.n_pairs == C.n_pairs == 40
    assert history[-1]["stability"] is None  # NPKL has no labels_
    # the warm-started model solves the problem on every answer: a fresh fit with the
    # same gamma_ and rank_ reaches the same objective
    fresh = pl.NPKL(certificate_tol=None, gamma=est.gamma_, rank=est.rank_,
                    random_state=0, tol=1e-8, max_iter=5000).fit(X, C)
    assert est.objective(est.embedding_) == pytest.approx(
        fresh.objective(fresh.embedding_), rel=1e-3)


def test_loop_callback_sees_each_round_and_can_stop():
    X, y = _blobs()
    seen = []

    def callback(model, C):
        seen.append((C.n_pairs, rand_score(y, model.labels_)))
        return C.n_pairs >= 30

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, C, history = active_learning(_npkl_clustering(3), X, LabelOracle(y),
                                        strategy="random", budget=100, batch_size=10,
                                        callback=callback, random_state=0)
    assert [n for n, _ in seen] == [10, 20, 30] and C.n_pairs == 30 and len(history) == 3


class _FittedStub:
    """A fitted model as the strategies read it: an embedding and cluster labels."""

    def __init__(self, E, labels, n_clusters):
        self.embedding_, self.labels_, self.n_clusters = E, labels, n_clusters


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_selection_scales_to_1e5_points_without_dense_matrix(name):
    import tracemalloc

    rng = np.random.default_rng(0)
    n = 100_000
    y = rng.integers(3, size=n)
    X = rng.normal(size=(n, 3)) + 4.0 * y[:, None]
    model = _FittedStub(X + rng.normal(size=X.shape), y, 3)
    C = pl.PairwiseConstraints.from_labels(y, n_must=100, n_cannot=100, random_state=0)
    strategy = STRATEGIES[name]() if name == "random" else STRATEGIES[name](3)
    tracemalloc.start()
    pairs = strategy.select(X, C, 20, model=model, random_state=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert pairs.shape == (20, 2)
    # an n x n float matrix would be 80 GB; even one n x 200 block is 160 MB
    assert peak < 120e6
