"""ConstrainedClustering: scikit-learn's checks, side information, predict on new points."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score, rand_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdlearn as pl
from psdlearn.constraints import as_constraints


@parametrize_with_checks([pl.ConstrainedClustering(3, estimator=pl.NPKL(max_iter=50)),
                          pl.ConstrainedClustering(3, estimator=pl.RCA(), n_init=3),
                          pl.ConstrainedClustering(3, estimator=pl.RCA(), n_init=3,
                                                   assign="constrained")])
def test_sklearn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def _decoy(n=120, seed=0):
    """Two classes split along feature 0; feature 1 holds two far larger blobs that are
    not the classes, so that k-means on X finds the wrong partition."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    decoy = rng.integers(0, 2, n)
    X = np.column_stack([3.0 * y + rng.normal(scale=0.5, size=n),
                         12.0 * decoy + rng.normal(size=n)])
    return X, y


_LEARNERS = [pl.NPKL(random_state=0), pl.RCA(), pl.PSDBoost(),
             pl.KernelMetricLearner(random_state=0), pl.GeneralizedNystroem(random_state=0)]


@pytest.mark.parametrize("learner", _LEARNERS, ids=lambda e: type(e).__name__)
def test_pairs_recover_the_partition_that_kmeans_on_X_misses(learner):
    X, y = _decoy()
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    assert rand_score(y, KMeans(2, n_init=10, random_state=0).fit_predict(X)) < 0.6
    cl = pl.ConstrainedClustering(2, estimator=learner, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = cl.fit_predict(X, C)
    assert rand_score(y, labels) > 0.95
    assert np.array_equal(labels, cl.labels_)
    assert cl.cluster_centers_.shape == (2, cl.embedding_.shape[1])
    assert type(cl.estimator_) is type(learner)
    assert not hasattr(learner, "n_features_in_")  # the given learner is cloned, not fitted


@pytest.mark.parametrize("learner", [pl.RCA(), pl.PSDBoost(),
                                     pl.KernelMetricLearner(random_state=0)],
                         ids=lambda e: type(e).__name__)
def test_predict_of_the_training_points_is_labels(learner):
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 30, 30, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cl = pl.ConstrainedClustering(3, estimator=learner, random_state=0).fit(X, C)
    assert np.array_equal(cl.predict(X), cl.labels_)


def test_predict_of_the_training_points_is_labels_npkl():
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    cl = pl.ConstrainedClustering(3, random_state=0).fit(X, C)
    assert np.array_equal(cl.predict(X), cl.labels_)


def test_predict_is_the_nearest_centre_of_the_out_of_sample_embedding():
    X, y = _decoy(160, seed=1)
    C = pl.PairwiseConstraints.from_labels(y[:120], 0.6, 0.6, random_state=0)
    cl = pl.ConstrainedClustering(2, estimator=pl.RCA(), random_state=0).fit(X[:120], C)
    E_new = cl.estimator_.transform(X[120:])
    d = ((E_new[:, None, :] - cl.cluster_centers_[None]) ** 2).sum(-1)
    pred = cl.predict(X[120:])
    assert np.array_equal(pred, d.argmin(1))
    assert adjusted_rand_score(y[120:], pred) > 0.9  # new points follow the constraints


def test_every_form_of_side_information_gives_the_same_fit():
    X, y = _decoy(60)
    partial = np.where(np.arange(60) < 20, y, -1)
    C = as_constraints(partial, 60)  # every pair of the 20 labelled points
    # a fixed rank: rank="auto" counts labels by the smallest pair set implying them
    fits = [pl.ConstrainedClustering(2, estimator=pl.NPKL(rank=10, random_state=0),
                                     random_state=0).fit(X, side)
            for side in (C, C.to_array(), partial)]
    for other in fits[1:]:
        assert np.array_equal(other.labels_, fits[0].labels_)
        np.testing.assert_allclose(other.embedding_, fits[0].embedding_)


def test_same_random_state_same_partition_with_an_unseeded_learner():
    X, y = _decoy(90)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    a = pl.ConstrainedClustering(2, random_state=3).fit(X, C)  # NPKL(random_state=None)
    b = pl.ConstrainedClustering(2, random_state=3).fit(X, C)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict(X[:10]), a.predict(X[:10]))


