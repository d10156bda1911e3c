"""The data manifold: one neighbour search, a symmetric kNN graph and its normalized Laplacian.

Every NPKL method (Hu & Kwok 2015, 2013, and the SimpleNPKL baseline) regularizes the
learned kernel ``K`` by ``tr(L K)``, where ``L`` is the normalized graph Laplacian of
Hu & Kwok (2015) eq. (1),

.. math::

    L = (1 + \\delta) I - D^{-1/2} S D^{-1/2},
    \\qquad S_{ij} = \\exp(-\\|x_i - x_j\\|^2 / (2 \\sigma^2)),

with ``S`` supported on the symmetrized k-nearest-neighbour graph and ``D`` the diagonal
degree matrix. The eigenvalues of ``D^{-1/2} S D^{-1/2}`` lie in ``[-1, 1]``, so those of
``L`` lie in ``[delta, 2 + delta]``: ``L`` is positive definite for ``delta > 0``.

All neighbour searches of the library go through :class:`NeighborIndex`:

- ``"exact"``: scikit-learn's kd-tree in at most :data:`KD_TREE_MAX_FEATURES` dense
  dimensions from :data:`KD_TREE_MIN_SAMPLES` points on (queries in Z-order,
  :mod:`psdlearn._order`), else brute force (squared
  distances by BLAS products, in chunks of queries, on all cores; dense or CSR input,
  sparse input is never densified). Both only propose candidates: the lists are the
  first ``k`` in (distance, index) order, with every distance recomputed as a sum over
  the columns in a fixed order, so the same values give bit-identical lists from dense
  (C or F order), CSR, CSC, float32 or float64 input (:mod:`psdlearn._exact_knn`);
- ``"approximate"``: a hierarchical navigable small world (HNSW) graph (faiss-cpu's
  ``IndexHNSWFlat``, optional extra ``ann``; Malkov & Yashunin 2020), deterministic for a
  given seed on one thread (``n_jobs=1``). On integer-valued data it indexes the distinct
  rows and searches by (distance, index), the exact search's order among tied points.
  From :data:`NNDESCENT_MIN_SAMPLES` continuous points, when pynndescent is installed
  (the same extra), the indexed points' own lists come from NN-descent instead (Dong,
  Moses & Li 2011), which builds them directly rather than searching a graph built for
  new queries; pynndescent's numba code then holds Ctrl-C until the lists are done;
- ``"auto"``: exact up to :data:`AUTO_EXACT_MAX_SAMPLES` points (or in at most
  :data:`AUTO_TREE_MAX_FEATURES` dimensions, where the kd-tree stays fast), approximate
  above when faiss is installed.

References
----------
Hu, E.-L. & Kwok, J. T. (2015). Scalable nonparametric low-rank kernel learning using
block coordinate descent. IEEE Transactions on Neural Networks and Learning Systems 26(9).

Hu, E.-L. & Kwok, J. T. (2013). Efficient kernel learning from side information using
ADMM. IJCAI.

Dong, W., Moses, C. & Li, K. (2011). Efficient k-nearest neighbor graph construction for
generic similarity measures. WWW.

Malkov, Y. A. & Yashunin, D. A. (2020). Efficient and robust approximate nearest neighbor
search using hierarchical navigable small world graphs. IEEE TPAMI 42(4).
"""

from __future__ import annotations

import numbers
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array, check_random_state
from sklearn.utils.extmath import row_norms

from psdlearn import _exact_knn
from psdlearn._compat import hnsw_build_threads, visited_array
from psdlearn._hnsw import HNSW, integral
from psdlearn._nndescent import NNDescentGraph, have_pynndescent
from psdlearn._order import spatial_order
from psdlearn._progress import progress_bar
from psdlearn._sparse_graph import laplacian_arrays, symmetric_maximum

__all__ = [
    "DEFAULT_DELTA",
    "KNN_METHODS",
    "NeighborIndex",
    "graph_from_neighbors",
    "knn_graph",
    "knn_laplacian",
    "neighbors_from_distance_graph",
    "normalized_laplacian",
    "sigma_rule",
]

#: Default ridge ``delta`` of the normalized Laplacian. Hu & Kwok (2015) only ask for
#: ``delta > 0``. ``0.01`` leaves the spectrum of the plain normalized Laplacian
#: (in ``[0, 2]``) essentially unchanged while bounding the condition number of ``L`` by
#: ``(2 + delta) / delta = 201`` and the Jacobi contraction factor of their Prop. 1 by
#: ``1 / (1 + delta)``.
DEFAULT_DELTA = 0.01

#: Number of neighbours used by the sigma rule of Hu & Kwok (2013) section 4.
SIGMA_NEIGHBORS = 10

KNN_METHODS = ("auto", "exact", "approximate")

