"""Building the distributed problem: slabs, the blockwise kNN graph, the rows of ``L``.

Worker-side functions (pure, NumPy in and out) and the client-side drivers that chain
them. Nothing here gathers ``X``, ``E`` or ``L`` on one machine: the client receives
only ``d x d`` moments, a sample of projections, block sizes and scalar sums.

Graph (the one of :func:`psdlearn.graph.knn_graph`, built by blocks). Block ``c`` indexes
its points with :class:`psdlearn.graph.NeighborIndex` (exact for small sets, HNSW
beyond). Block ``q`` first queries its own index; a point then goes to the index of
another slab only if its distance to that slab along the slab direction (a lower bound
of the distance to any point there) is at most its ``max(k, 10)``-th distance so far,
and keeps the nearest candidates over all answers: the exact kNN lists when the
per-block searches are exact, for a few boundary points sent instead of every point to
every block. ``sigma`` is half the mean distance to the 10 nearest, reduced
globally. ``S = max(W, W^T)``: each block routes the reversed copies of its directed
edges to the owners of their targets. ``L = (1 + delta) I - D^-1/2 S D^-1/2`` needs the
degrees of the halo rows, exchanged like the rows of ``E`` later.
"""

from __future__ import annotations

import numpy as np

from psdlearn._order import leading_axes, zorder
from psdlearn.graph import SIGMA_NEIGHBORS, NeighborIndex

from . import layout as lay

__all__ = ["build_graph", "make_blocks", "slab_blocks"]


# ----------------------------------------------------------------------- worker side
def _moments(X):
    return len(X), X.sum(axis=0), X.T @ X


def _labels(X, mean, direction, bounds):
    return np.searchsorted(bounds, (X - mean) @ direction, side="right").astype(np.int64)


def _sample(X, mean, direction, size, seed):
    proj = (X - mean) @ direction
    rng = np.random.default_rng(seed)
    return proj if len(proj) <= size else rng.choice(proj, size, replace=False)


def _counts(labels, n_blocks):
    return np.bincount(labels, minlength=n_blocks)


def _start_rows(X, rank, seed):
    """The chunk's rows of the random start, drawn per input chunk: the same start
    whatever the number of blocks."""
    from psdlearn.npkl.bcd import initial_embedding

    return initial_embedding(len(X), rank, np.random.default_rng(seed))


def _select(X, E0, labels, block, start):
    mask = labels == block
    return X[mask], start + np.flatnonzero(mask), E0[mask]


def _concat(mean, axes, *parts):
    """A slab's rows, old ids and starting rows, in the Z-order of their coordinates on
    the leading principal ``axes``: the sweeps read the rows of ``E`` that ``L`` couples
    from nearby memory (the measured speed-up is in the distributed notes)."""
    X = np.concatenate([p[0] for p in parts])
    order = zorder((X - mean) @ axes)
    return (X[order], np.concatenate([p[1] for p in parts])[order].astype(np.int64),
            np.concatenate([p[2] for p in parts])[order])


def _points(triple):
    return triple[:2]


def _start(triple):
    return triple[2]


def _start_subset(E0, offset, special, inside):
    """The starting rows of a slab that are (``inside``) or are not in ``special``."""
    gid = offset + np.arange(len(E0))
    return E0[np.isin(gid, special) == inside]


def _stack_rows(*parts):
    return np.concatenate(parts)


def _new_ids(block, offset, ids):
    """New ids (``offset`` + position in the slab) of the old ``ids`` this slab holds,
    -1 for the others."""
    old = block[1]
    by_id = np.argsort(old)
    pos = by_id[np.minimum(np.searchsorted(old, ids, sorter=by_id), len(old) - 1)]
    return np.where(old[pos] == ids, offset + pos, -1)


def _fit_index(block, method, seed):
    return NeighborIndex(method, n_jobs=1, random_state=seed).fit(block[0])


def _query(index, k, offset):
    dist, ind = index.kneighbors(None, n_neighbors=min(k, index.n_samples_fit_ - 1))
    return dist, ind + offset