def test_without_side_information():
    X, y = _decoy(90)
    km = KMeans(2, n_init=10, random_state=0).fit_predict(X)
    cl = pl.ConstrainedClustering(2, random_state=0)
    with pytest.warns(UserWarning, match="X itself is clustered"):
        cl.fit(X)
    assert cl.estimator_ is None
    assert adjusted_rand_score(km, cl.labels_) == 1.0  # plain k-means on X
    np.testing.assert_array_equal(cl.predict(X), cl.labels_)
    # a learner that works without side information is fitted without it, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message=".*side information.*")
        nys = pl.ConstrainedClustering(
            2, estimator=pl.GeneralizedNystroem(random_state=0), random_state=0).fit(X)
    assert isinstance(nys.estimator_, pl.GeneralizedNystroem)


def test_bad_input():
    X, y = _decoy(30)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    with pytest.raises(ValueError, match="n_clusters=31 exceeds"):
        pl.ConstrainedClustering(31, estimator=pl.RCA()).fit(X, C)
    with pytest.raises(ValueError, match="n_clusters"):
        pl.ConstrainedClustering(0).fit(X, C)
    with pytest.raises(ValueError, match="refers to"):
        pl.ConstrainedClustering(2).fit(X[:10], C)
    assert clone(pl.ConstrainedClustering(4, estimator=pl.RCA())).get_params()["n_clusters"] == 4


def test_triplets_reach_a_learner_that_takes_them():
    X, y = _decoy(90)
    T = pl.Triplets(pl.triplets_from_labels(X, y, n_triplets=200, random_state=0))
    cl = pl.ConstrainedClustering(2, estimator=pl.PSDBoost(), random_state=0)
    cl.fit(X, T)
    assert rand_score(y, cl.labels_) > 0.95
    with pytest.raises(ValueError, match="Triplets"):
        pl.ConstrainedClustering(2, estimator=pl.RCA()).fit(X, T)


def test_a_learner_that_cannot_embed_is_refused():
    from sklearn.linear_model import LogisticRegression

    X, y = _decoy(30)
    with pytest.raises(TypeError, match="needs a learner with fit and transform"):
        pl.ConstrainedClustering(2, estimator=LogisticRegression()).fit(X, y)
    with pytest.raises(TypeError, match="PairsClassifier needs a learner"):
        pl.PairsClassifier(LogisticRegression()).fit(X[[[0, 1], [2, 3]]], [1, -1])


# ------------------------------------------------------------ constrained assignment
def _brute_force_units(cost, edges):
    """All assignments of the units that break no cannot-link, and their costs."""
    import itertools

    n_units, k = cost.shape
    feasible = []
    for lab in itertools.product(range(k), repeat=n_units):
        lab = np.array(lab)
        if all(lab[u] != lab[v] for u, v in edges):
            feasible.append((cost[np.arange(n_units), lab].sum(), lab))
    return feasible


