"""The approximate backend of :class:`psdlearn.graph.NeighborIndex`: an HNSW graph (faiss).

On integer-valued data (the binary LIBSVM sets) two things change, because there many
points tie at the k-th distance and the exact search keeps the lowest indices among them:

- the graph indexes the *distinct* rows once (``np.unique``); a found row stands for all
  its copies, which join the candidates in index order (a9a: 24,947 distinct of 32,561
  rows, so the build and the queries shrink by a quarter);
- each distinct row ``u`` carries one more coordinate ``sqrt(eps m_u)``, ``m_u`` the lowest
  index among its copies, and queries carry 0 there, so the search ranks by
  ``d^2 + eps m_u``. Distinct squared distances of integer data differ by at least
  1 > ``eps (n - 1)``, so that is the exact search's order, (distance, index), and the
  traversal itself heads for the low indices among tied points: re-sorting the
  candidates of a plain search cannot find tied points it never visited. The bias is
  subtracted from the returned squared distances, which are then rounded to the
  integers they are.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from psdlearn._order import spatial_order

__all__ = ["HNSW", "integral"]


def integral(X, block=65_536):
    """Whether every entry of ``X`` (dense or CSR) is an integer; stops at the first block
    that is not, so continuous data costs one block."""
    if sp.issparse(X):
        return bool(np.all(np.equal(np.rint(X.data), X.data)))
    for start in range(0, X.shape[0], block):
        part = X[start:start + block]
        if not np.array_equal(np.rint(part), part):
            return False
    return True


def _distinct_rows(X, block=65_536):
    """Group equal rows of integer data: ``inverse`` (the group of each row, groups in
    order of a row hash) and the group sizes.

    Rows are hashed exactly, by an int64 dot product with random int64 weights (wrapping
    modulo 2^64); rows that share a hash are then compared, and a collision of unequal
    rows (probability about n^2 / 2^64) falls back to a sort of the rows themselves.
    """
    weights = np.random.default_rng(0).integers(-2**62, 2**62, size=X.shape[1])
    h = np.empty(X.shape[0], dtype=np.int64)
    for start in range(0, X.shape[0], block):
        part = X[start:start + block]
        part = part.toarray() if sp.issparse(part) else part
        with np.errstate(over="ignore"):
            h[start:start + block] = part.astype(np.int64) @ weights
    _, inverse, counts = np.unique(h, return_inverse=True, return_counts=True)
    order = np.argsort(inverse, kind="stable")
    pairs = np.flatnonzero(inverse[order[1:]] == inverse[order[:-1]])
    a, b = order[pairs], order[pairs + 1]
    equal = (np.array_equal(X[a].toarray(), X[b].toarray()) if sp.issparse(X)
             else np.array_equal(X[a], X[b]))
    if not equal:  # pragma: no cover - a hash collision
        _, inverse, counts = np.unique(dense32(X), axis=0, return_inverse=True,
                                       return_counts=True)
    return inverse.ravel().astype(np.int64), counts


def dense32(block):
    """A block of rows as C-ordered float32, the input HNSW takes."""
    if sp.issparse(block):
        block = block.toarray()
    return np.ascontiguousarray(block, dtype=np.float32)


class HNSW:
    """HNSW graph over the rows of ``X``, searched by (distance, index) on integer data.

    Parameters
    ----------
    faiss : module
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    M, ef_construction : int
        Graph degree and construction breadth.
    seed : int
        Seed of the level draws.
    index_bias : float
        ``eps (n - 1)`` on integer data (< 1); 0 searches by distance alone.
    add : callable
        ``add(index, block)`` adds rows; the caller owns threads and progress.
    spatial : bool, default=False
        On continuous data, insert the rows in spatial order
        (:func:`psdlearn._order.spatial_order`, the same for a dense and a CSR ``X`` of
        the same values): node ``v`` is row ``first[v]``. The graph is another one, of
        a somewhat lower recall at equal search breadth; its build and the searches of
        the indexed points touch less memory.
    """

    def __init__(self, faiss, X, *, M, ef_construction, seed, index_bias, add,
                 spatial=False):
        self._faiss = faiss
        n, d = X.shape
        self.integer = bool(index_bias) and integral(X)
        if self.integer:
            self.inverse, self.counts = _distinct_rows(X)
            # the copies of each distinct row, ascending, contiguous per row
            self.members = np.argsort(self.inverse, kind="stable")
            self.starts = np.concatenate([[0], np.cumsum(self.counts)])
            self.first = self.members[self.starts[:-1]]
            self.eps = index_bias / n
        elif spatial:
            # node v is row first[v]: inserted (and stored) in spatial order, each
            # insertion's search walks the nodes the last ones walked, in the cache
            self.first = spatial_order(X)
        else:
            self.first = None
        self.n_nodes = len(self.first) if self.integer else n
        self.index = faiss.IndexHNSWFlat(d + self.integer, M)
        self.index.hnsw.efConstruction = ef_construction
        self.index.hnsw.rng = faiss.RandomGenerator(seed)
        self._X = X
        add(self.index, self)

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_faiss"]  # the index pickles as its serialized bytes
        state["index"] = self._faiss.serialize_index(self.index)
        return state

    def __setstate__(self, state):
        import faiss

        state["index"] = faiss.deserialize_index(state["index"])
        self.__dict__.update(state, _faiss=faiss)

    @property
    def ordered(self):
        """Whether graph nodes are rows in another order (:attr:`first`) than the input's."""
        return self.first is not None

    def node_rows(self, start, stop):
        """Indexed rows of nodes ``start:stop`` (distinct rows on integer data) as float32
        for faiss."""
        block = dense32(self.query_rows(start, stop))
        if not self.integer:
            return block
        extra = np.sqrt(self.eps * self.first[start:stop].astype(np.float64))
        return np.hstack([block, extra.astype(np.float32)[:, None]])

    def query_rows(self, start, stop):
        """The points that stand for graph nodes ``start:stop`` (the first copy of each
        distinct row on integer data), as queries."""
        return self._X[start:stop] if self.first is None else self._X[self.first[start:stop]]

    def node_of(self, points):
        """Graph node of each indexed point."""
        if self.integer:
            return self.inverse[points]
        if self.first is None:
            return np.asarray(points)
        node = np.empty_like(self.first)
        node[self.first] = np.arange(len(self.first))
        return node[points]

    def search(self, Q, k, entry, *, ef, tie_factor):
        """The ``k`` nearest indexed points of each query row, nearest first.

        Parameters
        ----------
        Q : ndarray or CSR matrix of shape (b, n_features)
        k : int
            Points wanted (a query that is an indexed point finds itself among them).
        entry : ndarray of shape (b,) or None
            Each query's own graph node when it is indexed: the search then starts on the
            bottom layer at the node instead of descending from the global entry point.
        ef : int
            Search breadth for ``k`` results (raised to the candidates searched).
        tie_factor : float
            Candidates searched per result; among them the ``k`` first in (distance,
            index) order are kept.

        Returns
        -------
        dist : ndarray of shape (b, k), float64
        ind : ndarray of shape (b, k), int64
        """
        k_search = min(max(int(np.ceil(tie_factor * k)), k), self.n_nodes)
        self.index.hnsw.efSearch = max(ef, k_search)
        Q32 = dense32(Q)
        if self.integer:
            Q32 = np.hstack([Q32, np.zeros((len(Q32), 1), np.float32)])
        d2, nodes = self._search(Q32, k_search, entry)
        if not self.integer:
            rows = nodes if self.first is None else np.where(
                nodes >= 0, self.first[np.maximum(nodes, 0)], -1)
            return _lowest_index_ties(np.sqrt(np.maximum(d2, 0.0)), rows, k)
        d2 = np.rint(d2 - self.eps * self.first[np.maximum(nodes, 0)])
        return self._expand(np.where(d2 > 0, d2, 0.0), nodes, k)

    def _search(self, Q32, k, entry):
        faiss, b = self._faiss, len(Q32)
        if entry is None:
            d2, ind = self.index.search(Q32, k)
        else:
            entry = np.ascontiguousarray(entry, dtype=np.int32)
            # the query is the entry node's row: at distance 0, plus the node's bias; a
            # named array, since swig_ptr keeps no reference: a temporary would be freed
            # before the search reads it (garbage entry distances, results that changed
            # from process to process)
            entry_d2 = (self.eps * self.first[entry] if self.integer
                        else np.zeros(b)).astype(np.float32)
            d2, ind = np.empty((b, k), np.float32), np.empty((b, k), np.int64)
            self.index.search_level_0(b, faiss.swig_ptr(Q32), k, faiss.swig_ptr(entry),
                                      faiss.swig_ptr(entry_d2),
                                      faiss.swig_ptr(d2), faiss.swig_ptr(ind))
        return d2.astype(np.float64), ind.astype(np.int64, copy=False)

    def _expand(self, d2, nodes, k):
        """Each found distinct row stands for its copies; the ``k`` first points of each
        query in (distance, index) order are kept."""
        dist2 = np.empty((len(nodes), k))
        ind = np.empty((len(nodes), k), dtype=np.int64)
        if not _first_copies(d2, nodes, self.starts, self.counts, self.members, dist2, ind):
            raise RuntimeError("the HNSW search found fewer than n_neighbors points for a "
                               "query; use knn_method='exact'.")
        return np.sqrt(dist2), ind