def _near_slab(block, own, geometry, slab, k):
    """The points of ``block`` that may have one of their ``k`` nearest in ``slab``.

    For the unit direction ``w``, ``|w.(x - y)| <= ||x - y||``: a point of ``slab`` (its
    projections in ``[lo, hi)``) is at least the projection gap away, so only the points
    whose gap is at most their ``k``-th distance within their own slab are sent (all of
    them when the own slab holds fewer than ``k`` others).
    """
    mean, direction, bounds = geometry
    lo = bounds[slab - 1] if slab > 0 else -np.inf
    hi = bounds[slab] if slab < len(bounds) else np.inf
    proj = (block[0] - mean) @ direction
    gap = np.maximum(np.maximum(lo - proj, proj - hi), 0.0)
    kth = own[0][:, k - 1] if own[0].shape[1] >= k else np.full(len(proj), np.inf)
    rows = np.flatnonzero(gap <= kth * (1.0 + 1e-9) + 1e-12)
    return block[0][rows], rows


def _query_rows(index, selected, k, offset):
    X, rows = selected
    if len(rows) == 0:
        return rows, np.empty((0, 0)), np.empty((0, 0), dtype=np.int64)
    dist, ind = index.kneighbors(X, n_neighbors=min(k, index.n_samples_fit_))
    return rows, dist, ind + offset


def _merge(k, own, *parts):
    """The ``k`` nearest of each point among its own slab's and the other slabs' lists.

    Only the rows that received candidates from another slab (the points near a slab
    boundary) are merged, by ``(distance, id)``; the others keep their own slab's list.
    """
    parts = [p for p in parts if len(p[0])]
    width = min(k, own[0].shape[1] + sum(p[1].shape[1] for p in parts))
    dist = np.full((len(own[0]), width), np.inf)
    ind = np.full((len(own[0]), width), -1, dtype=np.int64)
    dist[:, :own[0].shape[1]], ind[:, :own[1].shape[1]] = own
    if not parts:
        return dist, ind
    rows = np.unique(np.concatenate([p[0] for p in parts]))
    dists, inds = [own[0][rows]], [own[1][rows]]
    for r, d_part, i_part in parts:
        d = np.full((len(rows), d_part.shape[1]), np.inf)
        i = np.full((len(rows), d_part.shape[1]), -1, dtype=np.int64)
        pos = np.searchsorted(rows, r)
        d[pos], i[pos] = d_part, i_part
        dists.append(d)
        inds.append(i)
    d, i = np.concatenate(dists, axis=1), np.concatenate(inds, axis=1)
    order = np.lexsort((i, d), axis=-1)[:, :width]
    dist[rows], ind[rows] = np.take_along_axis(d, order, 1), np.take_along_axis(i, order, 1)
    return dist, ind


def _sigma_sums(knn):
    d = knn[0][:, :SIGMA_NEIGHBORS]
    return float(d.sum()), d.size


def _reversed_edges(knn, k, sigma, offset, offsets):
    """The reversed directed edges ``(target, source, weight)``, split by target's block."""
    dist, ind = knn[0][:, :k], knn[1][:, :k]
    w = np.exp(-(dist**2) / (2.0 * sigma**2)).ravel()
    src = np.repeat(offset + np.arange(len(dist)), dist.shape[1])
    dst = ind.ravel()
    owner = np.searchsorted(offsets, dst, side="right") - 1
    return {int(c): (dst[owner == c], src[owner == c], w[owner == c])
            for c in np.unique(owner)}


def _pick(mapping, key):
    empty = np.empty(0, dtype=np.int64)
    return mapping.get(key, (empty, empty, np.empty(0)))


def _symmetric_rows(knn, k, sigma, offset, *incoming):
    """CSR rows of ``S = max(W, W^T)`` owned here: ``(indptr, global cols, weights)``."""
    dist, ind = knn[0][:, :k], knn[1][:, :k]
    n = len(dist)
    rows = np.concatenate([np.repeat(np.arange(n), dist.shape[1])]
                          + [t - offset for t, _, _ in incoming])
    cols = np.concatenate([ind.ravel()] + [s for _, s, _ in incoming])
    w = np.concatenate([np.exp(-(dist**2) / (2.0 * sigma**2)).ravel()]
                       + [v for _, _, v in incoming])
    keep = (cols != rows + offset) & (w > 0)
    # one int64 key per entry, sorted once: half the memory of a lexsort of (rows, cols)
    span = int(cols.max()) + 1 if len(cols) else 1
    key = (rows * span + cols)[keep]
    w = w[keep]
    del rows, cols, keep
    order = np.argsort(key, kind="stable")
    key, w = key[order], w[order]
    del order
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    w = np.maximum.reduceat(w, starts) if len(w) else w
    key = key[starts]
    rows, cols = np.divmod(key, span)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols, w