def test_units_sit_at_their_least_cost_allowed_centre():
    from psdlearn.cluster import assign_units

    rng = np.random.default_rng(0)
    for _ in range(30):
        cost = rng.random((6, 3))
        edges = np.array([[0, 1], [1, 2], [0, 2], [3, 4]])
        labels = assign_units(cost, edges)
        feasible = _brute_force_units(cost, edges)
        assert feasible  # a triangle and an edge are 3-colourable
        # every cannot-link is obeyed when a feasible assignment exists ...
        assert all(labels[u] != labels[v] for u, v in edges)
        # ... a unit with no cannot-link takes its cheapest centre ...
        assert labels[5] == cost[5].argmin()
        # ... and no unit can move alone to a cheaper centre that its neighbours leave free
        for u in range(6):
            taken = {labels[v] for e in edges for w, v in (e, e[::-1]) if w == u}
            free = [c for c in range(3) if c not in taken]
            assert cost[u, labels[u]] == min(cost[u, c] for c in free)
        # the greedy total is at least the feasible optimum (it is a local optimum only)
        best = min(c for c, _ in feasible)
        assert cost[np.arange(6), labels].sum() >= best - 1e-12


def _greedy_reference(cost, edges):
    """The rule of ``assign_units`` step by step in plain Python: least cost, then for
    each violated cannot-link in order the move of least extra cost (the smaller unit on
    a tie) to the cheapest centre its neighbours leave free, then sweeps of the linked
    units in increasing order, each taking its cheapest free centre when that ends a
    violation or costs less."""
    n_units, k = cost.shape
    labels = [int(np.argmin(cost[u])) for u in range(n_units)]
    nbrs = {u: set() for u in range(n_units)}
    for u, v in edges:
        nbrs[u].add(v)
        nbrs[v].add(u)

    def best_free(u):
        free = [c for c in range(k) if c not in {labels[w] for w in nbrs[u]}]
        return min(free, key=lambda c: (cost[u, c], c)) if free else None

    for u, v in edges:
        if labels[u] != labels[v]:
            continue
        moves = [(cost[w, c] - cost[w, labels[w]], w, c)
                 for w in (u, v) for c in [best_free(w)] if c is not None]
        if moves:
            _, w, c = min(moves)
            labels[w] = c
    for _ in range(100):
        moved = False
        for u in sorted(w for w in nbrs if nbrs[w]):
            c = best_free(u)
            violated = any(labels[w] == labels[u] for w in nbrs[u])
            if c is not None and c != labels[u] and (violated or cost[u, c] < cost[u, labels[u]]):
                labels[u] = c
                moved = True
        if not moved:
            break
    return np.array(labels)


def _violations(labels, edges):
    return sum(int(labels[u] == labels[v]) for u, v in edges)


def _greedy_only(cost, edges):
    """The compiled repair and descent alone, from the least-cost start."""
    from psdlearn._cluster_kernels import greedy_assign
    from psdlearn.cluster import _adjacency

    indptr, indices, linked = _adjacency(edges, cost.shape[0])
    return greedy_assign(cost, edges, indptr, indices, linked,
                         cost.argmin(1).astype(np.int64), 100)


def test_compiled_assignment_follows_the_greedy_rule_ties_included():
    """The compiled repair and descent give the labels of the rule run step by step, on
    random graphs, including dense ones where some units find no free centre, and with
    integer costs, so that ties decide moves; the full assignment equals them unless it
    obeys every cannot-link."""
    from psdlearn.cluster import assign_units

    rng = np.random.default_rng(1)
    for trial in range(200):
        n_units, k = int(rng.integers(2, 25)), int(rng.integers(2, 5))
        cost = rng.random((n_units, k)) if trial % 2 else rng.integers(0, 3, (n_units, k))
        cost = cost.astype(float)
        iu, ju = np.triu_indices(n_units, 1)
        pick = rng.random(len(iu)) < rng.uniform(0.05, 0.6)
        edges = np.column_stack([iu[pick], ju[pick]])[rng.permutation(int(pick.sum()))]
        greedy = _greedy_only(cost, edges)
        assert np.array_equal(greedy, _greedy_reference(cost, edges))
        labels = assign_units(cost, edges)
        # the repair's result stands unless another assignment obeys every cannot-link
        assert np.array_equal(labels, greedy) or _violations(labels, edges) == 0


