"""Synthetic data sets of the papers psdlearn reproduces.

All generators return ``(X, y)`` with ``X`` float64 C-contiguous of shape
``(n_samples, n_features)`` and ``y`` int64 in ``0 .. C-1``, take ``random_state``
(None, an int or a :class:`numpy.random.RandomState`, resolved by
:func:`sklearn.utils.check_random_state`) and are deterministic for a fixed seed. Classes
are as balanced as ``n_samples`` allows (the first classes get the remainder).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from ._common import finalize

__all__ = [
    "make_chessboard",
    "make_double_spiral",
    "make_triplet_synthetic",
    "make_two_gaussians",
    "make_xor",
]


def _check_number(value, name, min_value, *, integer=False, strict=False):
    """``value`` as an int (``integer``) or a finite float ``>= min_value`` (``>`` if ``strict``).

    The one argument check of the generators; the error names the argument: TypeError for
    a wrong type (bools are refused), ValueError for a value out of range.
    """
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {'an int' if integer else 'a real number'}, got "
                        f"{type(value).__name__}")
    value = int(value) if integer else float(value)
    if not np.isfinite(value) or value < min_value or (strict and value == min_value):
        raise ValueError(f"{name} must be {'' if integer else 'finite and '}"
                         f"{'>' if strict else '>='} {min_value}, got {value}")
    return value


def _class_sizes(n_samples, n_classes):
    """Split ``n_samples`` into ``n_classes`` near-equal sizes, larger ones first."""
    base, extra = divmod(n_samples, n_classes)
    return [base + (c < extra) for c in range(n_classes)]


def _shuffled(X, y, rng, shuffle):
    """Optionally permute the rows, then return the finalized arrays."""
    if shuffle:
        perm = rng.permutation(len(y))
        X, y = X[perm], y[perm]
    return finalize(X, y)


def make_two_gaussians(n_samples, n_features=10, random_state=None, *, shuffle=True):
    """Two Gaussian classes with means ``+1`` and ``-1`` (Hu & Kwok, IJCAI 2013, §4.2).

    Class 0 is drawn from ``N(1, I)`` and class 1 from ``N(-1, I)``, where ``1`` is the
    all-ones vector; this is the synthetic set of the scalability experiments of Hu & Kwok 2013
    (10 features there).

    Parameters
    ----------
    n_samples : int
        Number of points (>= 2); class 0 gets the extra point when it is odd.
    n_features : int, default=10
        Dimension.
    random_state : None, int or RandomState
        Seed.
    shuffle : bool, default=True
        Shuffle the rows; otherwise class 0 comes first.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
    y : ndarray of shape (n_samples,), dtype int64
    """
    n_samples = _check_number(n_samples, "n_samples", 2, integer=True)
    n_features = _check_number(n_features, "n_features", 1, integer=True)
    rng = check_random_state(random_state)
    sizes = _class_sizes(n_samples, 2)
    X = rng.standard_normal((n_samples, n_features))
    X[: sizes[0]] += 1.0
    X[sizes[0]:] -= 1.0
    y = np.repeat(np.arange(2), sizes)
    return _shuffled(X, y, rng, shuffle)


def make_xor(n_samples=400, cluster_std=0.23, random_state=None, *, shuffle=True):
    """XOR data: four Gaussian blobs at the corners ``(+-1, +-1)``, diagonal corners alike.

    Yeung, Chang & Dai (IJCAI 2007, §5.2 and Table 1) use an XOR set of 400 points (360
    for training plus 40 new points, Fig. 1) and one of 8,000 points, without giving the
    generator. Here each of the four corners ``(1, 1), (-1, -1)`` (class 0) and
    ``(1, -1), (-1, 1)`` (class 1) gets a quarter of the points, drawn from an isotropic
    Gaussian of standard deviation ``cluster_std``. The default ``cluster_std = 0.23`` is
    chosen so that the class-separation measure J of the paper's eq. (17) computed in the
    input space is about 1.244, matching the paper's 1.2460 for "input data" in Table 1
    (J depends only on ``cluster_std``; 0.20 gives 1.264 and 0.25 gives 1.232). No linear
    map separates the classes, a Gaussian-kernel metric does.

    Parameters
    ----------
    n_samples : int, default=400
        Number of points (>= 4).
    cluster_std : float, default=0.23
        Standard deviation of each blob (> 0).
    random_state : None, int or RandomState
        Seed.
    shuffle : bool, default=True
        Shuffle the rows; otherwise they are ordered by corner.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), dtype float64
    y : ndarray of shape (n_samples,), dtype int64
        0 for the corners where the two coordinates have the same sign, 1 otherwise.
    """
    n_samples = _check_number(n_samples, "n_samples", 4, integer=True)
    cluster_std = _check_number(cluster_std, "cluster_std", 0.0, strict=True)
    rng = check_random_state(random_state)
    corners = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    corner_of = np.repeat(np.arange(4), _class_sizes(n_samples, 4))
    X = corners[corner_of] + cluster_std * rng.standard_normal((n_samples, 2))
    y = (corner_of >= 2).astype(np.int64)
    return _shuffled(X, y, rng, shuffle)


def make_chessboard(n_samples=100, n_squares=3, random_state=None, *, shuffle=True):
    """Points on a chessboard in the unit square, labelled by the colour of their square.

    The NPKL papers (Hoi et al. 2007; Zhuang et al. JMLR 2011, Table 1; Hu & Kwok 2013,
    Table 1) use a "chessboard" set of 100 two-dimensional points in 2 classes whose file
    is not available. This generator follows the name: ``[0, 1]^2`` is cut into an
    ``n_squares x n_squares`` board and a point in square ``(i, j)`` gets label
    ``(i + j) mod 2``. To keep the classes balanced (``n_samples // 2`` each, class 0 gets
    the odd point), each point first picks one of the squares of its colour uniformly at
    random and is then placed uniformly inside it. With the defaults there are about 11
    points per square, and plain k-means scores at chance level (about 50% Rand index, as
    in the papers) while constraint-guided kernels do well.

    The default board is 3 x 3: of the boards from 2 x 2 to 5 x 5 and a
    one-point-per-square 10 x 10 lattice, it is the design on which the papers' chessboard
    numbers are reproduced best.

    Parameters
    ----------
    n_samples : int, default=100
        Number of points (>= 2).
    n_squares : int, default=3
        Squares per side (>= 2).
    random_state : None, int or RandomState
        Seed.
    shuffle : bool, default=True
        Shuffle the rows; otherwise class 0 comes first.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), dtype float64
        Coordinates in ``[0, 1)``.
    y : ndarray of shape (n_samples,), dtype int64
    """
    n_samples = _check_number(n_samples, "n_samples", 2, integer=True)
    n_squares = _check_number(n_squares, "n_squares", 2, integer=True)
    rng = check_random_state(random_state)
    ii, jj = np.meshgrid(np.arange(n_squares), np.arange(n_squares), indexing="ij")
    cells = np.column_stack([ii.ravel(), jj.ravel()])
    colour = cells.sum(axis=1) % 2
    y = np.repeat(np.arange(2), _class_sizes(n_samples, 2))
    X = np.empty((n_samples, 2))
    for c in (0, 1):
        rows = np.flatnonzero(y == c)
        own = cells[colour == c]
        picked = own[rng.randint(len(own), size=len(rows))]
        X[rows] = (picked + rng.uniform(size=(len(rows), 2))) / n_squares
    np.minimum(X, np.nextafter(1.0, 0.0), out=X)  # keep [0, 1) despite rounding
    return _shuffled(X, y, rng, shuffle)


def make_double_spiral(n_samples=100, noise=0.05, random_state=None, *, n_turns=1.5,
                       shuffle=True):
    """Two interleaved three-dimensional spirals (conical helices), one per class.

    The NPKL papers use a "double spiral" set of 100 three-dimensional points in 2
    classes whose file is not available. Here each class is a curve parametrised by
    ``t ~ U(0, 1)``::

        theta = 2 pi n_turns t + pi c,   r = 0.2 + 0.8 t,
        x = (r cos theta, r sin theta, 2 t) + noise * N(0, I_3),

    for class ``c`` in {0, 1}: the two spirals wind around the z axis with the same
    radius and height, half a turn apart, so they interleave. Points of the two classes
    at the same ``t`` are ``2 r >= 0.4`` apart; above a given point the other spiral
    passes ``1 / n_turns`` higher (and the same spiral ``2 / n_turns`` higher). With the
    defaults about 97-98% of the 5-nearest-neighbour edges join points of one class,
    so a neighbourhood graph follows each spiral, while the class means nearly coincide
    and k-means is at chance level (as in the papers).

    Parameters
    ----------
    n_samples : int, default=100
        Number of points (>= 2); class 0 gets the odd point.
    noise : float, default=0.05
        Standard deviation of the isotropic Gaussian noise added to every point (>= 0).
    random_state : None, int or RandomState
        Seed.
    n_turns : float, default=1.5
        Number of turns of each spiral (> 0).
    shuffle : bool, default=True
        Shuffle the rows; otherwise class 0 comes first.

    Returns
    -------
    X : ndarray of shape (n_samples, 3), dtype float64
    y : ndarray of shape (n_samples,), dtype int64
    """
    n_samples = _check_number(n_samples, "n_samples", 2, integer=True)
    noise = _check_number(noise, "noise", 0.0)
    n_turns = _check_number(n_turns, "n_turns", 0.0, strict=True)
    rng = check_random_state(random_state)
    y = np.repeat(np.arange(2), _class_sizes(n_samples, 2))
    t = rng.uniform(size=n_samples)
    theta = 2.0 * np.pi * n_turns * t + np.pi * y
    r = 0.2 + 0.8 * t
    X = np.column_stack([r * np.cos(theta), r * np.sin(theta), 2.0 * t])
    X += noise * rng.standard_normal(X.shape)
    return _shuffled(X, y, rng, shuffle)


def make_triplet_synthetic(n_samples=600, n_features=24, random_state=None, *,
                           n_informative=4, n_classes=3, class_sep=3.0, shuffle=True):
    """Synthetic set of the first PSDBoost experiment (Shen, Welsh & Wang, NIPS 2008, §6).

    The paper only says "600 points in 24 dimensions", with triplets ``(i, j, k)`` where
    ``j`` is the nearest neighbour of ``i`` in its class and ``k`` its nearest neighbour
    in another class, subsampled to 550 for training. The generator below is our choice,
    made so that a learned Mahalanobis metric has something to find:

    - ``n_classes`` class centres are drawn in the first ``n_informative`` coordinates as
      random directions of norm ``class_sep`` (the other coordinates of the centres are 0);
    - every point is its class centre plus ``N(0, I)`` noise in all ``n_features``
      coordinates.

    The ``n_features - n_informative`` uninformative coordinates carry as much variance
    as the informative ones, so Euclidean nearest neighbours mix the classes while a
    metric concentrated on the informative subspace separates them. The triplets
    themselves are built by the constraint utilities, not here.

    Parameters
    ----------
    n_samples : int, default=600
        Number of points (>= n_classes).
    n_features : int, default=24
        Dimension (>= n_informative).
    random_state : None, int or RandomState
        Seed (also fixes the class centres).
    n_informative : int, default=4
        Number of coordinates in which the class centres differ (>= 1).
    n_classes : int, default=3
        Number of classes (>= 2).
    class_sep : float, default=3.0
        Distance of each class centre from the origin (> 0).
    shuffle : bool, default=True
        Shuffle the rows; otherwise ordered by class.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
    y : ndarray of shape (n_samples,), dtype int64
    """
    n_classes = _check_number(n_classes, "n_classes", 2, integer=True)
    n_samples = _check_number(n_samples, "n_samples", n_classes, integer=True)
    n_informative = _check_number(n_informative, "n_informative", 1, integer=True)
    n_features = _check_number(n_features, "n_features", n_informative, integer=True)
    class_sep = _check_number(class_sep, "class_sep", 0.0, strict=True)
    rng = check_random_state(random_state)
    centres = rng.standard_normal((n_classes, n_informative))
    centres *= class_sep / np.linalg.norm(centres, axis=1, keepdims=True)
    y = np.repeat(np.arange(n_classes), _class_sizes(n_samples, n_classes))
    X = rng.standard_normal((n_samples, n_features))
    X[:, :n_informative] += centres[y]
    return _shuffled(X, y, rng, shuffle)
