"""The median heuristic for a kernel's width, the label-free default of
:class:`psdlearn.KernelMetricLearner`."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import pdist
from sklearn.utils import check_random_state

from psdlearn._exact_knn import value_order

__all__ = ["median_heuristic_kernel_gamma"]

#: Points in the sample of the median heuristic.
_GAMMA_SAMPLE = 1000


def median_heuristic_kernel_gamma(X, kernel="rbf", random_state=None):
    """The median heuristic for a kernel coefficient: a width set by the typical distance.

    ``"rbf"``: the inverse median squared Euclidean distance between the points (of a
    random sample of 1000 when there are more); ``"laplacian"``: the inverse median L1
    distance; ``"poly"``: ``1 / n_features``; ``"linear"``: None (no coefficient).
    :class:`~psdlearn.KernelMetricLearner`'s label-free width is this value, except for
    ``"rbf"`` where it is half of it: ``exp(-||x - z||^2 / (2 sigma^2))`` with ``sigma``
    the median distance.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Points.
    kernel : {"rbf", "laplacian", "linear", "poly"}, default="rbf"
        Kernel whose coefficient is set.
    random_state : int, RandomState instance or None, default=None
        Draws the sample when ``n_samples > 1000``.

    Returns
    -------
    float or None
        The coefficient; None for ``"linear"``.

    Raises
    ------
    ValueError
        All points coincide, so that no distance sets the width.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.kml.estimator import median_heuristic_kernel_gamma
    >>> median_heuristic_kernel_gamma(np.array([[0.0], [1.0], [3.0]]))
    0.25
    """
    if kernel == "linear":
        return None
    if kernel == "poly":
        return 1.0 / X.shape[1]
    rng = check_random_state(random_state)
    # the sample is drawn from the rows in value order: any row order gives the same
    sample = X if len(X) <= _GAMMA_SAMPLE else X[value_order(X)[
        rng.choice(len(X), _GAMMA_SAMPLE, replace=False)]]
    dist = pdist(sample, "sqeuclidean" if kernel == "rbf" else "cityblock")
    dist = dist[dist > 0]
    if dist.size == 0:
        raise ValueError("all points coincide: kernel_gamma='auto' cannot be set from "
                         "distances; pass kernel_gamma.")
    return 1.0 / float(np.median(dist))