#: The exact search uses the kd-tree up to this many dense features and brute force above,
#: where the tree stops paying for itself.
KD_TREE_MAX_FEATURES = 6

#: ... and from this many points: below, the O(n^2 d) canonical distances of brute force
#: cost less than building and querying the tree, with or without tied distances (one
#: thread, all points' 10 nearest, CPU: iris 0.5 against 5 ms; Gaussian points in 2-d
#: 3.5 against 3.9 ms at 1,000, 10 against 7 ms at 2,000). Both give the same lists.
KD_TREE_MIN_SAMPLES = 1000

#: ``knn_method="auto"`` searches exactly up to this many points. The exact all-points
#: search costs O(n^2 d) by brute force: about what the approximate search costs at this n,
#: and it grows quadratically beyond.
AUTO_EXACT_MAX_SAMPLES = 20_000

#: ... and at any n in at most this many dense features, where the kd-tree search stays
#: near n log n.
AUTO_TREE_MAX_FEATURES = 3

#: HNSW graph degree, construction and search breadth (faiss). The search breadth is
#: ``max(ceil(HNSW_EF_FACTOR * k), HNSW_EF_MIN)`` for ``k`` neighbours; the degree keeps a
#: margin of recall for large n, where the recall of a fixed setting falls.
HNSW_M = 12
HNSW_EF_CONSTRUCTION = 40
#: From this many continuous points, in at most ``HNSW_SPATIAL_MAX_FEATURES`` features
#: (the order's scatter matrix is ``d x d``), the HNSW graph takes them in spatial order
#: (Z-order on the leading principal axes): consecutive insertions then search the same
#: region of the graph, whose nodes are stored in that order, so the build and the
#: searches of the indexed points read memory that is already in the cache. Below it the
#: index fits the cache anyway (the measurements are in the notes on the neighbour
#: search). A graph built in that order finds fewer true neighbours at the same search
#: breadth, which it searches ``HNSW_SPATIAL_BREADTH`` times wider.
HNSW_SPATIAL_MIN_SAMPLES = 500_000
HNSW_SPATIAL_MAX_FEATURES = 4096
HNSW_SPATIAL_BREADTH = 1.5
HNSW_EF_FACTOR = 1.5
HNSW_EF_MIN = 16
#: The HNSW search returns ``ceil(HNSW_TIE_FACTOR * k)`` candidates and keeps the ``k``
#: first in (distance, index) order. On binary data many points tie at the k-th distance;
#: the exact search keeps the low indices among them, a global order, while HNSW would keep
#: those its traversal met first, a local one, which makes the graph more mutual and its
#: degrees flatter than the exact graph's.
HNSW_TIE_FACTOR = 1.5
#: On integer-valued data the HNSW graph indexes the distinct rows and searches by
#: (distance, index), the exact search's order (``psdlearn._hnsw``): each distinct row gets
#: one more coordinate ``sqrt(eps m)``, ``m`` its lowest index, ``eps = HNSW_INDEX_BIAS / n``
#: (below the gap of 1 between distinct squared distances of integer data), and the search
#: takes ``HNSW_INTEGER_TIE_FACTOR * k`` candidates, enough for the balls of tied points of
#: binary data.
HNSW_INDEX_BIAS = 0.5
HNSW_INTEGER_TIE_FACTOR = 3.0
#: Seed of faiss's level draws when ``random_state`` is None (faiss's own default).
_FAISS_DEFAULT_SEED = 12345
#: From this many continuous points the approximate search builds the indexed points'
#: lists by NN-descent (pynndescent, when installed) instead of searching an HNSW graph:
#: 1.7-1.8 times as fast at 10^7 points, and once per process pynndescent compiles for
#: about 20 s, which the HNSW search does not (the measurements are in the notes on the
#: neighbour search).
NNDESCENT_MIN_SAMPLES = 2_000_000
#: NN-descent lists hold the point, the ``k`` neighbours asked for and this many more:
#: the last entries of a list are the ones it gets wrong most often.
NNDESCENT_SPARE_NEIGHBORS = 1

#: Rows of each query block: it bounds the memory of a block and lets Ctrl-C and the
#: progress bar act between blocks. Brute force: at most ``_QUERY_WORK`` distance terms per
#: block.
_QUERY_WORK = 2e8
#: The blocks are sized by time: the first has ``_FIRST_BLOCK`` rows, each next one is
#: scaled to last about ``_BLOCK_SECONDS`` (at most 4 times the previous one), so that a
#: Ctrl-C acts within about that however slow the machine, while each call's fixed cost
#: (about 1 ms) stays small; the kd-tree and HNSW blocks hold only their lists and grow to
#: at most ``_MAX_BLOCK`` rows.
_FIRST_BLOCK = 1024
_BLOCK_SECONDS = 0.25
_MAX_BLOCK = 65_536