@numba.njit(cache=True, parallel=True)
def _first_copies(d2, nodes, starts, counts, members, out_d, out_i):
    """Merge the copies of each row's candidate nodes into its ``k`` first points.

    ``nodes[r]`` arrive in non-decreasing distance ``d2[r]``; a node's copies share its
    distance and ascend in index. ``out_d[r], out_i[r]`` are kept sorted by (distance,
    index) by insertion, and a row stops at the first node beyond its k-th distance.
    Returns False when some row found fewer than ``k`` points.
    """
    b, k_search = nodes.shape
    k = out_d.shape[1]
    short = 0
    for r in numba.prange(b):
        filled = 0
        for j in range(k_search):
            v = nodes[r, j]
            if v < 0:
                continue
            d = d2[r, j]
            if filled == k and d > out_d[r, k - 1]:
                break
            for t in range(min(counts[v], k)):
                p = members[starts[v] + t]
                if filled == k:
                    if d > out_d[r, k - 1] or (d == out_d[r, k - 1] and p > out_i[r, k - 1]):
                        break  # the later copies rank lower still
                    pos = k - 1
                else:
                    pos = filled
                    filled += 1
                while pos > 0 and (out_d[r, pos - 1] > d
                                   or (out_d[r, pos - 1] == d and out_i[r, pos - 1] > p)):
                    out_d[r, pos] = out_d[r, pos - 1]
                    out_i[r, pos] = out_i[r, pos - 1]
                    pos -= 1
                out_d[r, pos] = d
                out_i[r, pos] = p
        if filled < k:
            short += 1
    return short == 0


def _lowest_index_ties(dist, ind, k):
    """The ``k`` first of each row's candidates in (distance, index) order.

    The candidates arrive sorted by distance; only rows whose tie straddles the cut
    (``dist[k - 1] == dist[k]``) are reordered (in place), so continuous data costs one
    comparison.
    """
    if dist.shape[1] == k:
        return dist, ind
    rows = np.flatnonzero(dist[:, k - 1] == dist[:, k])
    if len(rows):
        order = np.lexsort((ind[rows], dist[rows]))
        dist[rows] = np.take_along_axis(dist[rows], order, axis=1)
        ind[rows] = np.take_along_axis(ind[rows], order, axis=1)
    return dist[:, :k], ind[:, :k]
