"""Clustering with a learned kernel: kernel k-means and the constrained-clustering estimator.

For ``K = E E^T`` the feature map of point ``i`` is the row ``e_i``, so kernel k-means on
``K`` is ordinary k-means on the rows of ``E``: both minimize
``sum_i ||phi(x_i) - mu_{c(i)}||^2`` with ``||phi(x_i) - phi(x_j)||^2 = K_ii + K_jj - 2 K_ij``.
:class:`ConstrainedClustering` learns ``E`` from side information with any psdlearn
learner and clusters it so.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClusterMixin, clone
from sklearn.cluster import KMeans
from sklearn.metrics import euclidean_distances
from sklearn.utils import check_array, check_random_state, get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn._cluster_kernels import (
    components,
    count_violations,
    greedy_assign,
    group_sums,
    saturation_assign,
)
from psdlearn._compat import BaseEstimator, Interval, StrOptions, _fit_context
from psdlearn._training_rows import TrainingRows
from psdlearn.constraints import check_side_info

__all__ = ["ConstrainedClustering", "kernel_kmeans"]


def kernel_kmeans(E, n_clusters, n_init=20, random_state=None):
    """Cluster the points of the kernel ``K = E E^T`` by k-means on the rows of ``E``.

    Parameters
    ----------
    E : array-like of shape (n_samples, rank)
        Embedding (e.g. ``NPKL.embedding_``).
    n_clusters : int
        Number of clusters (the papers use the true number of classes).
    n_init : int, default=20
        Random restarts; the best inertia is kept (the papers' 20 restarts).
    random_state : int, RandomState instance or None

    Returns
    -------
    labels : ndarray of shape (n_samples,), int64
        Cluster index of each point.
    """
    E = check_array(E, dtype=np.float64, input_name="E")
    if not 1 <= n_clusters <= E.shape[0]:
        raise ValueError(f"n_clusters must be in [1, {E.shape[0]}], got {n_clusters}.")
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=random_state)
    return km.fit_predict(E).astype(np.int64)


def constraint_units(y, n_samples, *, check_conflicts=True):
    """Must-link units and the cannot-links between them, read from side information.

    Parameters
    ----------
    y : PairwiseConstraints, Triplets, array-like or None
        Side information as :meth:`ConstrainedClustering.fit` takes it.
    n_samples : int
    check_conflicts : bool, default=True
        Warn of cannot-links inside must-link components (:func:`check_side_info`).

    Returns
    -------
    units : ndarray of shape (n_samples,), int64, or None
        Unit of each sample, ``0 .. n_units - 1``: the connected components of the
        must-link graph (for partial labels, the labelled points of one class); a sample in
        no must-link is a unit of its own. None when ``y`` holds no pairs (triplets, None).
    edges : ndarray of shape (p, 2), int64
        Distinct unit pairs ``u < v`` joined by at least one cannot-link.
    n_conflicts : int
        Cannot-links inside one unit (contradicting the must-links); they are dropped.
    """
    side = check_side_info(y, n_samples, accept=("labels", "pairs", "triplets"),
                           required=False, check_conflicts=check_conflicts)
    if side.kind == "pairs":
        C = side.constraints
        return _pair_units(C.n_samples, C.must_link, C.cannot_link)
    if side.kind == "labels":
        return _label_units(side.codes)
    return None, np.empty((0, 2), np.int64), 0


def _pair_units(n_samples, must_link, cannot_link):
    """:func:`constraint_units` of pairs given as their must-links and cannot-links."""
    units = components(n_samples, np.ascontiguousarray(must_link, dtype=np.int64))
    a, b = units[cannot_link[:, 0]], units[cannot_link[:, 1]]
    inside = a == b
    n_conflicts = int(inside.sum())
    if n_conflicts:
        # a component that contradicts itself is not trusted as a unit: its points become
        # units of their own (the cannot-links that touch them still count)
        bad = np.isin(units, a[inside])
        units[bad] = units.max() + 1 + np.arange(bad.sum())
        units = np.unique(units, return_inverse=True)[1].astype(np.int64)
        a, b = units[cannot_link[:, 0]], units[cannot_link[:, 1]]
    return units, _unit_edges(a, b), n_conflicts


def _label_units(codes):
    """:func:`constraint_units` of partial labels given as class codes (``-1`` = none)."""
    # every pair of labelled points is a constraint: one unit per class, and a
    # cannot-link between every two classes (the pairs are never listed)
    free = codes < 0
    units = np.empty(len(codes), np.int64)
    units[~free] = np.unique(codes[~free], return_inverse=True)[1].ravel()
    n_classes = int(units[~free].max()) + 1 if (~free).any() else 0
    units[free] = n_classes + np.arange(free.sum())
    a, b = np.triu_indices(n_classes, k=1)
    return units, _unit_edges(a, b), 0


def _unit_edges(a, b):
    """Distinct rows ``(min, max)`` of the unit pairs ``(a, b)``, in lexicographic order."""
    lo, hi = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
    if len(lo) == 0:
        return np.empty((0, 2), np.int64)
    # one integer per row sorts as the rows do (hi < width), and uniques faster than rows
    width = int(hi.max()) + 1
    codes = np.unique(lo * width + hi)
    return np.column_stack([codes // width, codes % width])


def _squared_distances(E, centers):
    # E is X itself, possibly sparse, when the clustering had no learner
    if sp.issparse(E) or E.dtype != np.float64:
        return euclidean_distances(E, centers, squared=True)
    return _dense_squared_distances(E, np.einsum("ij,ij->i", E, E), centers)


def assign_units(cost, edges):
    """Assign units to centres: least cost, then greedy repair of the cannot-links.

    Start from ``c(u) = argmin_c cost[u, c]``. (1) For each violated cannot-link ``(u, v)``
    (``c(u) = c(v)``), move the one of the two whose cheapest *allowed* centre (one that
    none of its cannot-link neighbours occupies) costs least over its current one; skip
    the pair when neither has an allowed centre. (2) Sweep the units with cannot-links,
    moving each to its cheapest allowed centre when that is cheaper or ends a violation.
    Every move lowers the number of violated cannot-links, or keeps it and lowers the cost,
    so both phases end; at the end no unit in no violation can lower its cost alone.
    (3) When violations remain, the units with cannot-links are assigned again in
    saturation order (the unit whose neighbours occupy the most distinct centres first,
    each to its cheapest free centre; Brelaz 1979), followed by (2); that assignment
    replaces the first when it obeys every cannot-link. The repair can stall where no
    single move helps, for example two large must-link units joined by a cannot-link, each
    also cannot-linked to a point of the other centre; the saturation order, exact for two
    centres and a bipartite cannot-link graph, does not. Pairs that contradict each other
    are better served by the repair's trade-off of cost against violations.

    Parameters
    ----------
    cost : ndarray of shape (n_units, n_clusters)
        ``cost[u, c]`` = cost of putting unit ``u`` in cluster ``c``.
    edges : ndarray of shape (p, 2), int
        Cannot-links between units (``u != v``).

    Returns
    -------
    labels : ndarray of shape (n_units,), int64
    """
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return _assign(cost, edges, _adjacency(edges, cost.shape[0]))


def _adjacency(edges, n_units):
    """The cannot-links as an undirected CSR adjacency ``(indptr, indices)`` of the units,
    and the units that have any, in increasing order."""
    a = np.concatenate([edges[:, 0], edges[:, 1]])
    b = np.concatenate([edges[:, 1], edges[:, 0]])
    indptr = np.zeros(n_units + 1, np.int64)
    np.cumsum(np.bincount(a, minlength=n_units), out=indptr[1:])
    return indptr, b[np.argsort(a, kind="stable")], np.flatnonzero(np.diff(indptr) > 0)


def _assign(cost, edges, adjacency):
    """:func:`assign_units` with the adjacency of ``edges`` built already."""
    labels = cost.argmin(1).astype(np.int64)
    if len(edges) == 0:
        return labels
    indptr, indices, linked = adjacency
    labels = greedy_assign(cost, edges, indptr, indices, linked, labels, 100)
    if count_violations(labels, edges) == 0:
        return labels
    # the repair can stall with violations that a different order avoids: colour the
    # linked units in saturation order and descend from there; adopted only when it obeys
    # every cannot-link (with contradicting pairs, obeying more of them is not better)
    start = cost.argmin(1).astype(np.int64)
    other = greedy_assign(cost, edges, indptr, indices, linked,
                          saturation_assign(cost, indptr, indices, linked, start), 100)
    return other if count_violations(other, edges) == 0 else labels


def constrained_lloyd(E, centers, units, edges, max_iter=10):
    """Lloyd steps of k-means with must-link units and greedy cannot-links.

    Alternates :func:`assign_units` with ``cost[u, c] = sum_{i in u} ||e_i - mu_c||^2``
    and the centre update ``mu_c = mean of the points in c`` (a centre left empty keeps
    its place), until the labels repeat or ``max_iter`` steps.

    Returns
    -------
    labels : ndarray of shape (n_samples,), int64
    centers : ndarray of shape (n_clusters, rank)
    """
    k = centers.shape[0]
    n_units = int(units.max()) + 1
    adjacency = _adjacency(edges, n_units)
    E_sq = np.einsum("ij,ij->i", E, E)
    centers = centers.copy()
    labels = None
    for _ in range(max_iter):
        cost = group_sums(units, _dense_squared_distances(E, E_sq, centers), n_units)
        new = _assign(cost, edges, adjacency)[units]
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        counts = np.bincount(labels, minlength=k)
        sums = group_sums(labels, E, k)
        full = counts > 0
        centers[full] = sums[full] / counts[full, None]
    return labels, centers


def _dense_squared_distances(E, E_sq, centers):
    """``||e_i - mu_c||^2`` for a dense ``E`` with its squared row norms ``E_sq``: the
    expansion ``||e||^2 - 2 e^T mu + ||mu||^2`` clipped at 0, as
    ``euclidean_distances`` computes it, without its input validation (the constrained
    steps call it at every Lloyd step of every fold)."""
    d = -2.0 * (E @ centers.T)
    d += E_sq[:, None]
    d += np.einsum("ij,ij->i", centers, centers)[None, :]
    np.maximum(d, 0, out=d)
    return d


def _agreement_pairs(labels, pairs, signs):
    """Number of pairs whose sign the clustering meets (same cluster <=> must-link)."""
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    return int(np.sum(same == (signs > 0)))


def _agreement_labels(labels, codes, held):
    """Number of pairs ``(i, j)``, ``i`` in ``held``, ``j`` another labelled point, whose
    class relation the clustering meets (same cluster <=> same class); from the
    class x cluster contingency table, so no pair is listed."""
    lab = codes >= 0
    table = np.zeros((int(codes.max()) + 1, int(labels.max()) + 1), np.int64)
    np.add.at(table, (codes[lab], labels[lab]), 1)
    c, k = codes[held], labels[held]
    same_class = table.sum(1)[c] - 1
    same_cluster = table.sum(0)[k] - 1
    both = table[c, k] - 1
    return int(np.sum(both + (lab.sum() - 1 - same_class - same_cluster + both)))


def _choose_assignment(E, centers, nearest, side, n_folds=5, random_state=None):
    """``"constrained"`` or ``"nearest"``: whichever meets more held-out side information.

    The pairs (for partial labels: the labelled points) are split into ``n_folds`` folds.
    For each fold, the constrained assignment (:func:`constrained_lloyd` from ``centers``)
    enforces the other folds' pairs, and counts the held-out pairs it meets (a must-link in
    one cluster, a cannot-link across two; for labels, every pair of a held-out point with
    another labelled point). The nearest-centre labels ``nearest`` are scored on the same
    pairs. Enforcing the pairs pays when they are right and numerous; wrong pairs, enforced,
    move their points and break the held-out pairs around them, which the count sees. The
    embedding is shared by the folds (it was learned from every pair), and a tie keeps
    ``"nearest"``.

    Parameters
    ----------
    E : ndarray of shape (n_samples, rank)
    centers : ndarray of shape (n_clusters, rank)
        The k-means centres of ``E``.
    nearest : ndarray of shape (n_samples,)
        Nearest-centre labels.
    side : SideInfo
        Pairs or partial labels, as :func:`check_side_info` returns them.
    n_folds : int, default=5
    random_state : int, RandomState instance or None

    Returns
    -------
    choice : {"constrained", "nearest"}
    scores : dict
        ``{"constrained": int, "nearest": int}``, the held-out pairs each meets.
    """
    n = E.shape[0]
    rng = check_random_state(random_state)
    if side.kind == "pairs":
        C = side.constraints
        items = len(C.pairs)
    else:
        codes = side.codes
        labelled = np.flatnonzero(codes >= 0)
        items = len(labelled)
    scores = {"constrained": 0, "nearest": 0}
    if items < 2 * n_folds:
        return "nearest", scores
    fold = rng.permutation(items) % n_folds
    for f in range(n_folds):
        test = fold == f
        # the learner's fit has warned of the conflicts of the whole set already
        if side.kind == "pairs":
            keep = ~test & (C.signs > 0), ~test & (C.signs < 0)
            units, edges, _ = _pair_units(n, C.pairs[keep[0]], C.pairs[keep[1]])
        else:
            train = codes.copy()
            train[labelled[test]] = -1
            units, edges, _ = _label_units(train)
        labels, _ = constrained_lloyd(E, centers, units, edges)
        for name, lab in (("constrained", labels), ("nearest", nearest)):
            scores[name] += (_agreement_pairs(lab, C.pairs[test], C.signs[test])
                             if side.kind == "pairs"
                             else _agreement_labels(lab, codes, labelled[test]))
    return ("constrained" if scores["constrained"] > scores["nearest"] else "nearest"), scores


def _default_learner():
    """NPKL without its duality certificate (a diagnostic of the solve that does not change
    the kernel, and on small sets costs more than the solve itself), solved to a relative
    change of ``E`` of ``1e-3`` rather than ``1e-5``: a partition or a ranking of pair
    similarities does not resolve the last digits of the kernel, and the sweeps to reach
    them are most of a small fit."""
    from psdlearn.npkl import NPKL

    return NPKL(certificate_tol=None, tol=1e-3)


def check_learner(learner, owner):
    """Raise a TypeError unless ``learner`` can be fitted and embed points."""
    if not (hasattr(learner, "fit") and hasattr(learner, "transform")):
        raise TypeError(f"{owner} needs a learner with fit and transform (a psdlearn "
                        f"estimator such as NPKL or RCA); got {type(learner).__name__}.")
    return learner


def _seed_learner(learner, rng):
    """Give a clone whose ``random_state`` is None a seed drawn from ``rng``, so that the
    meta-estimator's ``random_state`` makes the whole fit reproducible."""
    params = learner.get_params(deep=False)
    if "random_state" in params and params["random_state"] is None:
        learner.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))
    return learner