def _n_threads(n_jobs):
    """Threads of a search: ``None`` or ``-1`` use every core (unlike scikit-learn's default)."""
    cores = os.cpu_count() or 1
    if n_jobs is None or n_jobs == -1:
        return cores
    if n_jobs < -1:
        return max(1, cores + 1 + n_jobs)
    return max(1, int(n_jobs))


def _faiss():
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "knn_method='approximate' needs faiss: pip install 'psdlearn[ann]' (or "
            "faiss-cpu); knn_method='exact' works without it."
        ) from exc
    return faiss


def _have_faiss():
    try:
        _faiss()
    except ImportError:
        return False
    return True


def _check_points(X):
    """``check_array(X, accept_sparse="csr", dtype=np.float64)``, its common case first.

    A 2-D float64 ndarray with a row, a column and a finite sum is returned as it is,
    which is what ``check_array`` returns for it: a fit passes the same validated ``X``
    through three such checks, whose fixed cost shows in fits of a few hundred points.
    Anything else goes through ``check_array``.
    """
    if (type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2 and X.size
            and np.isfinite(X.sum())):
        return X
    return check_array(X, accept_sparse="csr", dtype=np.float64, input_name="X")


class NeighborIndex:
    """k-nearest-neighbour search over a fixed set of points: exact or approximate.

    The one neighbour search of psdlearn: the kNN graph, its sigma rule, the out-of-sample
    extension of :class:`psdlearn.NPKL` and the triplets of :class:`psdlearn.PSDBoost` all
    use it. Euclidean distances.

    Parameters
    ----------
    method : {"auto", "exact", "approximate"}, default="auto"
        ``"exact"``: kd-tree in at most ``KD_TREE_MAX_FEATURES`` dense dimensions from
        ``KD_TREE_MIN_SAMPLES`` points on, else brute force (BLAS, chunked, sparse input
        kept sparse); the ``k`` first points in (distance, index) order, the same lists
        for the same values in any container. ``"approximate"``: HNSW (faiss); among
        points tied at the k-th distance it keeps the lowest indices of the
        ``HNSW_TIE_FACTOR * k`` candidates it found, as the exact search tends to, and on
        integer-valued data it searches by (distance, index) (``HNSW_INDEX_BIAS``). From
        ``NNDESCENT_MIN_SAMPLES`` continuous points, with pynndescent installed,
        NN-descent lists instead (built by the first :meth:`kneighbors`, ties in index
        order). ``"auto"``: exact for at most ``AUTO_EXACT_MAX_SAMPLES`` points or at most
        ``AUTO_TREE_MAX_FEATURES`` dense features, approximate beyond (exact, with a
        warning, when faiss is not installed).
    n_jobs : int, optional
        Threads; ``None`` or ``-1`` use every core.
    random_state : int, RandomState instance or None, default=None
        Seeds the HNSW construction (its level draws) and the queries of
        :meth:`estimate_recall`. With ``n_jobs=1`` the same seed gives the same
        neighbours. On several threads faiss nearly always builds the same graph, but its
        insertion order is not guaranteed: use ``n_jobs=1`` where the neighbours must
        repeat bit for bit.
    verbose : int, default=0
        Progress bar of long searches on stderr.

    Attributes
    ----------
    method_ : {"exact", "approximate"}
    backend_ : {"kd_tree", "brute", "hnsw", "nndescent"}
    n_samples_fit_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.graph import NeighborIndex
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> dist, ind = NeighborIndex(method="exact").fit(X).kneighbors(n_neighbors=5)
    >>> dist.shape, ind.shape
    ((100, 5), (100, 5))
    """

    def __init__(self, method="auto", *, n_jobs=None, random_state=None, verbose=0):
        self.method = method
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X):
        """Index the points ``X``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        self
        """
        if self.method not in KNN_METHODS:
            raise ValueError(f"knn_method must be one of {KNN_METHODS}, got {self.method!r}.")
        X = _check_points(X)
        n, d = X.shape
        method = self.method
        if method == "auto":
            small = n <= AUTO_EXACT_MAX_SAMPLES or (not sp.issparse(X)
                                                   and d <= AUTO_TREE_MAX_FEATURES)
            method = "exact" if small else "approximate"
            if method == "approximate" and not _have_faiss():
                method = "exact"
                warnings.warn(
                    f"knn_method='auto': {n} points call for the approximate search, but "
                    "faiss is not installed (pip install 'psdlearn[ann]'); searching "
                    "exactly, which grows as n^2.",
                    UserWarning,
                    stacklevel=2,
                )
        self.method_ = method
        self.n_samples_fit_, self.n_features_in_ = n, d
        self._X = X
        if method == "exact":
            tree = (not sp.issparse(X) and d <= KD_TREE_MAX_FEATURES
                    and n >= KD_TREE_MIN_SAMPLES)
            self.backend_ = "kd_tree" if tree else "brute"
            self._X = _exact_knn.canonical(X)
            if tree:
                self._nn = NearestNeighbors(algorithm="kd_tree", n_jobs=self.n_jobs).fit(X)
            else:
                self._norms = row_norms(self._X, squared=True)
        else:
            self._seed = (_FAISS_DEFAULT_SEED if self.random_state is None
                          else int(check_random_state(self.random_state).randint(0, 2**31 - 1)))
            self._nnd = None
            self.backend_ = ("nndescent" if _uses_nndescent(n) and not integral(X)
                             else "hnsw")
            if self.backend_ == "hnsw":  # NN-descent builds its lists on the first query
                self._build_hnsw(X)
        return self

    def _nn_descent(self, length=0):
        """The NN-descent lists, built (again) where they hold fewer than ``length``
        entries (the point itself included)."""
        length = _nndescent_length(self.n_samples_fit_, length)
        if self._nnd is None or self._nnd.n_neighbors < length:
            self._nnd = NNDescentGraph(self._X, length,
                                       seed=self._seed, n_threads=_n_threads(self.n_jobs),
                                       verbose=self.verbose)
        return self._nnd

    def _build_hnsw(self, X):
        faiss = _faiss()
        seed = self._seed

        def add(index, hnsw):
            # faiss before 1.15.1 inserts in an unspecified order on several threads;
            # 1.15.1 nearly always repeats its graph (see random_state)
            faiss.omp_set_num_threads(hnsw_build_threads(faiss, _n_threads(self.n_jobs)))
            step = 32_768
            with visited_array(faiss), progress_bar(self.verbose, total=hnsw.n_nodes,
                                                    desc="kNN index", unit="pt") as bar:
                for start in range(0, hnsw.n_nodes, step):
                    block = hnsw.node_rows(start, start + step)
                    index.add(block)
                    bar.update(len(block))

        self._hnsw = HNSW(faiss, X, M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION,
                          seed=seed, index_bias=HNSW_INDEX_BIAS, add=add,
                          spatial=_spatial_insertion(*X.shape))

    def kneighbors(self, X=None, n_neighbors=5):
        """The ``n_neighbors`` nearest indexed points of each query, nearest first.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features), optional
            Query points. ``None`` queries the indexed points themselves, each excluding
            itself (a duplicate of it is a neighbour at distance 0).
        n_neighbors : int, default=5
            At most ``n_samples_fit_`` (``n_samples_fit_ - 1`` when ``X`` is None).

        Returns
        -------
        distances : ndarray of shape (n_queries, n_neighbors), float64
            Euclidean distances, non-decreasing along each row.
        indices : ndarray of shape (n_queries, n_neighbors), int64
        """
        if not hasattr(self, "method_"):
            raise ValueError("this NeighborIndex is not fitted: call fit(X) first.")
        own = X is None
        Q = self._X if own else check_array(X, accept_sparse="csr", dtype=np.float64,
                                            input_name="X")
        if Q.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Q.shape[1]} features, the index has "
                             f"{self.n_features_in_}.")
        if not isinstance(n_neighbors, numbers.Integral):
            raise TypeError(f"n_neighbors must be an integer, got {n_neighbors!r}.")
        k = int(n_neighbors)
        available = self.n_samples_fit_ - (1 if own else 0)
        if k < 1 or k > available:
            raise ValueError(f"n_neighbors must lie in [1, {available}], got {k}.")
        n_q = Q.shape[0]
        k_query = k + 1 if own else k
        dist = np.empty((n_q, k))
        ind = np.empty((n_q, k), dtype=np.int64)
        if own and self.backend_ == "nndescent":
            lists = self._nn_descent(k_query).lists()
            for start in range(0, n_q, _MAX_BLOCK):
                rows = np.arange(start, min(start + _MAX_BLOCK, n_q))
                dist[rows], ind[rows] = _drop_self(*NNDescentGraph.own(lists, rows, k), rows)
            return dist, ind
        if self.backend_ == "hnsw" and own and self._hnsw.integer:
            # one search per distinct row, shared by its copies (each then drops itself)
            d_nodes, i_nodes = self._search_blocks(self._hnsw.query_rows, self._hnsw.n_nodes,
                                                   k_query, own=True)
            for start in range(0, n_q, 65_536):
                rows = np.arange(start, min(start + 65_536, n_q))
                node = self._hnsw.inverse[rows]
                dist[rows], ind[rows] = _drop_self(d_nodes[node], i_nodes[node], rows)
            return dist, ind
        # The kd-tree answers the queries in spatial order: consecutive queries then walk
        # the same leaves. The lists do not depend on the order of the queries, only the
        # time does.
        if self.backend_ == "kd_tree" and sp.issparse(Q):
            Q = Q.toarray()   # at most KD_TREE_MAX_FEATURES columns; the tree wants dense
        order = spatial_order(Q) if self.backend_ == "kd_tree" and n_q > 1 else None
        if own and self.backend_ == "hnsw":
            # the indexed points are queried node by node: in the graph's insertion order
            query, order = self._hnsw.query_rows, self._hnsw.first
        else:
            def query(start, stop):
                return Q[start:stop] if order is None else Q[order[start:stop]]

        def store(start, stop, d_b, i_b):
            rows = np.arange(start, stop) if order is None else order[start:stop]
            if own:
                d_b, i_b = _drop_self(d_b, i_b, rows)
            dist[rows], ind[rows] = d_b, i_b

        self._search_blocks(query, n_q, k_query, own=own, store=store)
        return dist, ind

    def _search_blocks(self, rows, n_q, k, own, store=None):
        """Search ``rows(start, stop)`` block by block for ``k`` neighbours each; hand each
        block to ``store(start, stop, dist, ind)``, or return the stacked results."""
        largest = _MAX_BLOCK
        if self.backend_ == "brute":
            largest = int(np.clip(_QUERY_WORK / max(self.n_samples_fit_
                                                    * max(self.n_features_in_, 8), 1),
                                  64, _MAX_BLOCK))
        step = min(_FIRST_BLOCK, largest)
        out = None
        if store is None:
            out = np.empty((n_q, k)), np.empty((n_q, k), dtype=np.int64)

            def store(start, stop, d_b, i_b):
                out[0][start:stop], out[1][start:stop] = d_b, i_b

        with progress_bar(self.verbose and n_q > step, total=n_q, desc="kNN search",
                          unit="pt") as bar:
            start = 0
            while start < n_q:
                stop = min(start + step, n_q)
                entry = np.arange(start, stop) if own else None
                begin = time.perf_counter()
                store(start, stop, *self._query(rows(start, stop), k, entry=entry))
                seconds = max(time.perf_counter() - begin, 1e-4)
                step = int(np.clip(step * _BLOCK_SECONDS / seconds, 1, min(4 * step, largest)))
                bar.update(stop - start)
                start = stop
        return out

    def _query(self, Q, k, entry=None):
        """The ``k`` nearest indexed points of the rows ``Q``; ``entry``: their own graph
        nodes when they are indexed (HNSW).

        An indexed point is its own best entry point: the HNSW search then starts on the
        bottom layer at the point itself instead of descending the upper layers from the
        global entry point (at n = 1e5, 10-d: a quarter less query time, the same recall).
        """
        if self.backend_ == "nndescent":
            return self._nn_descent().query(Q, k)
        if self.backend_ == "hnsw":
            faiss = _faiss()
            faiss.omp_set_num_threads(_n_threads(self.n_jobs))
            ef = max(int(np.ceil(HNSW_EF_FACTOR * k)), HNSW_EF_MIN)
            if self._hnsw.ordered:
                ef = int(np.ceil(HNSW_SPATIAL_BREADTH * ef))
            tie = HNSW_INTEGER_TIE_FACTOR if self._hnsw.integer else HNSW_TIE_FACTOR
            with visited_array(faiss):
                return self._hnsw.search(Q, k, entry, ef=ef, tie_factor=tie)
        # exact: candidates by the tree or by BLAS, ranked by (canonical distance, index)
        # so that the lists depend on the values only, not on the container
        Q = _exact_knn.canonical(sp.csr_matrix(Q) if sp.issparse(self._X) else
                                 Q.toarray() if sp.issparse(Q) else Q)
        if self.backend_ == "kd_tree":
            return _exact_knn.tree_search(self._nn, Q, self._X, k)
        return _exact_knn.brute_force(Q, self._X, self._norms, k)

    def estimate_recall(self, n_neighbors, n_queries=256, random_state=None):
        """Mean recall@k of :meth:`kneighbors` on indexed points, against exact neighbours.

        ``1.0`` for the exact method. Otherwise ``n_queries`` indexed points are drawn at
        random and their exact neighbours found by brute force (``O(n_queries n d)``). A
        returned neighbour counts as found when its distance is at most the exact k-th
        distance, so points tied at that distance are interchangeable.

        Parameters
        ----------
        n_neighbors : int
        n_queries : int, default=256
        random_state : int, RandomState instance or None

        Returns
        -------
        recall : float in [0, 1]
        """
        if self.method_ == "exact":
            return 1.0
        rng = check_random_state(self.random_state if random_state is None else random_state)
        n = self.n_samples_fit_
        queries = np.sort(rng.choice(n, size=min(int(n_queries), n), replace=False))
        k = int(n_neighbors)
        if self.backend_ == "nndescent":  # the lists kneighbors returns
            d_a, i_a = NNDescentGraph.own(self._nn_descent(k + 1).lists(), queries, k)
        else:
            d_a, i_a = self._query(self._X[queries], k + 1,  # as kneighbors
                                   entry=self._hnsw.node_of(queries))
        _, i_a = _drop_self(d_a, i_a, queries)
        exact = NearestNeighbors(algorithm="brute", n_jobs=self.n_jobs).fit(self._X)
        d_e, i_e = exact.kneighbors(self._X[queries], n_neighbors=k + 1)
        d_e, _ = _drop_self(d_e, i_e.astype(np.int64), queries)
        # tie-aware: a returned neighbour counts when its exact distance is within the
        # exact k-th distance (binary data such as a9a has many ties at the k-th distance)
        Xq = self._X[queries]
        diff = self._X[i_a.ravel()] - (Xq[np.repeat(np.arange(len(queries)), k)])
        true = np.sqrt(np.asarray(diff.multiply(diff).sum(axis=1)).ravel() if sp.issparse(diff)
                       else np.einsum("ij,ij->i", diff, diff)).reshape(len(queries), k)
        return float(np.mean(true <= d_e[:, -1:] * (1 + 1e-9) + 1e-12))


