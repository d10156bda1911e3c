import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from psdlearn import PairwiseConstraints, triplets_from_constraints, triplets_from_labels
from psdlearn.constraints import as_constraints, check_side_info
from psdlearn.kml._similar import similar_set


def _labels(n=60, n_classes=3, seed=0):
    return np.random.default_rng(seed).integers(0, n_classes, size=n)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_must,n_cannot", [(0.6, 0.6), (10, 25), (0.1, 1.0)])
def test_from_labels_agrees_with_labels_distinct_and_counts(seed, n_must, n_cannot):
    y = _labels(seed=seed)
    n = len(y)
    C = PairwiseConstraints.from_labels(y, n_must=n_must, n_cannot=n_cannot, random_state=seed)
    want_must = n_must if isinstance(n_must, int) else round(n_must * n)
    want_cannot = n_cannot if isinstance(n_cannot, int) else round(n_cannot * n)
    assert C.n_must == want_must
    assert C.n_cannot == want_cannot
    assert C.n_samples == n
    same = y[C.pairs[:, 0]] == y[C.pairs[:, 1]]
    assert np.all(same[C.signs == 1])
    assert not np.any(same[C.signs == -1])
    assert np.all(C.pairs[:, 0] < C.pairs[:, 1])
    assert len(np.unique(C.pairs, axis=0)) == C.n_pairs


def test_from_labels_ignores_unlabelled_and_is_reproducible():
    y = _labels(n=80)
    y[::3] = -1
    C1 = PairwiseConstraints.from_labels(y, random_state=5)
    C2 = PairwiseConstraints.from_labels(y, random_state=5)
    assert np.all(y[C1.pairs] != -1)
    assert np.array_equal(C1.pairs, C2.pairs) and np.array_equal(C1.signs, C2.signs)


def test_from_labels_large_n_uses_sampling_path():
    y = _labels(n=3000, n_classes=4, seed=1)
    C = PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)
    assert C.n_must == 500 and C.n_cannot == 500
    same = y[C.pairs[:, 0]] == y[C.pairs[:, 1]]
    assert np.array_equal(same, C.signs == 1)


def test_from_labels_too_many_requested():
    y = np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="only 2"):
        PairwiseConstraints.from_labels(y, n_must=3, n_cannot=0)
    with pytest.raises(TypeError):
        PairwiseConstraints.from_labels(y, n_must="many")


@pytest.mark.parametrize(
    "pairs,signs,n,match",
    [
        ([[0, 5]], [1], 5, "out of range"),
        ([[-1, 2]], [1], 5, "negative"),
        ([[2, 2]], [1], 5, "self-pair"),
        ([[0, 1]], [2], 5, "signs must be"),
        ([[0, 1]], [0], 5, "signs must be"),
        ([[0, 1], [1, 0]], [1, -1], 5, "both must-link and cannot-link"),
        ([[0.0, np.nan]], [1], 5, "NaN"),
        ([[0.5, 1]], [1], 5, "integer"),
        ([[0, 1, 2]], [1], 5, "shape"),
        ([[0, 1]], [1, 1], 5, "entries"),
    ],
)
def test_invalid_inputs_raise(pairs, signs, n, match):
    with pytest.raises(ValueError, match=match):
        PairwiseConstraints(pairs, signs, n_samples=n)


def test_duplicates_merged_with_warning():
    with pytest.warns(UserWarning, match="merged"):
        C = PairwiseConstraints([[0, 1], [1, 0], [2, 3]], [1, 1, -1])
    assert C.n_pairs == 2
    assert C.pairs.tolist() == [[0, 1], [2, 3]]


def test_from_array_and_csv_roundtrip(tmp_path):
    arr = np.array([[0, 1, 1], [4, 2, -1], [3, 1, 1]])
    C = PairwiseConstraints.from_array(arr, n_samples=6)
    path = tmp_path / "c.csv"
    C.to_csv(path)
    D = PairwiseConstraints.from_csv(path, n_samples=6)
    assert np.array_equal(C.pairs, D.pairs) and np.array_equal(C.signs, D.signs)
    assert np.array_equal(C.to_array()[:, 2], C.signs)