def _inv_sqrt_degree(sym):
    """``d_i^-1/2`` of the rows of ``S`` (0 for a row without edges: a point whose
    weights all underflow, e.g. a far outlier)."""
    indptr, _, w = sym
    deg = np.zeros(len(indptr) - 1)
    # reduceat over the non-empty rows only: an empty row's start may equal len(w)
    full = np.diff(indptr) > 0
    if np.any(full):
        deg[full] = np.add.reduceat(w, indptr[:-1][full])
    out = np.zeros_like(deg)
    out[deg > 0] = 1.0 / np.sqrt(deg[deg > 0])
    return out


def _cut_stats(sym, offsets, block):
    cols = sym[1]
    owner = np.searchsorted(offsets, cols, side="right") - 1
    return int(np.count_nonzero(owner != block)), len(cols), sorted(set(owner.tolist()) - {block})


def _laplacian_rows(layout, block, request, sym, delta, inv_own, *pieces):
    """Rows of ``(1 + delta) I - D^-1/2 S D^-1/2`` owned here, global column ids, sorted."""
    indptr, cols, w = sym
    n = len(indptr) - 1
    inv = np.concatenate((inv_own, *pieces))
    rows = np.repeat(np.arange(n), np.diff(indptr))
    a = inv[rows] * w * inv[lay.localize(layout, block, request, cols)]
    gid = layout.offsets[block] + np.arange(n)
    # the rows of S are sorted by column: the diagonal goes before its first larger column
    span = max(int(cols.max()) + 1 if len(cols) else 0, int(gid[-1]) + 1 if n else 0)
    at = np.searchsorted(rows * span + cols, np.arange(n) * span + gid)
    del rows
    out_ptr = indptr + np.arange(n + 1)
    return out_ptr, np.insert(cols, at, gid), np.insert(-a, at, 1.0 + delta)


def _row_subset(csr, keep):
    indptr, cols, vals = csr
    counts = np.diff(indptr)[keep]
    take = np.repeat(keep, np.diff(indptr))
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, cols[take], vals[take]


def _rows_not_in(csr, offset, special, inside):
    gid = offset + np.arange(len(csr[0]) - 1)
    return _row_subset(csr, np.isin(gid, special) == inside)


def _stack_csr(*parts):
    ptrs = [p[0] for p in parts]
    counts = np.concatenate([np.diff(p) for p in ptrs])
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return (ptr, np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]))


def _block_needs(layout, block, csr, targets):
    return lay.needs(layout, block, np.concatenate([csr[1], targets[1]]))


def _sizes(request):
    return {c: len(v) for c, v in request.items()}


def _static(layout, block, request, csr, targets, add_diagonal):
    """Everything a block keeps for the solve, in extended local indices."""
    indptr, cols, vals = csr
    n = len(indptr) - 1
    Li = lay.localize(layout, block, request, cols)
    diag = np.zeros(n)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    on_diag = Li == rows
    diag[rows[on_diag]] = vals[on_diag]
    t_rows, t_cols, t_vals = targets
    t_rows = layout.local(t_rows, block)
    t_cols = lay.localize(layout, block, request, t_cols)
    if add_diagonal:  # pcp: the pair (i, i) with target 1 for every sample
        t_rows = np.concatenate([t_rows, np.arange(n)])
        t_cols = np.concatenate([t_cols, np.arange(n)])
        t_vals = np.concatenate([t_vals, np.ones(n)])
    order = np.lexsort((t_cols, t_rows))
    Tp = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(t_rows, minlength=n), out=Tp[1:])
    return {"n": n, "Lp": indptr.astype(np.int64), "Li": Li, "Lx": vals.astype(np.float64),
            "diag": diag, "Tp": Tp, "Ti": t_cols[order].astype(np.int64),
            "Tt": t_vals[order].astype(np.float64),
            "kmax": max(1, int(np.diff(Tp).max()) if n else 1)}