def _drop_self(dist, ind, rows):
    """Remove each query's own index from its ``k + 1`` neighbours (else the farthest)."""
    b, k1 = ind.shape
    drop = ind == rows[:, None]
    missing = ~drop.any(axis=1)
    drop[missing, -1] = True
    # one entry per row: a query's index appears at most once in its neighbour list
    drop &= np.cumsum(drop, axis=1) == 1
    keep = ~drop
    return dist[keep].reshape(b, k1 - 1), ind[keep].reshape(b, k1 - 1)


def sigma_rule(distances):
    """Gaussian width of Hu & Kwok (2013) section 4: half the mean distance to the 10 nearest.

    Parameters
    ----------
    distances : ndarray of shape (n_samples, k)
        Distances of each point to its ``k >= 1`` nearest other points (sorted).

    Returns
    -------
    sigma : float
        ``0.5 * mean(distances[:, :10])``; ``1.0`` when every distance is zero (all points
        coincide), so that the Gaussian weights stay finite.
    """
    distances = np.asarray(distances, dtype=np.float64)
    if distances.ndim != 2 or distances.size == 0 or not np.all(np.isfinite(distances)):
        raise ValueError(f"distances must be a non-empty (n_samples, k) array of finite "
                         f"values, got shape {distances.shape}.")
    sigma = 0.5 * float(np.mean(distances[:, :SIGMA_NEIGHBORS]))
    return sigma if sigma > 0 else 1.0