def learner_embedding(learner, X):
    """Embedding of the training points ``X`` by a fitted psdlearn learner: its
    ``embedding_`` where it has one (the solution of the constrained problem), else
    ``transform(X)`` (a learned linear map or feature map)."""
    E = getattr(learner, "embedding_", None)
    if E is None:
        E = learner.transform(X)
    return np.asarray(E, dtype=np.float64)


class ConstrainedClustering(ClusterMixin, BaseEstimator):
    """Clustering that respects side information: learn a kernel, then kernel k-means.

    A psdlearn learner (``estimator``, NPKL by default) learns from must-link and
    cannot-link pairs, partial labels or triplets an embedding ``E`` of the training points,
    the factor of a kernel ``K = E E^T`` (or of a Mahalanobis metric for a linear learner).
    The points are then partitioned by kernel k-means on ``K``, which is k-means on the rows
    of ``E`` (Dhillon, Guan & Kulis 2004): with restarts, the partition of lowest

    .. math::

        \\sum_i \\lVert e_i - \\mu_{c(i)} \\rVert^2 , \\qquad
        \\mu_c = \\frac{1}{|c|} \\sum_{i \\in c} e_i ,

    is kept (the evaluation protocol of Hu & Kwok 2013 and 2015).

    With ``assign="nearest"`` the constraints shape the kernel, not the assignment: each
    point goes to its nearest centre, and a must-link pair can end in two clusters when the
    learned kernel still separates it. With ``assign="constrained"`` the pairs are also
    enforced when assigning, in the manner of COP-k-means (Wagstaff et al. 2001): the
    connected components ``U`` of the must-link graph (for partial labels: the labelled
    points of one class) are units, each placed whole at

    .. math::

        c(U) = \\arg\\min_c \\sum_{i \\in U} \\lVert e_i - \\mu_c \\rVert^2 ,

    the k-means cost with the must-links as hard constraints; a cannot-link between two
    units in one cluster is then repaired greedily, by moving the unit whose cheapest
    centre left free by its cannot-link neighbours costs least extra, and a last descent
    lets each linked unit take its cheapest free centre. This assignment alternates with
    the centre update ``mu_c = mean of c`` for at most 10 steps, starting from the
    k-means centres. Points in no pair keep their nearest centre. The cannot-links are met
    when the greedy repair finds a way (always when a unit has fewer cannot-link
    neighbours than ``n_clusters``); a component holding a cannot-link contradicts itself
    (noisy pairs), and its points are then assigned one by one, with a ``UserWarning``.
    Hard enforcement trusts every pair: with wrong pairs it can do worse than
    ``"nearest"``. The default, ``assign="auto"``, chooses between the two by
    cross-validation on the side information itself, so it needs no labels beyond the
    user's: the pairs (or the labelled points) are split into five folds; for each, the
    constrained assignment enforces the other four folds, and both assignments are scored
    by the held-out pairs they meet (a must-link in one cluster, a cannot-link across two;
    for labels, the pairs of a held-out point with every other labelled point). The one
    meeting more is used, ``"nearest"`` on a tie or with fewer than ten pairs (labelled
    points). Right and numerous pairs favour enforcing them; wrong pairs, enforced, drag
    their points along and break the held-out pairs around them. The embedding, learned
    from every pair, is shared by the folds.

    A new point is embedded by the learner's out-of-sample map ``transform`` and assigned
    to the nearest centre ``mu_c``. A row of ``X`` equal to a training row gets that row's
    label, so ``predict(X_train)`` equals ``labels_`` (for ``"nearest"`` this holds
    already, as ``transform`` returns the training points' rows of ``E``). Side
    information is given as to every psdlearn estimator (see the glossary).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    estimator : psdlearn estimator, default=None
        The learner of the embedding, cloned at fit: any psdlearn estimator with
        ``embedding_`` (NPKL, KernelMetricLearner) or ``transform`` (PSDBoost, RCA,
        GeneralizedNystroem). ``None`` is ``NPKL(certificate_tol=None, tol=1e-3)``: the
        duality certificate, which checks the solve but does not change the kernel, is
        skipped, and the solve stops at a relative change of ``E`` of ``1e-3``, ample for
        a partition; pass ``NPKL()`` for the certificate and the tighter ``tol=1e-5``.
    n_init : int, default=10
        k-means restarts; the partition of lowest inertia is kept.
    random_state : int, RandomState instance or None, default=None
        Seeds k-means, and the learner when its own ``random_state`` is None.
    verbose : int, default=0
        Passed to k-means (progress on stderr); the learner keeps its own ``verbose``.
    assign : {"auto", "nearest", "constrained"}, default="auto"
        How the training points are assigned to the clusters: to the nearest centre
        (k-means on the embedding), or with the must-links and cannot-links enforced
        (see above), or ``"auto"``: the one that meets more held-out side information
        (see above). Side information without pairs (triplets) assigns to the nearest.

    Attributes
    ----------
    estimator_ : estimator or None
        The fitted learner; None when ``fit`` had no side information and the learner
        needs some (see :meth:`fit`).
    embedding_ : ndarray of shape (n_samples, rank)
        The embedding that was clustered (``X`` itself when ``estimator_`` is None).
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training point, in ``0 .. n_clusters - 1``.
    cluster_centers_ : ndarray of shape (n_clusters, rank)
        Centres ``mu_c`` in the embedding.
    inertia_ : float
        Sum of squared distances of the points to the centres of their clusters.
    n_iter_ : int
        k-means iterations of the kept restart (the constrained steps not counted).
    assign_ : {"nearest", "constrained"}
        The assignment used (the choice of ``assign="auto"``).
    assign_scores_ : dict or None
        For ``assign="auto"`` with pairs or labels: the held-out pairs each assignment
        met, ``{"constrained": int, "nearest": int}``; None otherwise.
    n_features_in_ : int
        Number of features of ``X``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string column names.

    See Also
    --------
    kernel_kmeans : the clustering step alone, on a given embedding.
    PairsClassifier : the learner applied to pairs (same / not the same).

    References
    ----------
    Dhillon, Guan & Kulis (2004), *Kernel k-means, spectral clustering and normalized cuts*,
    KDD. Wagstaff, Cardie, Rogers & Schroedl (2001), *Constrained k-means clustering with
    background knowledge*, ICML. Hu & Kwok (2015), *Low-rank kernel learning for graph-based
    clustering*, IEEE TNNLS.

    Examples
    --------
    >>> import psdlearn as pl
    >>> from sklearn.metrics import rand_score
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, n_must=30, n_cannot=30, random_state=0)
    >>> cl = pl.ConstrainedClustering(3, random_state=0).fit(X, C)
    >>> bool(rand_score(y, cl.labels_) > 0.85)
    True
    >>> bool((cl.predict(X) == cl.labels_).all())
    True
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "estimator": "no_validation",
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "assign": [StrOptions({"auto", "constrained", "nearest"})],
    }

    def __init__(self, n_clusters=8, *, estimator=None, n_init=10, random_state=None,
                 verbose=0, assign="auto"):
        self.n_clusters = n_clusters
        self.estimator = estimator
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose
        self.assign = assign

    def _learner(self):
        return clone(self.estimator) if self.estimator is not None else _default_learner()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the learner's tags without cloning it (tags are read at every validation)
        inner = get_tags(self.estimator if self.estimator is not None else _default_learner())
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.target_tags.required = False
        return tags

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Learn the embedding from ``(X, y)`` and cluster it.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (all of them, constrained or not: the learner's
            semi-supervised set).
        y : PairwiseConstraints, Triplets, array-like of shape (m, 3) or (n_samples,), \
default=None
            Side information: constraints, ``[i, j, +1/-1]`` rows, or partial labels
            (``-1`` = unlabelled), as the learner takes them. With ``y=None`` a learner
            that works without side information (GeneralizedNystroem: the plain Nystrom
            kernel) is fitted without it; for the others there is nothing to learn a
            kernel from, and ``X`` itself is clustered (plain k-means, with a
            ``UserWarning``; ``estimator_`` is then None).

        Returns
        -------
        self
        """
        rng = check_random_state(self.random_state)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                          ensure_min_samples=2)
        learner = _seed_learner(check_learner(self._learner(), "ConstrainedClustering"), rng)
        if y is None and get_tags(learner).target_tags.required:
            warnings.warn(f"y=None: {type(learner).__name__} learns from side information "
                          "and none was given, so X itself is clustered (plain k-means); "
                          "pass constraints or partial labels to learn a kernel.",
                          UserWarning, stacklevel=2)
            self.estimator_ = None
            E = X
        else:
            self.estimator_ = learner.fit(X, y)
            E = learner_embedding(self.estimator_, X)
        return self._cluster(X, E, y, rng)

    @available_if(lambda self: hasattr(self._learner(), "partial_fit"))
    @_fit_context(prefer_skip_nested_validation=False)
    def partial_fit(self, X, y):
        """Add side information over the training points and cluster again.

        The learner is updated by its own ``partial_fit`` (NPKL: the graph and the
        neighbour index are kept and the solve starts from the current embedding,
        reaching the optimum of a fit on all the pairs), then its embedding is
        clustered and assigned as in :meth:`fit`, the assignment choice reading all the
        side information (``estimator_.side_info_``). The result is that of :meth:`fit`
        with a learner fitted on all the side information, at the cost of the update:
        in a query loop (:func:`psdlearn.active.active_learning`) the kNN graph is not
        rebuilt at every round. Available when the learner has
        ``partial_fit``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The training points of :meth:`fit` (same values); on an unfitted estimator,
            any training points (the call is then :meth:`fit`).
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            The new side information, as the learner's ``partial_fit`` takes it.

        Returns
        -------
        self
        """
        if not hasattr(self, "labels_") or self.estimator_ is None:
            return self.fit(X, y)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        self.estimator_.partial_fit(X, y)
        E = learner_embedding(self.estimator_, X)
        return self._cluster(X, E, self.estimator_.side_info_,
                             check_random_state(self.random_state))

    def _cluster(self, X, E, y, rng):
        """k-means on the embedding ``E`` of ``X`` and the assignment; sets the fitted
        attributes (but ``estimator_``) and returns ``self``."""
        if self.n_clusters > E.shape[0]:
            raise ValueError(f"n_clusters={self.n_clusters} exceeds the number of samples "
                             f"n={E.shape[0]}.")
        km = KMeans(n_clusters=self.n_clusters, n_init=self.n_init,
                    random_state=int(rng.randint(np.iinfo(np.int32).max)),
                    verbose=self.verbose).fit(E)
        labels, centers = km.labels_.astype(np.int64), km.cluster_centers_
        units = None
        assign = self.assign
        self.assign_scores_ = None
        if assign == "auto":
            side = check_side_info(y, E.shape[0], accept=("labels", "pairs", "triplets"),
                                   required=False, check_conflicts=False)
            assign = "nearest"
            if side.kind in ("pairs", "labels"):
                assign, self.assign_scores_ = _choose_assignment(
                    E, centers, labels, side, random_state=rng)
        self.assign_ = assign
        if assign == "constrained":
            units, edges, n_conflicts = constraint_units(y, E.shape[0])
            if n_conflicts:
                warnings.warn(f"{n_conflicts} cannot-link(s) join points of one must-link "
                              "component; the points of such components are assigned one "
                              "by one.",
                              UserWarning, stacklevel=2)
        if units is not None:
            labels, centers = constrained_lloyd(E, centers, units, edges)
        dist = _squared_distances(E, centers)
        self.embedding_ = E
        self.labels_ = labels
        self.cluster_centers_ = centers
        self.inertia_ = float(dist[np.arange(len(labels)), labels].sum())
        self.n_iter_ = int(km.n_iter_)
        # predict returns labels_ on the training rows, whether or not a label is the
        # nearest centre (constrained assignment, a repeated row: its first occurrence)
        self._training_rows = TrainingRows(X)
        return self

    def fit_predict(self, X, y=None, **kwargs):
        """Fit and return ``labels_``.

        Parameters
        ----------
        X, y
            As in :meth:`fit`.
        **kwargs : dict
            Passed to :meth:`fit`.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X, y, **kwargs).labels_

    def _embed(self, X):
        """``estimator_.transform(X)``, or ``X`` when ``estimator_`` is None."""
        check_is_fitted(self, "labels_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if self.estimator_ is None:
            return X
        return np.asarray(self.estimator_.transform(X), dtype=np.float64)

    def predict(self, X):
        """Cluster of each point: the nearest centre of its embedding.

        ``c(x) = argmin_c ||e(x) - mu_c||`` with ``e(x)`` the learner's out-of-sample
        embedding (``estimator_.transform``, which gives the training points their rows of
        ``embedding_``; ``X`` itself when ``estimator_`` is None). A row equal to a
        training row gets its label, so ``predict(X_train)`` equals ``labels_``, also
        where the constraints moved a point away from its nearest centre
        (``assign="constrained"``); a row repeated in ``X_train`` gets the label of its
        first occurrence.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_new, n_features)

        Returns
        -------
        labels : ndarray of shape (n_new,)
        """
        E = self._embed(X)
        labels = _squared_distances(E, self.cluster_centers_).argmin(1).astype(np.int64)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        match = self._training_rows.match(X)
        labels[match >= 0] = self.labels_[match[match >= 0]]
        return labels