def test_assignment_leaves_no_violation_where_the_repair_stalls():
    """Two large units A, B joined by a cannot-link, both put in centre 0 by least cost;
    a point x cannot-linked to A and a point y to B, both in centre 1. No single move of
    the repair helps (A and B each see both centres occupied), yet A=0, B=1, x=1, y=0
    obeys every pair."""
    from psdlearn.cluster import assign_units

    cost = np.array([[0.0, 50.0], [0.0, 40.0], [5.0, 0.0], [5.0, 0.0]])
    edges = np.array([[0, 1], [0, 2], [1, 3]])
    assert _violations(_greedy_only(cost, edges), edges) == 1
    labels = assign_units(cost, edges)
    assert _violations(labels, edges) == 0
    assert labels.tolist() == [0, 1, 1, 0]  # B moves: the cheaper of the two big units


def test_two_centres_and_consistent_cannot_links_are_always_obeyed():
    """With two centres, cannot-links that a 2-colouring obeys (between the two halves of a
    hidden partition) are all obeyed, whatever the costs: the saturation order colours
    bipartite graphs exactly."""
    from psdlearn.cluster import assign_units

    rng = np.random.default_rng(2)
    for _ in range(200):
        n_units = int(rng.integers(4, 40))
        side = rng.integers(0, 2, n_units)
        iu, ju = np.triu_indices(n_units, 1)
        across = side[iu] != side[ju]
        pick = across & (rng.random(len(iu)) < rng.uniform(0.02, 0.3))
        edges = np.column_stack([iu[pick], ju[pick]])[rng.permutation(int(pick.sum()))]
        cost = rng.random((n_units, 2)) * rng.uniform(1, 100, (n_units, 1))
        assert _violations(assign_units(cost, edges), edges) == 0


def test_constraint_units_are_must_link_components_and_summed_costs():
    from psdlearn.cluster import constrained_lloyd, constraint_units

    # two components {0, 1, 2} and {3, 4}, point 5 alone; cannot-link between the components
    C = pl.PairwiseConstraints([[0, 1], [1, 2], [3, 4], [2, 3]], [1, 1, 1, -1], n_samples=6)
    units, edges, n_conflicts = constraint_units(C, 6)
    assert n_conflicts == 0
    assert len(set(units[[0, 1, 2]])) == 1 and len(set(units[[3, 4]])) == 1
    assert len(set(units)) == 3
    assert edges.tolist() == [sorted([units[2], units[3]])]
    # points placed so that nearest-centre assignment splits both components and puts
    # them together; the constrained step must keep each whole and apart
    E = np.array([[0.0], [0.1], [0.9], [1.0], [0.2], [5.0]])
    centers = np.array([[0.0], [1.0]])
    labels, _ = constrained_lloyd(E, centers, units, edges, max_iter=1)
    assert labels[0] == labels[1] == labels[2] and labels[3] == labels[4]
    assert labels[2] != labels[3]
    # with one step the centres are fixed: check the unit choice against brute force of
    # sum_{i in unit} ||e_i - mu_c||^2 over the assignments obeying the cannot-link
    d = (E - centers.T) ** 2
    member = np.zeros((3, 6))
    member[units, np.arange(6)] = 1
    cost = member @ d
    best_cost, best = min(_brute_force_units(cost, edges), key=lambda t: t[0])
    assert np.array_equal(labels, best[units])


def test_constrained_assignment_obeys_the_pairs_and_predict_returns_labels():
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 60, 60, random_state=0)
    cl = pl.ConstrainedClustering(3, estimator=pl.RCA(), assign="constrained",
                                  random_state=0).fit(X, C)
    L = cl.labels_
    assert np.all(L[C.must_link[:, 0]] == L[C.must_link[:, 1]])
    assert np.all(L[C.cannot_link[:, 0]] != L[C.cannot_link[:, 1]])
    assert np.array_equal(cl.predict(X), L)
    assert np.array_equal(cl.predict(X[::-1]), L[::-1])  # row by row, any order
    d = ((cl.embedding_[:, None] - cl.cluster_centers_[None]) ** 2).sum(-1)
    assert cl.inertia_ == pytest.approx(d[np.arange(len(L)), L].sum())
    # new points (not training rows) go to the nearest centre
    X_new = X + 1e-3
    d_new = ((cl.estimator_.transform(X_new)[:, None] - cl.cluster_centers_[None]) ** 2).sum(-1)
    assert np.array_equal(cl.predict(X_new), d_new.argmin(1))