def _uses_nndescent(n_samples):
    """Whether the approximate search of ``n_samples`` continuous points is NN-descent."""
    return n_samples >= NNDESCENT_MIN_SAMPLES and have_pynndescent()


def _nndescent_length(n_samples, length):
    """Entries of the NN-descent lists built where ``length`` are asked for (the point
    itself included)."""
    return min(max(length, SIGMA_NEIGHBORS + 1) + NNDESCENT_SPARE_NEIGHBORS, n_samples)


def _spatial_insertion(n_samples, n_features):
    """Whether the HNSW graph of ``n_samples`` continuous points in ``n_features``
    takes them in spatial order (:data:`HNSW_SPATIAL_MIN_SAMPLES`)."""
    return n_samples >= HNSW_SPATIAL_MIN_SAMPLES and n_features <= HNSW_SPATIAL_MAX_FEATURES


def _check_n_neighbors(n_neighbors, n_samples):
    if not isinstance(n_neighbors, numbers.Integral) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}.")
    if n_neighbors >= n_samples:
        warnings.warn(
            f"n_neighbors={n_neighbors} >= n_samples={n_samples}: the graph links each point "
            f"to all {n_samples - 1} others.",
            UserWarning,
            stacklevel=4,
        )
    return min(int(n_neighbors), n_samples - 1)


