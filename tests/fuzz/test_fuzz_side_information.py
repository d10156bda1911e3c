"""Property-based tests of the side-information objects and functions.

``PairwiseConstraints`` (constructor, ``from_array``, ``from_labels``, ``union``,
``closure``, ``conflicts``, ``must_link_components``), ``Triplets``,
``triplets_from_labels`` and ``triplets_from_constraints`` on generated tables: any
dtype and shape, duplicated and contradictory pairs, self-pairs, negative and
out-of-range indices, ``n_samples`` of any type.
"""

from __future__ import annotations

import numpy as np
from _fuzz import DTYPES, Rejected, call, fuzz_settings, matrices, pair_rows, partial_labels
from hypothesis import given
from hypothesis import strategies as st

import psdlearn as pl

N_SAMPLES = st.one_of(st.none(), st.integers(-1, 14), st.sampled_from([2.0, 3.5, "4", True]))


@st.composite
def index_tables(draw, width):
    """An index table of ``width`` columns (or a wrong width), in any dtype."""
    n = draw(st.integers(0, 12))
    rows = draw(pair_rows(n)) if width == 2 else np.array(
        draw(st.lists(st.lists(st.integers(-1, n + 1), min_size=3, max_size=3), max_size=8)),
        dtype=np.int64).reshape(-1, 3)
    table = rows[:, :2] if width == 2 else rows
    if draw(st.integers(0, 5)) == 0:
        table = table[:, :1]
    dtype = draw(st.sampled_from(DTYPES))
    with np.errstate(invalid="ignore"):
        table = table.astype(dtype)
    if table.dtype.kind == "f" and table.size and draw(st.booleans()):
        table = table.copy()
        table.flat[0] = draw(st.sampled_from([np.nan, np.inf, 0.5, 1e30]))
    return draw(st.sampled_from([table, table.tolist()])), rows[:, 2]


def _check_constraints(C, n_samples):
    assert C.pairs.dtype == np.int64 and C.signs.dtype == np.int64
    assert C.pairs.shape == (C.n_pairs, 2) and C.signs.shape == (C.n_pairs,)
    assert np.all(C.pairs[:, 0] < C.pairs[:, 1])
    assert np.all(np.isin(C.signs, (-1, 1)))
    assert len({tuple(p) for p in C.pairs.tolist()}) == C.n_pairs
    assert C.pairs.size == 0 or C.pairs.max() < C.n_samples
    if isinstance(n_samples, int) and n_samples >= 0:
        assert C.n_samples == n_samples


@fuzz_settings(4.0)
@given(data=st.data())
def test_pairwise_constraints_constructor(data):
    pairs, signs = data.draw(index_tables(2), label="pairs")
    signs = data.draw(st.sampled_from([signs, signs.astype(np.float64), signs[:-1],
                                       signs.astype(str), signs.reshape(-1, 1)]),
                      label="signs")
    n_samples = data.draw(N_SAMPLES, label="n_samples")
    try:
        C = call(pl.PairwiseConstraints, pairs, signs, n_samples=n_samples)
    except Rejected:
        return
    _check_constraints(C, n_samples)
    assert len(C.must_link) == C.n_must and len(C.cannot_link) == C.n_cannot
    comp = C.must_link_components()
    assert comp.shape == (C.n_samples,)
    bad = C.conflicts()
    assert np.all(C.signs[bad] == -1)
    try:
        closed = call(C.closure)
    except Rejected:
        assert bad.size > 0
    else:
        assert bad.size == 0
        _check_constraints(closed, C.n_samples)
        assert {tuple(p) for p in C.pairs.tolist()} <= {tuple(p) for p in closed.pairs.tolist()}
    again = pl.PairwiseConstraints.from_array(C.to_array(), n_samples=C.n_samples)
    assert np.array_equal(again.pairs, C.pairs) and np.array_equal(again.signs, C.signs)


