"""Constraint hygiene: components, transitive closure, conflicts, duplicates, union."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import psdlearn as pl
from psdlearn.constraints import ConstraintConflictWarning, PairwiseConstraints


def _brute_force(n, pairs, signs):
    """Closure and conflicts by a plain union-find, written independently of the library."""
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a

    for (a, b), s in zip(pairs, signs, strict=True):
        if s == 1:
            parent[find(a)] = find(b)
    root = [find(a) for a in range(n)]
    conflicts = [k for k, ((a, b), s) in enumerate(zip(pairs, signs, strict=True))
                 if s == -1 and root[a] == root[b]]
    involved = {a for p in pairs for a in p}
    must = {(a, b) for a in range(n) for b in range(a + 1, n)
            if root[a] == root[b] and a in involved and b in involved}
    cannot = set()
    for (a, b), s in zip(pairs, signs, strict=True):
        if s == -1:
            for u in range(n):
                for v in range(n):
                    if root[u] == root[a] and root[v] == root[b]:
                        cannot.add((min(u, v), max(u, v)))
    return root, conflicts, must, cannot


@st.composite
def constraint_sets(draw):
    n = draw(st.integers(2, 12))
    m = draw(st.integers(0, 20))
    rows = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                         min_size=m, max_size=m))
    seen, pairs = set(), []
    for a, b in rows:
        key = (min(a, b), max(a, b))
        if a != b and key not in seen:
            seen.add(key)
            pairs.append(key)
    signs = draw(st.lists(st.sampled_from([1, -1]), min_size=len(pairs),
                          max_size=len(pairs)))
    return n, sorted(pairs), signs


@settings(max_examples=150, deadline=None)
@given(constraint_sets())
def test_components_conflicts_closure_agree_with_union_find(case):
    n, pairs, signs = case
    order = np.argsort([a * n + b for a, b in pairs], kind="stable")
    signs = [signs[k] for k in order]
    C = PairwiseConstraints(np.array(pairs, dtype=np.int64).reshape(-1, 2), signs,
                            n_samples=n)
    root, conflicts, must, cannot = _brute_force(n, C.pairs.tolist(), C.signs.tolist())
    comp = C.must_link_components()
    # same partition: equal components exactly when equal roots
    assert np.array_equal(comp[:, None] == comp[None, :],
                          np.equal.outer(root, root))
    assert C.conflicts().tolist() == conflicts
    if conflicts:
        with pytest.raises(ValueError, match="inconsistent"):
            C.closure()
        return
    D = C.closure()
    assert {tuple(p) for p in D.must_link.tolist()} == must
    assert {tuple(p) for p in D.cannot_link.tolist()} == cannot
    # the closure is closed: closing it again adds nothing, and it contains C
    assert D.closure().to_array().tolist() == D.to_array().tolist()
    assert set(map(tuple, C.to_array().tolist())) <= set(map(tuple, D.to_array().tolist()))


def test_conflicts_hand_made():
    # must chain 0-1-2-3; cannot 0-3 (conflict: it closes the cycle), 1-4 and 5-6 (fine)
    C = PairwiseConstraints([[0, 1], [1, 2], [2, 3], [0, 3], [1, 4], [5, 6]],
                            [1, 1, 1, -1, -1, -1], n_samples=7)
    bad = C.conflicts()
    assert C.pairs[bad].tolist() == [[0, 3]]
    assert C.signs[bad].tolist() == [-1]
    E = PairwiseConstraints([[0, 1], [1, 2], [0, 2], [3, 4]], [1, 1, -1, -1])
    assert E.pairs[E.conflicts()].tolist() == [[0, 2]]
    assert PairwiseConstraints([[0, 1]], [-1]).conflicts().size == 0
    with pytest.raises(ValueError, match=r"inconsistent constraints: 1 cannot-link\(s\) "
                       r"join points that must-links connect: \(0, 2\)"):
        E.closure()


def test_duplicates_and_opposite_duplicates_are_named():
    with pytest.warns(UserWarning, match=r"2 duplicated constraint\(s\) merged: \(0, 1\), "
                      r"\(2, 3\)"):
        C = PairwiseConstraints([[0, 1], [1, 0], [3, 2], [2, 3]], [1, 1, -1, -1])
    assert C.to_array().tolist() == [[0, 1, 1], [2, 3, -1]]
    with pytest.raises(ValueError, match=r"2 pair\(s\) marked both must-link and "
                       r"cannot-link: \(0, 1\), \(4, 5\)"):
        PairwiseConstraints([[1, 0], [0, 1], [4, 5], [5, 4], [2, 3]], [1, -1, -1, 1, 1])


def test_union_merges_and_keeps_the_constructor_rules():
    A = PairwiseConstraints([[0, 1], [2, 3]], [1, -1], n_samples=5)
    B = PairwiseConstraints([[3, 4]], [1], n_samples=6)
    U = A.union(B)
    assert U.to_array().tolist() == [[0, 1, 1], [2, 3, -1], [3, 4, 1]]
    assert U.n_samples == 6
    assert A.n_pairs == 2  # unchanged
    with pytest.warns(UserWarning, match=r"merged: \(0, 1\)"):
        assert A.union([[1, 0, 1]]).n_pairs == 2
    with pytest.raises(ValueError, match=r"both must-link and cannot-link: \(2, 3\)"):
        A.union([[2, 3, 1]])


def test_fit_warns_on_conflicts_and_names_them():
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 20, 20, random_state=0)
    a, b = C.must_link[0]
    # a cannot-link between the two ends of a must-link chain a - b - k
    used = set(C.pairs.ravel().tolist())
    k = next(j for j in range(len(y)) if y[j] == y[a] and j not in used)
    bad = C.union([[b, k, 1], [a, k, -1]])
    with pytest.warns(ConstraintConflictWarning, match=rf"\({min(a, k)}, {max(a, k)}\)"):
        pl.NPKL(loss="square", max_iter=300, tol=1e-3, certificate_tol=None,
                random_state=0).fit(X, bad)
    # consistent constraints fit without that warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstraintConflictWarning)
        pl.NPKL(loss="square", max_iter=300, tol=1e-3, certificate_tol=None,
                random_state=0).fit(X, C)