def _resolve_sigma(sigma, dist):
    if isinstance(sigma, str):
        if sigma != "auto":
            raise ValueError(f"sigma must be a positive float or 'auto', got {sigma!r}.")
        if not np.any(dist[:, :SIGMA_NEIGHBORS] > 0):
            warnings.warn(
                "all points coincide with their nearest neighbours (every kNN distance is "
                "0): the graph weights are all 1 and sigma falls back to 1.0.",
                UserWarning,
                stacklevel=4,
            )
        return sigma_rule(dist)
    if not (isinstance(sigma, numbers.Real) and np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive float or 'auto', got {sigma!r}.")
    return float(sigma)


def graph_from_neighbors(distances, indices, sigma):
    """Symmetric Gaussian similarity graph from each point's neighbour list.

    ``S_ij = exp(-d_ij^2 / (2 sigma^2))`` when ``j`` is in the list of ``i`` or ``i`` in
    that of ``j`` (the larger weight where both hold: they are equal for exact lists),
    else 0; ``S_ii = 0``.

    Parameters
    ----------
    distances, indices : ndarray of shape (n_samples, k)
        Neighbour lists, as returned by :meth:`NeighborIndex.kneighbors`.
    sigma : float
        Gaussian width, positive.

    Returns
    -------
    S : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        At most ``2 n k`` stored entries: O(n k) memory.
    """
    n, k = indices.shape
    indices = np.asarray(indices, dtype=np.int64)
    weights = np.exp(-(np.asarray(distances, dtype=np.float64) ** 2) / (2.0 * sigma**2))
    # a point is never its own neighbour (S_ii = 0): mask it here rather than by setdiag,
    # which rebuilds the sparse structure
    weights[indices == np.arange(n)[:, None]] = 0.0
    arrays = symmetric_maximum(indices, weights)
    if arrays is not None:
        return sp.csr_matrix(arrays[::-1], shape=(n, n))
    W = sp.csr_matrix((weights.ravel(), indices.ravel(),
                       np.arange(0, n * k + 1, k)), shape=(n, n))
    S = W.maximum(W.T).tocsr()
    S.eliminate_zeros()
    S.sort_indices()
    return S


def neighbors_from_distance_graph(D, n_neighbors=None):
    """Neighbour lists from a sparse kNN distance graph built elsewhere.

    Accepts the output of scikit-learn's ``KNeighborsTransformer(mode="distance")`` or
    ``kneighbors_graph(X, mode="distance")``: row ``i`` stores the distances from point
    ``i`` to its neighbours. Stored diagonal entries (the point itself) are dropped; an
    explicitly stored zero off the diagonal is a duplicate point at distance 0.

    Parameters
    ----------
    D : sparse matrix of shape (n_queries, n_samples)
        Non-negative distances; ``n_queries == n_samples`` for a training graph.
    n_neighbors : int, optional
        Keep the ``n_neighbors`` nearest of each row; every row must store at least that
        many. Default: the smallest number of neighbours stored in a row.

    Returns
    -------
    distances, indices : ndarray of shape (n_queries, k)
        Sorted by distance.
    """
    if not sp.issparse(D):
        raise TypeError("the distance graph must be a scipy.sparse matrix (for example the "
                        "output of sklearn.neighbors.KNeighborsTransformer).")
    D = sp.csr_matrix(D, dtype=np.float64, copy=True)
    D.sort_indices()
    if D.nnz and not np.all(np.isfinite(D.data)):
        raise ValueError("the distance graph contains NaN or inf.")
    if D.nnz and D.data.min() < 0:
        raise ValueError("the distance graph contains negative distances.")
    rows = np.repeat(np.arange(D.shape[0]), np.diff(D.indptr))
    own = (rows == D.indices) if D.shape[0] == D.shape[1] else np.zeros(D.nnz, bool)
    keep = ~own
    counts = np.bincount(rows[keep], minlength=D.shape[0])
    k = int(counts.min()) if n_neighbors is None else int(n_neighbors)
    if k < 1 or counts.min() < k:
        raise ValueError(f"every row of the distance graph needs at least {max(k, 1)} "
                         f"neighbours besides itself; the sparsest row has {counts.min()}.")
    data, cols, rows = D.data[keep], D.indices[keep], rows[keep]
    order = np.lexsort((cols, data, rows))  # by row, then distance, then index
    rank = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    first = order[rank < k]
    dist = data[first].reshape(-1, k)
    ind = cols[first].astype(np.int64).reshape(-1, k)
    return dist, ind


def knn_graph(X, n_neighbors=5, sigma="auto", *, knn_method="auto", n_jobs=None,
              random_state=None, verbose=0, return_index=False):
    """Symmetric kNN similarity graph with Gaussian weights.

    One search for ``max(k, 10)`` neighbours serves both the sigma rule and the graph.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Data points; ``n_samples >= 2``.
    n_neighbors : int, default=5
        Neighbours per point; above ``n_samples - 1`` it is capped with a warning.
    sigma : float or "auto", default="auto"
        Gaussian width; ``"auto"`` applies :func:`sigma_rule`.
    knn_method : {"auto", "exact", "approximate"}, default="auto"
        Neighbour search, see :class:`NeighborIndex`.
    n_jobs : int, optional
        Threads of the search; ``None`` uses every core.
    random_state : int, RandomState instance or None
        Seeds the approximate search.
    verbose : int, default=0
        Progress bars of long searches on stderr.
    return_index : bool, default=False
        Also return the fitted :class:`NeighborIndex` and a dict describing the search.

    Returns
    -------
    S : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric non-negative weights with zero diagonal.
    sigma : float
        The width used.
    index : NeighborIndex
        Only with ``return_index=True``.
    info : dict
        Only with ``return_index=True``: ``method``, ``backend``, ``n_neighbors``,
        ``recall`` (estimated recall@k of the search, 1.0 when exact).
    """
    X = _check_points(X)
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"X must have at least 2 samples to build a graph, got {n}.")
    k = _check_n_neighbors(n_neighbors, n)
    k_query = min(max(k, SIGMA_NEIGHBORS), n - 1)
    index = NeighborIndex(knn_method, n_jobs=n_jobs, random_state=random_state,
                          verbose=verbose).fit(X)
    dist, ind = index.kneighbors(n_neighbors=k_query)
    sigma = _resolve_sigma(sigma, dist)
    S = graph_from_neighbors(dist[:, :k], ind[:, :k], sigma)
    if not return_index:
        return S, sigma
    info = {"method": index.method_, "backend": index.backend_, "n_neighbors": k,
            "recall": index.estimate_recall(k)}
    return S, sigma, index, info