def test_constrained_assignment_with_partial_labels_keeps_classes_apart():
    X, y = _decoy(60)
    partial = np.where(np.arange(60) < 20, y, -1)
    cl = pl.ConstrainedClustering(2, estimator=pl.RCA(), assign="constrained",
                                  random_state=0).fit(X, partial)
    lab = cl.labels_[:20]
    assert len(set(lab[y[:20] == 0])) == 1 and len(set(lab[y[:20] == 1])) == 1
    assert lab[y[:20] == 0][0] != lab[y[:20] == 1][0]


def test_contradicting_pairs_warn_and_do_not_crash():
    X, y = _decoy(40)
    # must-links 0-1-2 and a cannot-link 0-2 inside that component
    C = pl.PairwiseConstraints([[0, 1], [1, 2], [0, 2], [3, 4]], [1, 1, -1, 1], n_samples=40)
    cl = pl.ConstrainedClustering(2, estimator=pl.RCA(), assign="constrained",
                                  random_state=0)
    with pytest.warns(UserWarning, match="one must-link component"):
        cl.fit(X, C)
    assert cl.labels_[3] == cl.labels_[4]  # the consistent component stays whole
    assert np.array_equal(cl.predict(X), cl.labels_)


def test_nearest_assignment_is_plain_kmeans_on_the_embedding():
    X, y = _decoy(90)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    cl = pl.ConstrainedClustering(2, estimator=pl.RCA(), assign="nearest",
                                  random_state=0).fit(X, C)
    d = ((cl.embedding_[:, None] - cl.cluster_centers_[None]) ** 2).sum(-1)
    assert np.array_equal(cl.labels_, d.argmin(1))


# ------------------------------------------------------------ assign="auto"
def test_label_agreement_counts_the_pairs_it_stands_for():
    """The contingency count equals the count over the listed pairs (i held out, j any
    other labelled point)."""
    from psdlearn.cluster import _agreement_labels

    rng = np.random.default_rng(0)
    codes = np.where(rng.random(60) < 0.6, rng.integers(0, 3, 60), -1)
    labels = rng.integers(0, 4, 60)
    labelled = np.flatnonzero(codes >= 0)
    held = labelled[::3]
    brute = sum(int((labels[i] == labels[j]) == (codes[i] == codes[j]))
                for i in held for j in labelled if j != i)
    assert _agreement_labels(labels, codes, held) == brute