def test_csv_words_and_errors(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("0,1,must\n2,3,cannot\n")
    C = PairwiseConstraints.from_csv(p)
    assert C.signs.tolist() == [1, -1]
    p.write_text("i,j,label\n0,1,+1\n2,x,-1\n")
    with pytest.raises(ValueError, match=r"w\.csv:3: expected integer"):
        PairwiseConstraints.from_csv(p)
    p.write_text("0,1,maybe\n")
    with pytest.raises(ValueError, match=r":1: expected label"):
        PairwiseConstraints.from_csv(p)
    p.write_text("0,1\n")
    with pytest.raises(ValueError, match="expected 3 fields"):
        PairwiseConstraints.from_csv(p)


def test_csv_one_based_shifts_and_checks_the_range(tmp_path):
    p = tmp_path / "one.csv"
    p.write_text("1,2,must\n6,4,cannot\n")
    C = PairwiseConstraints.from_csv(p, n_samples=6, one_based=True)
    assert C.pairs.tolist() == [[0, 1], [3, 5]] and C.signs.tolist() == [1, -1]
    assert C.n_samples == 6
    # read as 0-based, the same file names a seventh point
    with pytest.raises(ValueError, match=r"one\.csv:2: index 6 is out of range: indices are "
                       r"0-based, from 0 to 5"):
        PairwiseConstraints.from_csv(p, n_samples=6)
    p.write_text("0,2,must\n")
    with pytest.raises(ValueError, match=r":1: index 0 is out of range: indices are 1-based"):
        PairwiseConstraints.from_csv(p, one_based=True)
    p.write_text("-1,2,must\n")
    with pytest.raises(ValueError, match=r":1: index -1 is out of range"):
        PairwiseConstraints.from_csv(p)


def test_closure_hand_made():
    # must: 0-1, 1-2 (component {0,1,2}); 3-4 (component {3,4}); cannot: 2-3, 5-0
    C = PairwiseConstraints([[0, 1], [1, 2], [3, 4], [2, 3], [0, 5]], [1, 1, 1, -1, -1],
                            n_samples=7)
    D = C.closure()
    must = {tuple(p) for p in D.must_link.tolist()}
    cannot = {tuple(p) for p in D.cannot_link.tolist()}
    assert must == {(0, 1), (0, 2), (1, 2), (3, 4)}
    assert cannot == {(0, 3), (0, 4), (1, 3), (1, 4), (2, 3), (2, 4), (0, 5), (1, 5), (2, 5)}


def test_closure_inconsistent_raises():
    C = PairwiseConstraints([[0, 1], [1, 2], [0, 2]], [1, 1, -1])
    with pytest.raises(ValueError, match="inconsistent"):
        C.closure()


def test_triplets_from_labels_are_nearest_neighbours():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = rng.integers(0, 2, size=40)
    T = triplets_from_labels(X, y)
    D = np.linalg.norm(X[:, None] - X[None], axis=2)
    np.fill_diagonal(D, np.inf)
    for i, j, k in T:
        assert y[i] == y[j] and y[i] != y[k]
        assert D[i, j] == pytest.approx(D[i][y == y[i]].min())
        assert D[i, k] == pytest.approx(D[i][y != y[i]].min())
    assert len(triplets_from_labels(X, y, n_triplets=7, random_state=0)) == 7


def test_triplets_from_labels_with_several_same_class_neighbours():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    y = np.r_[np.zeros(27, int), np.ones(3, int)]
    y[-1] = -1  # unlabelled: class 1 has 2 labelled points, so 1 neighbour each
    T = triplets_from_labels(X, y, n_neighbors=3)
    D = np.linalg.norm(X[:, None] - X[None], axis=2)
    np.fill_diagonal(D, np.inf)
    lab = y != -1
    assert len(T) == 27 * 3 + 2 and np.all(np.diff(T[:, 0]) >= 0)
    for i in np.flatnonzero(lab):
        rows = T[T[:, 0] == i]
        same = np.flatnonzero(lab & (y == y[i]))
        expected = same[np.argsort(D[i, same])][:len(rows)]
        assert np.array_equal(rows[:, 1], expected)
        other = np.flatnonzero(lab & (y != y[i]))
        assert np.all(rows[:, 2] == other[np.argmin(D[i, other])])
    assert np.array_equal(triplets_from_labels(X, y, n_neighbors=1), triplets_from_labels(X, y))
    with pytest.raises(ValueError, match="n_neighbors"):
        triplets_from_labels(X, y, n_neighbors=0)


def test_triplets_from_constraints():
    C = PairwiseConstraints([[0, 1], [0, 2], [0, 3], [1, 4]], [1, -1, -1, -1])
    T = triplets_from_constraints(C)
    assert {tuple(t) for t in T.tolist()} == {(0, 1, 2), (0, 1, 3), (1, 0, 4)}


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 12),
    rows=st.lists(st.tuples(st.integers(-2, 14), st.integers(-2, 14),
                            st.sampled_from([-2, -1, 0, 1, 2])), max_size=15),
)
def test_validation_property(n, rows):
    """Construction either raises ValueError or yields a valid, canonical constraint set."""
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            C = PairwiseConstraints.from_array(arr, n_samples=n)
        except ValueError:
            bad_index = ((arr[:, :2] < 0) | (arr[:, :2] >= n)).any()
            bad_sign = ~np.isin(arr[:, 2], (-1, 1))
            self_pair = arr[:, 0] == arr[:, 1]
            keys = {}
            conflict = False
            for i, j, s in arr.tolist():
                key = (min(i, j), max(i, j))
                if key in keys and keys[key] != s:
                    conflict = True
                keys.setdefault(key, s)
            assert bad_index or bad_sign.any() or self_pair.any() or conflict
            return
    assert np.all(C.pairs[:, 0] < C.pairs[:, 1])
    assert np.all((C.pairs >= 0) & (C.pairs < n))
    assert np.all(np.isin(C.signs, (-1, 1)))
    assert len(np.unique(C.pairs, axis=0)) == C.n_pairs
    assert {tuple(sorted(r[:2])) for r in arr.tolist()} == {tuple(p) for p in C.pairs.tolist()}