def knn_laplacian(X, n_neighbors=5, sigma="auto", delta=DEFAULT_DELTA, *, knn_method="auto",
                  n_jobs=None, random_state=None, verbose=0):
    """Normalized Laplacian ``(1 + delta) I - D^-1/2 S D^-1/2`` of the kNN graph.

    Hu & Kwok (2015) eq. (1), with the Gaussian weights of :func:`knn_graph`.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Data points.
    n_neighbors : int, default=5
        Neighbours per point; the papers use 5, and 50 for the adult sets.
    sigma : float or "auto", default="auto"
        Gaussian width; ``"auto"`` is half the mean distance of each point to its 10
        nearest neighbours (Hu & Kwok 2013, section 4).
    delta : float, default=DEFAULT_DELTA (0.01)
        Ridge that makes ``L`` positive definite; eigenvalues of ``L`` lie in
        ``[delta, 2 + delta]``.
    knn_method, n_jobs, random_state, verbose : as in :func:`knn_graph`
        The neighbour search.

    Returns
    -------
    L : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric, float64, diagonal ``1 + delta``, sorted indices. A point whose weights
        all underflow to zero (isolated) gets the row ``(1 + delta) e_i``: no NaN or inf.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.graph import knn_laplacian
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> L = knn_laplacian(X, n_neighbors=5)
    >>> L.shape, float(L.diagonal().min())
    ((50, 50), 1.01)
    """
    _check_delta(delta)
    S, _ = knn_graph(X, n_neighbors=n_neighbors, sigma=sigma, knn_method=knn_method,
                     n_jobs=n_jobs, random_state=random_state, verbose=verbose)
    return normalized_laplacian(S, delta)