def _unstructured(n=150, seed=0):
    """Classes unrelated to X (a Gaussian cloud): only enforcing the pairs finds them."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 2)), rng.integers(0, 2, n)


def test_auto_enforces_numerous_right_pairs():
    X, y = _unstructured()
    C = pl.PairwiseConstraints.from_labels(y, 200, 200, random_state=0)
    cl = pl.ConstrainedClustering(2, estimator=pl.RCA(), random_state=0).fit(X, C)
    assert cl.assign == "auto" and cl.assign_ == "constrained"
    assert cl.assign_scores_["constrained"] > cl.assign_scores_["nearest"]
    near = clone(cl).set_params(assign="nearest").fit(X, C)
    assert rand_score(y, cl.labels_) > rand_score(y, near.labels_) + 0.2
    # with partial labels too
    partial = np.where(np.arange(150) < 100, y, -1)
    assert clone(cl).fit(X, partial).assign_ == "constrained"


def test_auto_keeps_nearest_when_enforcing_breaks_held_out_pairs():
    """Three far blobs, the clustering of X is right; a third of the signs flipped:
    enforcing them would merge blobs and break the held-out pairs."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 50)
    X = 10.0 * np.eye(3)[y][:, :2] + rng.normal(scale=0.3, size=(150, 2))
    C = pl.PairwiseConstraints.from_labels(y, 60, 60, random_state=0)
    flip = rng.random(len(C.signs)) < 0.3
    noisy = pl.PairwiseConstraints(C.pairs, np.where(flip, -C.signs, C.signs),
                                   n_samples=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cl = pl.ConstrainedClustering(3, estimator=pl.RCA(), random_state=0).fit(X, noisy)
    assert cl.assign_ == "nearest"
    assert cl.assign_scores_["nearest"] >= cl.assign_scores_["constrained"]
    assert adjusted_rand_score(y, cl.labels_) == pytest.approx(1.0)


def test_auto_with_few_pairs_or_triplets_keeps_nearest():
    X, y = _decoy(40)
    C = pl.PairwiseConstraints([[0, 1], [2, 3], [4, 5]], [1, 1, -1], n_samples=40)
    cl = pl.ConstrainedClustering(2, estimator=pl.RCA(), random_state=0).fit(X, C)
    assert cl.assign_ == "nearest" and cl.assign_scores_ == {"constrained": 0, "nearest": 0}
    T = pl.triplets_from_labels(X, y, n_triplets=60, random_state=0)
    cl = pl.ConstrainedClustering(2, estimator=pl.PSDBoost(), random_state=0).fit(
        X, pl.Triplets(T))
    assert cl.assign_ == "nearest" and cl.assign_scores_ is None


def test_default_learner_stops_early_with_the_partition_of_the_tight_solve():
    """The default learner solves to a relative change of 1e-3: fewer sweeps, an objective
    within 1 % of the solve to NPKL's own tol, and the same partition."""
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 30, 30, random_state=0)
    fast = pl.ConstrainedClustering(3, random_state=0).fit(X, C)
    tight = pl.ConstrainedClustering(3, estimator=pl.NPKL(certificate_tol=None),
                                     random_state=0).fit(X, C)
    assert fast.estimator_.n_iter_ < tight.estimator_.n_iter_ / 2
    f, t = fast.estimator_.objective_history_[-1], tight.estimator_.objective_history_[-1]
    assert t <= f <= t + 0.01 * abs(t)
    assert adjusted_rand_score(fast.labels_, tight.labels_) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_components_are_scipys_connected_components(seed):
    # the constrained assignment numbers the must-link units as scipy does (in the order
    # of their smallest point), and the repair visits units in that order
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from psdlearn._cluster_kernels import components

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    pairs = rng.integers(0, n, (int(rng.integers(0, 2 * n)), 2)).astype(np.int64)
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    expected = connected_components(graph, directed=False)[1]
    assert components(n, pairs).tolist() == expected.tolist()


def test_group_sums_are_add_at_to_the_bit():
    from psdlearn._cluster_kernels import group_sums

    rng = np.random.default_rng(0)
    values = rng.normal(size=(200, 7)) * 10.0 ** rng.integers(-8, 8, (200, 1))
    groups = rng.integers(0, 9, 200)
    expected = np.zeros((11, 7))
    np.add.at(expected, groups, values)
    assert np.array_equal(group_sums(groups, values, 11), expected)


def test_unit_edges_are_the_sorted_distinct_pairs():
    from psdlearn.cluster import _unit_edges

    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 30, 300), rng.integers(0, 30, 300)
    keep = a != b
    a, b = a[keep], b[keep]
    expected = np.unique(np.sort(np.column_stack([a, b]), axis=1), axis=0)
    assert np.array_equal(_unit_edges(a, b), expected)
    assert _unit_edges(a[:0], b[:0]).shape == (0, 2)