# ----------------------------------------------------------------------- client side
def slab_blocks(rt, chunks, starts, n_blocks, seed, rank):
    """Split the row chunks of ``X`` into ``n_blocks`` slabs, each on its worker.

    The random starting embedding (entries ``N(0, 1 / rank)``) is drawn per input chunk
    and travels with its rows, so it does not depend on the number of blocks.

    Parameters
    ----------
    rt : Runtime
    chunks : list of futures of ndarray
        The row chunks of ``X``.
    starts : ndarray of shape (n_chunks + 1,)
        Row offsets of the chunks.
    n_blocks : int
    seed : int
    rank : int

    Returns
    -------
    blocks : list of futures of ``(X_b, old ids)``
        The rows of each slab in the Z-order of their coordinates on the leading
        principal axes (:func:`_concat`): new id = ``offsets[b]`` + position.
    start : list of futures of ``E0_b``
        The starting rows of each slab (a separate future, so that the workers can free
        them once the solver has its own copy).
    offsets : ndarray of shape (n_blocks + 1,)
    geometry : tuple
        ``(mean, direction, bounds)``: slab ``b`` holds the points whose projection
        ``(x - mean) . direction`` lies between ``bounds[b - 1]`` and ``bounds[b]``.
    """
    moments = rt.gather([rt.submit(None, _moments, c) for c in chunks])
    n = sum(m[0] for m in moments)
    mean = sum(m[1] for m in moments) / n
    cov = sum(m[2] for m in moments) / n - np.outer(mean, mean)
    axes = leading_axes(cov)
    direction = axes[:, 0]
    per_chunk = max(100, 20_000 // len(chunks))
    sample = np.concatenate(rt.gather([
        rt.submit(None, _sample, c, mean, direction, per_chunk, seed + i)
        for i, c in enumerate(chunks)]))
    bounds = np.quantile(sample, np.arange(1, n_blocks) / n_blocks)
    labels = [rt.submit(None, _labels, c, mean, direction, bounds) for c in chunks]
    counts = np.array(rt.gather([rt.submit(None, _counts, lab, n_blocks) for lab in labels]))
    sizes = counts.sum(axis=0)
    if np.any(sizes == 0):
        raise ValueError(f"the slab partition left an empty block (sizes {sizes.tolist()}): "
                         "use fewer blocks for this data.")
    offsets = np.zeros(n_blocks + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    seeds = np.random.SeedSequence(seed).generate_state(len(chunks))
    start_rows = [rt.submit(None, _start_rows, c, rank, int(s))
                  for c, s in zip(chunks, seeds, strict=True)]
    blocks, start = [], []
    for b in range(n_blocks):
        parts = [rt.submit(None, _select, c, e, lab, b, int(starts[i]))
                 for i, (c, e, lab) in enumerate(zip(chunks, start_rows, labels, strict=True))]
        triple = rt.submit(b, _concat, mean, axes, *parts)
        blocks.append(rt.submit(b, _points, triple))
        start.append(rt.submit(b, _start, triple))
    return blocks, start, offsets, (mean, direction, bounds)


def exchange(rt, request_sizes, send, values, block):
    """The halo pieces of ``block`` from the futures ``values`` (one per owner block)."""
    return [rt.submit(c, lay.take, values[c], send[(c, block)])
            for c in sorted(request_sizes[block]) if request_sizes[block][c]]


def build_graph(rt, blocks, offsets, geometry, n_neighbors, sigma, delta, method, seed):
    """Rows of ``L`` per slab block, with the global ``sigma`` and the edge cut.

    ``geometry`` is the slab geometry returned by :func:`slab_blocks` (it prunes the
    queries to other slabs); the other parameters are those of
    :func:`psdlearn.graph.knn_laplacian`, with ``method`` "exact" or "approximate".

    Returns
    -------
    laplacian : list of futures of CSR triples ``(indptr, global cols, values)``
    sigma : float
    info : dict
        ``edge_cut`` (fraction of the edges of ``S`` between slabs), ``adjacent`` (set of
        pairs of slabs joined by an edge).
    """
    P = len(blocks)
    n = int(offsets[-1])
    k_query = min(max(n_neighbors, SIGMA_NEIGHBORS), n - 1)
    indexes = [rt.submit(b, _fit_index, blocks[b], method, seed) for b in range(P)]
    knn = []
    for q in range(P):
        own = rt.submit(q, _query, indexes[q], k_query, int(offsets[q]))
        parts = [rt.submit(c, _query_rows, indexes[c],
                           rt.submit(q, _near_slab, blocks[q], own, geometry, c, k_query),
                           k_query, int(offsets[c])) for c in range(P) if c != q]
        knn.append(rt.submit(q, _merge, k_query, own, *parts))
    if sigma == "auto":
        sums = rt.gather([rt.submit(q, _sigma_sums, knn[q]) for q in range(P)])
        total, count = sum(s[0] for s in sums), sum(s[1] for s in sums)
        sigma = 0.5 * total / count if total > 0 else 1.0
    sigma = float(sigma)
    rev = [rt.submit(q, _reversed_edges, knn[q], n_neighbors, sigma, int(offsets[q]), offsets)
           for q in range(P)]
    sym = [rt.submit(q, _symmetric_rows, knn[q], n_neighbors, sigma, int(offsets[q]),
                     *[rt.submit(c, _pick, rev[c], q) for c in range(P)])
           for q in range(P)]
    stats = rt.gather([rt.submit(q, _cut_stats, sym[q], offsets, q) for q in range(P)])
    slabs = lay.Layout(offsets, np.empty(0, dtype=np.int64))
    requests = [rt.submit(q, lay.needs, slabs, q, rt.submit(q, _cols, sym[q])) for q in range(P)]
    sizes = rt.gather([rt.submit(q, _sizes, requests[q]) for q in range(P)])
    send = {(c, q): rt.submit(c, lay.send_index, slabs, c, requests[q])
            for q in range(P) for c in sizes[q]}
    inv = [rt.submit(q, _inv_sqrt_degree, sym[q]) for q in range(P)]
    laplacian = [rt.submit(q, _laplacian_rows, slabs, q, requests[q], sym[q], float(delta),
                           inv[q], *exchange(rt, sizes, send, inv, q)) for q in range(P)]
    info = {"edge_cut": sum(s[0] for s in stats) / max(sum(s[1] for s in stats), 1),
            "adjacent": {(q, c) for q in range(P) for c in stats[q][2]},
            "indexes": indexes, "k_query": k_query}
    return laplacian, sigma, info


def _cols(sym):
    return sym[1]


def make_blocks(rt, layout, laplacian, targets, add_diagonal):
    """The static data of every block of ``layout`` and its halo exchange plan.

    Parameters
    ----------
    laplacian : list of futures
        CSR rows of ``L`` (global cols) of each block's own rows, in its local order.
    targets : list of futures or tuples
        ``(rows, cols, values)`` of each block's ordered constraint set (global ids,
        ``rows`` owned by the block).

    Returns
    -------
    static : list of futures of dicts (see :func:`_static`)
    sizes : list of dicts ``{owner: halo rows}``
    send : dict ``(owner, block) -> future of local indices``
    """
    B = layout.n_blocks
    requests = [rt.submit(q, _block_needs, layout, q, laplacian[q], targets[q])
                for q in range(B)]
    sizes = rt.gather([rt.submit(q, _sizes, requests[q]) for q in range(B)])
    send = {(c, q): rt.submit(c, lay.send_index, layout, c, requests[q])
            for q in range(B) for c in sizes[q]}
    static = [rt.submit(q, _static, layout, q, requests[q], laplacian[q], targets[q],
                        add_diagonal) for q in range(B)]
    return static, sizes, send


def coordinator_rows(rt, start_rows, laplacian, offsets, special):
    """Rows of ``L`` and of the start per block of the BCD layout: the free rows of each
    slab, then the rows of ``special`` (the coordinator). ``start_rows``: the futures of
    the slabs' starting rows (from :func:`slab_blocks`)."""
    P = len(laplacian)
    rows, start = [], []
    for inside in (False, True):
        rows.append([rt.submit(q, _rows_not_in, laplacian[q], int(offsets[q]), special,
                               inside) for q in range(P)])
        start.append([rt.submit(q, _start_subset, start_rows[q], int(offsets[q]), special,
                                inside) for q in range(P)])
    return (rows[0] + [rt.submit(P, _stack_csr, *rows[1])],
            start[0] + [rt.submit(P, _stack_rows, *start[1])])