def _check_delta(delta):
    if not (isinstance(delta, numbers.Real) and np.isfinite(delta) and delta > 0):
        raise ValueError(f"delta must be a positive float, got {delta!r}.")


def normalized_laplacian(S, delta=DEFAULT_DELTA):
    """``(1 + delta) I - D^-1/2 S D^-1/2`` for a symmetric non-negative sparse ``S``.

    Parameters
    ----------
    S : sparse matrix of shape (n, n)
        Symmetric similarity weights with zero diagonal.
    delta : float
        Positive ridge.

    Returns
    -------
    L : scipy.sparse.csr_matrix of shape (n, n)
    """
    _check_delta(delta)
    S = sp.csr_matrix(S, dtype=np.float64)
    n = S.shape[0]
    if S.shape != (n, n) or not np.all(np.isfinite(S.data)) or (S.data < 0).any():
        raise ValueError(f"S must be a square matrix of finite non-negative weights, got "
                         f"shape {S.shape}.")
    deg = np.asarray(S.sum(axis=1)).ravel()
    inv_sqrt = np.zeros(n)
    pos = deg > 0
    inv_sqrt[pos] = 1.0 / np.sqrt(deg[pos])
    if S.has_canonical_format:
        arrays = laplacian_arrays(S, inv_sqrt, 1.0 + delta)
        if arrays is not None:
            return sp.csr_matrix(arrays[::-1], shape=(n, n))
    # A_ij = S_ij (d_i^-1/2 d_j^-1/2): the product of the two scales commutes, so A is
    # exactly symmetric when S is, without the two sparse products and a transpose
    rows = np.repeat(np.arange(n), np.diff(S.indptr))
    A = sp.csr_matrix((S.data * (inv_sqrt[rows] * inv_sqrt[S.indices]), S.indices.copy(),
                       S.indptr.copy()), shape=(n, n))
    if (A != A.T).nnz:
        A = 0.5 * (A + A.T)  # a user's S symmetric up to rounding only
    L = ((1.0 + delta) * sp.identity(n, format="csr") - A).tocsr()
    L.sort_indices()
    return L
