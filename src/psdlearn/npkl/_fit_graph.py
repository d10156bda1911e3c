"""The graph of :class:`psdlearn.npkl.NPKL`: the Laplacian ``L`` built from ``X``.

``X`` is read according to the estimator's ``graph`` parameter: feature vectors (``"knn"``:
the Gaussian kNN graph of :func:`psdlearn.graph.knn_graph`), a sparse kNN distance graph
(``"precomputed_nearest_neighbors"``: the same Gaussian weights on its stored neighbours)
or the Laplacian itself (``"precomputed"``). The built graphs give the normalized Laplacian
``(1 + delta) I - D^{-1/2} S D^{-1/2}`` (:func:`psdlearn.graph.normalized_laplacian`).
Functions of the estimator's parameters; the estimator sets the fitted attributes they
return.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from psdlearn._training_rows import TrainingRows
from psdlearn.graph import (
    graph_from_neighbors,
    knn_graph,
    knn_laplacian,
    neighbors_from_distance_graph,
    normalized_laplacian,
)
from psdlearn.npkl.problem import permuted


def check_square(X, what, graph):
    """``X`` as a finite square CSR matrix of at least 2 samples (``graph`` for messages)."""
    A = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else sp.csr_matrix(
        np.asarray(X, dtype=np.float64))
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"with graph={graph!r}, X must be a square (n, n) {what}, "
                         f"got shape {A.shape}.")
    if A.shape[0] < 2:
        raise ValueError(f"the {what} must have at least 2 samples.")
    if not np.all(np.isfinite(A.data)):
        raise ValueError(f"the precomputed {what} contains NaN or inf.")
    return A


def _gaussian_graph(dist, ind, k, sigma):
    """The graph of ``graph="precomputed_nearest_neighbors"``, as :func:`knn_graph`:
    ``(S, sigma, k)``."""
    from psdlearn.graph import _check_n_neighbors, _resolve_sigma

    k = _check_n_neighbors(k, len(dist))
    sigma = _resolve_sigma(sigma, dist)
    return graph_from_neighbors(dist[:, :k], ind[:, :k], sigma), sigma, k


def build_laplacian(X, *, graph, n_neighbors, sigma, delta, knn_method, n_jobs,
                    random_state, verbose):
    """The Laplacian of ``NPKL.fit`` and the fitted attributes of its graph.

    Parameters
    ----------
    X : array-like or sparse matrix
        With ``graph="knn"`` the validated feature matrix (``validate_data`` of the
        estimator); otherwise the square Laplacian or kNN distance graph.
    graph, n_neighbors, sigma, delta, knn_method, n_jobs, random_state, verbose
        The parameters of :class:`psdlearn.npkl.NPKL`.

    Returns
    -------
    L : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
    fitted : dict
        ``sigma_``, ``n_neighbors_``, ``degrees_``, ``neighbor_index_``, ``graph_info_``
        (None where the graph has none), plus ``n_features_in_`` for the precomputed
        graphs and ``X_fit_`` for ``"knn"``, and ``_training_rows``, the lookup of the
        input's rows for ``NPKL.transform``.
    """
    fitted = dict.fromkeys(("sigma_", "n_neighbors_", "degrees_", "neighbor_index_",
                            "graph_info_"))
    if graph == "precomputed":
        L = check_square(X, "Laplacian", graph)
        if abs(L - L.T).max() > 1e-10 * max(abs(L).max(), 1.0):
            raise ValueError("the precomputed Laplacian must be symmetric.")
        if np.any(L.diagonal() <= 0):
            raise ValueError("the precomputed Laplacian must have a positive diagonal.")
        L.sort_indices()
        fitted["n_features_in_"] = L.shape[0]
        fitted["_training_rows"] = TrainingRows(L)
        return L, fitted
    if graph == "precomputed_nearest_neighbors":
        D = check_square(X, "kNN distance graph", graph)
        dist, ind = neighbors_from_distance_graph(D)
        k = min(n_neighbors, dist.shape[1])
        if k < n_neighbors:
            # stacklevel: here, NPKL._build_laplacian, fit, its _fit_context, the caller
            warnings.warn(f"the distance graph stores {dist.shape[1]} neighbours per row, "
                          f"fewer than n_neighbors={n_neighbors}: using {k}.",
                          UserWarning, stacklevel=5)
        fitted["n_features_in_"] = D.shape[0]
        fitted["_training_rows"] = TrainingRows(D)
        S, fitted["sigma_"], fitted["n_neighbors_"] = _gaussian_graph(dist, ind, k, sigma)
    else:
        S, fitted["sigma_"], fitted["neighbor_index_"], fitted["graph_info_"] = knn_graph(
            X, n_neighbors=n_neighbors, sigma=sigma, knn_method=knn_method, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose, return_index=True)
        fitted["n_neighbors_"] = fitted["graph_info_"]["n_neighbors"]
        fitted["X_fit_"] = X
        fitted["_training_rows"] = TrainingRows(X)
    fitted["degrees_"] = np.asarray(S.sum(axis=1)).ravel()
    return normalized_laplacian(S, delta), fitted


def in_order(L, pairs, order):
    """``L`` and the constraint ``pairs`` with the samples renumbered: new sample ``k`` is
    sample ``order[k]`` (unchanged when ``order`` is None); pairs stay ``i < j``, in their
    order."""
    if order is None:
        return L, pairs
    L, pairs, _ = permuted(L, pairs, order)
    return L, pairs


def joint_laplacian(X_fit, X, *, n_neighbors, sigma, delta, knn_method, n_jobs,
                    random_state):
    """The normalized kNN Laplacian over the training points then ``X`` (``transform_joint``),
    with the training ``sigma``."""
    both = (sp.vstack([sp.csr_matrix(X_fit), sp.csr_matrix(X)]).tocsr()
            if sp.issparse(X) or sp.issparse(X_fit) else np.vstack([X_fit, X]))
    return knn_laplacian(both, n_neighbors=n_neighbors, sigma=sigma, delta=delta,
                         knn_method=knn_method, n_jobs=n_jobs, random_state=random_state)


def transform_neighbors(X, *, graph, n_train, n_neighbors, index, n_neighbors_transform):
    """``(dist, ind)``: the training neighbours of the new points of ``NPKL.transform``.

    ``X`` is the validated feature matrix (``graph="knn"``: the ``n_neighbors_transform``
    nearest by ``index``) or a sparse ``(n_new, n_train)`` distance graph
    (``"precomputed_nearest_neighbors"``: its ``n_neighbors`` nearest stored ones); a
    precomputed Laplacian has no out-of-sample extension.
    """
    if graph == "precomputed":
        raise ValueError(
            "transform needs feature vectors or distances: when the model was fit with "
            "graph='precomputed' (a Laplacian) it maps the rows of the training Laplacian "
            "only (to their rows of embedding_), and X has other rows."
        )
    if graph == "precomputed_nearest_neighbors":
        if not sp.issparse(X) or X.shape[1] != n_train:
            raise ValueError(
                "with graph='precomputed_nearest_neighbors', transform takes a sparse "
                f"(n_new, {n_train}) distance graph to the training points.")
        return neighbors_from_distance_graph(X, n_neighbors=n_neighbors)
    return index.kneighbors(X, n_neighbors=n_neighbors_transform)


def is_training_data(X, graph, X_fit, n_train):
    """Whether ``X`` is the training input (``None``, the same object or equal values).

    With a precomputed graph (``X_fit`` None) any square ``X`` of the training size is.
    """
    if X is None:
        return True
    shape = X.shape if hasattr(X, "shape") else np.shape(X)
    if graph != "knn":
        return shape == (n_train,) * 2
    if X is X_fit:
        return True
    if shape != X_fit.shape:
        return False
    if sp.issparse(X) or sp.issparse(X_fit):
        return sp.issparse(X) and sp.issparse(X_fit) and (X != X_fit).nnz == 0
    return bool(np.array_equal(np.asarray(X, dtype=np.float64), X_fit))