def test_label_reading_is_the_pairs_as_constraints_lists():
    """One reading of partial labels: SideInfo.codes, the listed pairs and KML's similar set
    agree (within-class pairs of labelled points are must-links, the rest cannot-links)."""
    rng = np.random.default_rng(0)
    y = rng.integers(-1, 3, size=40)
    y[:2] = 7  # a class of two
    y[2] = 9  # a class of one: in cannot-links only
    side = check_side_info(y, 40)
    labelled = y != -1
    assert_array_equal(side.codes >= 0, labelled)
    # codes number the classes in sorted label order
    assert_array_equal(side.codes[labelled], np.searchsorted(np.unique(y[labelled]),
                                                             y[labelled]))
    C = as_constraints(y, 40)
    i, j = np.triu_indices(40, k=1)
    both = labelled[i] & labelled[j]
    expected = {(a, b, 1 if y[a] == y[b] else -1)
                for a, b in zip(i[both].tolist(), j[both].tolist(), strict=True)}
    assert set(map(tuple, C.to_array().tolist())) == expected
    S = similar_set(y, 40, "test")
    within = C.must_link
    assert S.n_pairs == len(within)
    assert_array_equal(S.points, np.unique(within))
    # string labels: "-1" is unlabelled in both readings
    ys = np.array(["a", "-1", "a", "b"])
    assert as_constraints(ys, 4).to_array().tolist() == [[0, 2, 1], [0, 3, -1], [2, 3, -1]]
    assert similar_set(ys, 4, "test").n_pairs == 1


def test_must_link_components_close_must_links_transitively():
    C = PairwiseConstraints([[0, 1], [1, 2], [4, 5], [2, 5]], [1, 1, 1, -1], n_samples=7)
    comp = C.must_link_components()
    assert comp[0] == comp[1] == comp[2]
    assert comp[4] == comp[5]
    assert len({comp[0], comp[3], comp[4], comp[6]}) == 4
