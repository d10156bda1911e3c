"""The chessboard generator and the JMLR 2011 constraint protocol of admm-chessboard."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from psdlearn.datasets import make_chessboard
from reproductions.experiments.admm_chessboard import component_constraints, lattice_chessboard


def _components(C):
    graph = coo_matrix((np.ones(C.n_pairs), (C.pairs[:, 0], C.pairs[:, 1])),
                       shape=(C.n_samples,) * 2)
    return connected_components(graph, directed=False)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_component_constraints_stop_at_seventy_percent_components(seed):
    X, y = make_chessboard(100, n_squares=3, random_state=seed)
    C = component_constraints(y, ratio=0.7, random_state=seed)
    assert _components(C) == 70
    # every pair that merges two components lowers the count by one: at least 30 pairs
    assert C.n_pairs >= 30
    signs = np.where(y[C.pairs[:, 0]] == y[C.pairs[:, 1]], 1, -1)
    np.testing.assert_array_equal(C.signs, signs)
    assert len({tuple(p) for p in C.pairs.tolist()}) == C.n_pairs


def test_component_constraints_are_reproducible_and_depend_on_the_seed():
    y = np.repeat([0, 1], 50)
    a = component_constraints(y, random_state=4)
    b = component_constraints(y, random_state=4)
    c = component_constraints(y, random_state=5)
    np.testing.assert_array_equal(a.pairs, b.pairs)
    assert a.pairs.shape != c.pairs.shape or np.any(a.pairs != c.pairs)


def test_lattice_has_one_point_per_square_in_checkerboard_colours():
    X, y = lattice_chessboard(10)
    cells = np.floor(X * 10).astype(int)
    assert len({tuple(c) for c in cells.tolist()}) == 100
    np.testing.assert_array_equal(y, cells.sum(axis=1) % 2)
    assert np.bincount(y).tolist() == [50, 50]


def test_load_chessboard_is_the_default_three_by_three_board():
    from psdlearn.datasets import load

    X, y = load("chessboard")
    X0, y0 = make_chessboard(random_state=0)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    cells = np.floor(X * 3).astype(int)
    np.testing.assert_array_equal(y, cells.sum(axis=1) % 2)
    # every one of the nine squares is occupied, about 11 points each
    counts = np.bincount(cells[:, 0] * 3 + cells[:, 1], minlength=9)
    assert counts.min() >= 5 and counts.sum() == 100
