"""``NPKL.fit`` and ``NPKL.transform`` on a row-chunked ``dask.array.Array``.

The estimator calls :func:`fit_dask` when ``X`` is a dask array. The steps, each on the
workers: slab partition of the rows (:mod:`.layout`), the kNN graph and the rows of
``L`` by blocks (:mod:`._build`), the blocks of the solver with their halo plans, the
solve (:mod:`.admm` or :mod:`.bcd`), and the embedding written back in the input's row
chunks. The client holds the constraints (``O(m)``), block sizes and scalars, never a
row of ``X``, ``E`` or ``L``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from psdlearn._progress import progress_bar
from psdlearn.graph import AUTO_EXACT_MAX_SAMPLES, AUTO_TREE_MAX_FEATURES
from psdlearn.npkl._settings import resolve_solver_options
from psdlearn.npkl.losses import LOSS_TABLE, get_loss
from psdlearn.npkl.problem import auto_rank, pair_terms, rank_rule_count

from . import _build
from ._runtime import Runtime, attach_transfer_log, get_client
from .layout import Layout, block_colors

__all__ = ["fit_dask", "is_dask_array", "transform_dask"]

#: Losses of the distributed solvers, from the loss table: ADMM's quadratic ones, and those
#: with a BCD row kernel (the hinge with the smoothing stages of ``hinge_smoothing``).
DASK_LOSSES = {
    "admm": tuple(name for name, loss in LOSS_TABLE.items() if loss.quadratic),
    "bcd": tuple(name for name, loss in LOSS_TABLE.items() if loss.kernel is not None),
}


def is_dask_array(X):
    """Whether ``X`` is a ``dask.array.Array`` (without importing dask)."""
    return type(X).__module__.startswith("dask.array")


def _chunk_rows(E, block, lo, hi):
    old = block[1]
    mask = (old >= lo) & (old < hi)
    return old[mask] - lo, E[mask]


def _assemble(n_rows, rank, *parts):
    out = np.empty((n_rows, rank))
    for pos, rows in parts:
        out[pos] = rows
    return out


def _slab_embedding(free, coordinator_rows, offset, n_rows, special):
    rows = offset + np.arange(n_rows)
    mine = np.isin(rows, special)
    out = np.empty((n_rows, free.shape[1]))
    out[~mine] = free
    out[mine] = coordinator_rows
    return out


def _slice(E, lo, hi):
    return E[lo:hi]


def _new_pairs(rt, pairs, blocks, offsets):
    """The constraint pairs in the new numbering (only their ``<= 2 m`` ids travel: each
    slab returns the new ids of those it holds, -1 for the others)."""
    ids = np.unique(pairs)
    new = np.max(rt.gather([rt.submit(q, _build._new_ids, blocks[q], int(offsets[q]), ids)
                            for q in range(len(blocks))]), axis=0)
    return new[np.searchsorted(ids, pairs)]


def _omega(est):
    omega = est.solver_options_["omega"]
    if omega != "auto":
        return float(omega)
    rho = min(1.0 / (1.0 + est.delta), 0.9999)  # Jacobi radius bound, Hu & Kwok 2015 Prop. 1
    return 2.0 / (1.0 + np.sqrt(1.0 - rho * rho))


def fit_dask(est, X, y, *, n_blocks=None):
    """Fit the NPKL estimator ``est`` on the dask array ``X`` (see the module docstring).

    Parameters
    ----------
    est : NPKL
        With ``solver="admm"`` (losses pcp, square) or ``"bcd"`` (hinge, squared_hinge,
        square, linear) and ``graph="knn"``.
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows (column chunks are merged).
    y : PairwiseConstraints or array-like of shape (m, 3)
        As for NumPy input (labels as a NumPy vector).
    n_blocks : int, optional
        Number of slabs. Default: the workers' threads (ADMM), twice the workers (BCD:
        the two colours of slabs each keep every worker busy).

    Returns
    -------
    est
    """
    from psdlearn.constraints import as_constraints
    from psdlearn.npkl.solvers import NPKL_SOLVERS

    if est.graph != "knn":
        raise ValueError("a dask array X is read as feature vectors: use graph='knn'.")
    est.solver_options_ = resolve_solver_options(est)
    spec = NPKL_SOLVERS[est.solver]
    if not spec.distributed or est.loss not in DASK_LOSSES[est.solver]:
        raise ValueError(f"on a dask array, NPKL runs solver='admm' with the losses "
                         f"{DASK_LOSSES['admm']} and solver='bcd' with {DASK_LOSSES['bcd']}; "
                         f"got solver={est.solver!r}, loss={est.loss!r}.")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}.")
    X = X.astype(np.float64).rechunk({1: -1})
    n, d = (int(s) for s in X.shape)
    if n < 2:
        raise ValueError("X must have at least 2 samples.")
    if is_dask_array(y):
        y = y.compute()
    C = as_constraints(y, n)
    if C.n_pairs == 0:
        raise ValueError("y holds no constraint: NPKL needs at least one pair.")
    m = rank_rule_count(est.loss, C.pairs, C.signs, n)
    rank = min(auto_rank(m), n) if est.rank == "auto" else int(est.rank)
    if rank > n:
        raise ValueError(f"rank={rank} exceeds the number of samples n={n}.")
    rng = check_random_state(est.random_state)
    seed = int(rng.randint(0, 2**31 - 1))
    est.gamma_ = gamma = _dask_gamma(est)

    client = get_client()
    threads = client.nthreads()
    if n_blocks is None:
        n_blocks = sum(threads.values()) if est.solver == "admm" else 2 * len(threads)
    n_blocks = max(1, min(int(n_blocks), n // 2))
    rt = Runtime(client, n_blocks, coordinator=est.solver == "bcd")
    t_graph = time.perf_counter()
    chunks = client.compute(list(X.to_delayed().ravel()))
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    blocks, start_rows, offsets, geometry = _build.slab_blocks(
        rt, chunks, starts, n_blocks, seed, rank)
    del chunks  # the slabs hold the rows now
    method = est.knn_method
    if method == "auto":
        small = n <= AUTO_EXACT_MAX_SAMPLES or d <= AUTO_TREE_MAX_FEATURES
        method = "exact" if small else "approximate"
    k = min(int(est.n_neighbors), n - 1)
    laplacian, sigma, info = _build.build_graph(rt, blocks, offsets, geometry, k, est.sigma,
                                                est.delta, method, seed)
    pairs = _new_pairs(rt, C.pairs, blocks, offsets)
    signs = C.signs.astype(np.float64)
    est.graph_time_ = time.perf_counter() - t_graph

    start = time.perf_counter()
    bar = progress_bar(est.verbose, total=est.max_iter, desc=f"NPKL {est.solver} (dask)",
                       unit="iter")

    def callback(it, _, objective):
        bar.update(1)
        bar.set_postfix(objective=f"{objective:.6g}", refresh=False)

    rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
    if est.solver == "admm":
        from .admm import solve_admm_distributed

        layout = Layout(offsets, np.empty(0, dtype=np.int64))
        # the ordered targets c t of the pair terms; the per-sample (diagonal) ones are
        # added by the workers
        terms, per_sample = pair_terms(get_loss(est.loss), pairs, signs, gamma)
        vals = np.tile(terms.coef * terms.targets, 2)
        owner = layout.owner(rows)
        targets = [(rows[owner == q], cols[owner == q], vals[owner == q])
                   for q in range(n_blocks)]
        static, sizes, send = _build.make_blocks(rt, layout, laplacian, targets,
                                                 per_sample > 0)
        del laplacian  # the workers free the global-id rows once the blocks are built
        with bar:
            res = solve_admm_distributed(rt, static, sizes, send, start_rows, rank=rank,
                                         gamma=gamma, rho=float(est.solver_options_["rho"]),
                                         max_iter=est.max_iter, tol=est.tol,
                                         callback=callback)
        slab_E = res.embedding
        colors = None
    else:
        from .bcd import solve_bcd_stages

        special = np.unique(pairs)
        layout = Layout(offsets, special)
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0))
        targets = [empty] * n_blocks + [(rows, cols, np.tile(signs, 2))]
        rows_L, start_E = _build.coordinator_rows(rt, start_rows, laplacian, offsets,
                                                  special)
        static, sizes, send = _build.make_blocks(rt, layout, rows_L, targets, False)
        del laplacian, rows_L, start_rows
        colors = block_colors(info["adjacent"], n_blocks)
        est.omega_ = _omega(est)
        with bar:
            res = solve_bcd_stages(rt, static, sizes, send, colors, start_E, rank=rank,
                                   loss=est.loss,
                                   hinge_smoothing=est.solver_options_["hinge_smoothing"],
                                   gamma=gamma, b=float(est.b), seed=seed, omega=est.omega_,
                                   max_iter=est.max_iter, tol=est.tol, callback=callback)
        cut = np.searchsorted(special, offsets)
        slab_E = [rt.submit(q, _slab_embedding, res.embedding[q],
                            rt.submit(n_blocks, _slice, res.embedding[n_blocks],
                                      int(cut[q]), int(cut[q + 1])),
                            int(offsets[q]), int(offsets[q + 1] - offsets[q]), special)
                  for q in range(n_blocks)]
    est.fit_time_ = time.perf_counter() - start
    attach_transfer_log(rt, res.comm_history)

    import dask.array as da

    futures = []
    for c in range(len(starts) - 1):
        lo, hi = int(starts[c]), int(starts[c + 1])
        parts = [rt.submit(q, _chunk_rows, slab_E[q], blocks[q], lo, hi)
                 for q in range(n_blocks)]
        futures.append(rt.submit(None, _assemble, hi - lo, rank, *parts))
    # the fit ends once the embedding is on the workers: a worker lost until then raises
    rt.wait(futures)
    est.embedding_ = da.concatenate(
        [da.from_delayed(f, shape=(int(h), rank), dtype=np.float64)
         for f, h in zip(futures, np.diff(starts), strict=True)], axis=0)
    for key in spec.attributes:  # the ones the distributed solver returns (ADMM histories)
        if key in res.info:
            setattr(est, key + "_", list(res.info[key]))
    est.objective_history_ = list(res.objective_history)
    est.time_history_ = list(res.time_history)
    est.comm_history_ = list(res.comm_history)
    est.n_iter_ = res.n_iter
    est.converged_ = bool(res.converged)
    est.rank_ = rank
    est.sigma_ = sigma
    est.n_neighbors_ = est.n_neighbors_transform_ = k
    est.n_features_in_ = d
    est.side_info_ = C
    est.degrees_ = est.laplacian_ = est.neighbor_index_ = est.X_fit_ = None
    est.graph_info_ = {"method": method, "backend": "blockwise", "n_neighbors": k}
    est.partition_info_ = {
        "method": "slabs along the first principal direction",
        "n_blocks": n_blocks, "block_sizes": np.diff(offsets).tolist(),
        "edge_cut": info["edge_cut"], "colors": colors,
        "halo_rows": [int(sum(s.values())) for s in sizes],
        "workers": list(rt.home),
    }
    est._dask_model = {"indexes": info["indexes"], "embedding": slab_E, "runtime": rt}
    if not res.converged:
        warnings.warn(f"NPKL(solver={est.solver!r}) on dask stopped at "
                      f"max_iter={est.max_iter} before its stopping test held; increase "
                      "max_iter or tol.", ConvergenceWarning, stacklevel=4)
    return est


def _dask_gamma(est):
    """``gamma`` of a fit on a dask array.

    ``"auto"`` of ``pcp`` is ``PCP_AUTO_FACTOR (1 + delta)`` (``max_i L_ii`` of the built
    normalized Laplacian); that of the margin losses needs ``gamma_0``, an eigenvalue of
    the whole graph, which the blockwise path does not compute: it uses 1, with a warning.
    """
    from psdlearn.npkl.gamma import PCP_AUTO_FACTOR

    if est.gamma != "auto":
        return float(est.gamma)
    if not get_loss(est.loss).margin:  # pcp, as psdlearn.npkl.gamma.auto_gamma
        return PCP_AUTO_FACTOR * (1.0 + float(est.delta))
    warnings.warn(f"gamma='auto' of the {est.loss} loss needs gamma_0 of the whole graph, "
                  "which a fit on a dask array does not compute: gamma = 1 is used; pass a "
                  "float gamma.",
                  UserWarning, stacklevel=4)
    return 1.0


def _transform_part(index, E, X, k):
    dist, ind = index.kneighbors(X, n_neighbors=min(k, index.n_samples_fit_))
    return dist, E[ind]


def _transform_merge(sigma, k, *parts):
    dist = np.concatenate([p[0] for p in parts], axis=1)
    rows = np.concatenate([p[1] for p in parts], axis=1)
    order = np.argsort(dist, axis=1, kind="stable")[:, :k]
    dist = np.take_along_axis(dist, order, 1)
    rows = np.take_along_axis(rows, order[:, :, None], 1)
    s = np.exp(-(dist**2) / (2.0 * sigma**2))
    total = s.sum(axis=1, keepdims=True)
    coef = np.divide(s, total, out=np.zeros_like(s), where=total > 0)
    return np.einsum("bk,bkr->br", coef, rows)


def transform_dask(est, X):
    """:meth:`NPKL.transform` of a row-chunked dask array, on the blocks of the fit.

    The weighted mean of ``out_of_sample="weighted_mean"``: the blocks keep no training
    degrees, which the default normalized row needs, so that default warns and falls back.
    """
    import dask.array as da

    if est.out_of_sample != "weighted_mean":
        warnings.warn(f"transform of a dask array computes out_of_sample='weighted_mean', "
                      f"not {est.out_of_sample!r}: the distributed fit keeps no training "
                      "degrees. Set out_of_sample='weighted_mean' to silence this.",
                      UserWarning, stacklevel=3)

    model = getattr(est, "_dask_model", None)
    if model is None:
        raise ValueError("transform of a dask array needs a model fit on a dask array.")
    if X.ndim != 2 or X.shape[1] != est.n_features_in_:
        raise ValueError(f"X must have shape (n, {est.n_features_in_}), got {X.shape}.")
    rt = model["runtime"]
    rt.check_workers()
    X = X.astype(np.float64).rechunk({1: -1})
    chunks = rt.client.compute(list(X.to_delayed().ravel()))
    out = []
    for c, chunk in enumerate(chunks):
        parts = [rt.submit(q, _transform_part, model["indexes"][q], model["embedding"][q],
                           chunk, est.n_neighbors_) for q in range(len(model["indexes"]))]
        fut = rt.submit(None, _transform_merge, est.sigma_, est.n_neighbors_, *parts)
        out.append(da.from_delayed(fut, shape=(X.chunks[0][c], est.rank_), dtype=np.float64))
    return da.concatenate(out, axis=0)