@fuzz_settings(4.0)
@given(data=st.data())
def test_from_array_and_union(data):
    n = data.draw(st.integers(0, 10), label="n")
    rows = data.draw(pair_rows(n), label="rows")
    rows = data.draw(st.sampled_from([rows, rows.astype(np.float64), rows.tolist(),
                                      rows[:, :2], rows.astype(object)]), label="array")
    n_samples = data.draw(st.sampled_from([None, n]), label="n_samples")
    try:
        C = call(pl.PairwiseConstraints.from_array, rows, n_samples=n_samples)
    except Rejected:
        return
    _check_constraints(C, n_samples)
    other = data.draw(pair_rows(n), label="other")
    try:
        U = call(C.union, other)
    except Rejected:
        return
    _check_constraints(U, None)
    assert {tuple(p) for p in C.pairs.tolist()} <= {tuple(p) for p in U.pairs.tolist()}


@fuzz_settings(4.0)
@given(data=st.data())
def test_from_labels(data):
    n = data.draw(st.integers(0, 15), label="n")
    y = data.draw(partial_labels(n), label="y")
    n_must = data.draw(st.sampled_from([0, 1, 3, 0.5, 0.0, -1, 1e9, np.nan, "2", None]),
                       label="n_must")
    n_cannot = data.draw(st.sampled_from([0, 2, 0.6, -0.5, np.inf, True]), label="n_cannot")
    try:
        C = call(pl.PairwiseConstraints.from_labels, y, n_must, n_cannot, random_state=0)
    except Rejected:
        return
    _check_constraints(C, len(y))
    labels = np.asarray(y)
    for (i, j), s in zip(C.pairs.tolist(), C.signs.tolist(), strict=True):
        assert str(labels[i]) != "-1" and str(labels[j]) != "-1"
        assert (labels[i] == labels[j]) == (s == 1)


@fuzz_settings(3.0)
@given(data=st.data())
def test_triplets(data):
    table, _ = data.draw(index_tables(3), label="triplets")
    n_samples = data.draw(N_SAMPLES, label="n_samples")
    try:
        T = call(pl.Triplets, table, n_samples=n_samples)
    except Rejected:
        return
    t = T.triplets
    assert t.dtype == np.int64 and t.shape == (T.n_triplets, 3)
    assert np.all((t[:, 0] != t[:, 1]) & (t[:, 0] != t[:, 2]) & (t[:, 1] != t[:, 2]))
    assert t.size == 0 or (t.min() >= 0 and t.max() < T.n_samples)


@fuzz_settings(2.0)
@given(data=st.data())
def test_triplets_from_labels(data):
    X = data.draw(matrices(max_rows=12, max_cols=3, sparse=False), label="X")
    n = len(X) if isinstance(X, list) else X.shape[0]
    y = data.draw(partial_labels(n), label="y")
    n_triplets = data.draw(st.sampled_from([None, 0, 3, 100, -1]), label="n_triplets")
    n_neighbors = data.draw(st.sampled_from([1, 2, 0]), label="n_neighbors")
    try:
        T = call(pl.triplets_from_labels, X, y, n_triplets=n_triplets, random_state=0,
                 n_neighbors=n_neighbors)
    except Rejected:
        return
    assert T.dtype == np.int64 and T.ndim == 2 and T.shape[1] == 3
    labels = np.asarray(y).ravel()
    for i, j, k in T.tolist():
        assert labels[i] == labels[j] != labels[k]
    call(pl.Triplets, T, n_samples=n)


@fuzz_settings(2.0)
@given(data=st.data())
def test_triplets_from_constraints(data):
    n = data.draw(st.integers(2, 10), label="n")
    rows = data.draw(pair_rows(n, valid=True), label="rows")
    C = pl.PairwiseConstraints(rows[:, :2], rows[:, 2], n_samples=n)
    n_triplets = data.draw(st.sampled_from([None, 0, 2, -1]), label="n_triplets")
    try:
        T = call(pl.triplets_from_constraints, C, n_triplets=n_triplets, random_state=0)
    except Rejected:
        return
    assert T.dtype == np.int64 and T.ndim == 2 and T.shape[1] == 3
    must = {tuple(p) for p in C.must_link.tolist()}
    cannot = {tuple(p) for p in C.cannot_link.tolist()}
    for i, j, k in T.tolist():
        assert tuple(sorted((i, j))) in must and tuple(sorted((i, k))) in cannot
