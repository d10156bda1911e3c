"""Peak memory of an NPKL fit, predicted from its sizes, and the memory the process may use.

An NPKL fit holds, phase by phase (``f`` the bytes of a float of ``dtype``, ``k`` the
neighbours, ``r`` the rank, ``nnz ~ 2 n k`` the stored entries of the symmetrised graph):

- **graph**: ``X`` (``8 n d``), the neighbour index (exact: a kd-tree's copy of ``X``;
  approximate: the HNSW index, float32 vectors and ``2 M`` level-0 links per point,
  ``n (4 d + 8 M)``, and from :data:`psdlearn.graph.HNSW_SPATIAL_MIN_SAMPLES` points in
  at most ``HNSW_SPATIAL_MAX_FEATURES`` features its int64 insertion order, ``8 n``; or,
  from :data:`psdlearn.graph.NNDESCENT_MIN_SAMPLES` points with pynndescent installed,
  NN-descent's float32 copy of ``X``, its trees' indices and its lists of ``l`` entries,
  ``n (4 d + 4 NNDESCENT_TREES + 8 l)``;
  faiss's visited marks, a byte per point and thread, are left to the margin), the
  neighbour lists (``16 n (k + 1)``: int64 indices and float64
  distances, at least :data:`psdlearn.graph.SIGMA_NEIGHBORS` for the width rule) and the
  assembly of the graph (its triplets and the CSR matrix, about ``40 nnz``);
- **solve**: ``X``, the index (kept for ``transform``), ``L`` and, for a kNN graph, its
  copy in the points' value order, or for the solvers that renumber the samples (BCD,
  ADMM) their reordered copy instead (``12 nnz`` each), the embedding
  (``f n r``: BCD renumbers and
  prolongs its start in place, sweeps in it and returns it to the points' order in
  place; the other solvers also hold a reordered copy, ``2 f n r``), with BCD's
  extrapolation its two saved arrays (``2 f n r``), with float32 the sweeps' float32
  copy of the Laplacian's values (``4 nnz``), and while BCD's multilevel start solves
  its first coarse level, the aggregates (``8 n``), the coarse Laplacian
  (``12 nnz_c``) and, in float32 whatever ``f``, the sweeps' copy of its values
  (``4 nnz_c``) and the coarse embedding (``4 n_c r``), with ``n_c``, ``nnz_c`` the
  fractions :data:`COARSE_SAMPLES`, :data:`COARSE_ENTRIES` of ``n``, ``nnz``;
- **certificate**: ``X``, the index, ``L`` (and its value-ordered copy), the
  embedding, with float32 its float64 copy (``8 n r``: the certificate computes in
  float64), and its orthonormal basis (``8 n r``), then either the basis's first pass
  (``8 n r``, before its Cholesky QR step) or the dual matrix (``12 nnz``) and either
  the basis's product by it (``8 n r``) or, after it, the Lanczos vectors
  (``8 n (ncv + 4)``, ``ncv = 32``); the directions of the basis that the dual matrix
  annihilates are a mask of its columns, not a copy.

The solve and the certificate also hold the ``gamma_0`` vector kept for
``partial_fit`` (``4 n``, float32; ``gamma="auto"`` with a margin loss). The peak is
the largest phase plus the interpreter and the imported libraries (:data:`BASELINE_BYTES`).
The coefficients are those sizes, not fitted; the benchmark of the estimate compares them
with the peak resident memory of fits in fresh processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["MemoryEstimate", "available_memory", "check_memory", "guard_npkl_fit",
           "memory_fixes", "npkl_estimate", "npkl_memory_estimate"]

#: Resident memory of the interpreter with numpy, scipy, scikit-learn, numba, faiss and
#: the package imported, after the first (compiling) fit of a small problem (measured
#: 0.30 GiB on Linux, Python 3.11).
BASELINE_BYTES = 300 * 2**20
#: HNSW links per point and level 0 (``2 M``, ``M = psdlearn.graph.HNSW_M``).
HNSW_LEVEL0_LINKS = 24
#: Random-projection trees pynndescent builds from about 3·10^5 points on (kept with its
#: lists, each holding an int32 index per point).
NNDESCENT_TREES = 12
#: Lanczos vectors of the certificate's eigen-solve (ARPACK ``ncv``).
LANCZOS_VECTORS = 32
#: Neighbours the width rule reads at least (``psdlearn.graph.SIGMA_NEIGHBORS``).
SIGMA_NEIGHBORS = 10
#: Bytes per stored entry of a CSR matrix (float64 value, int32 column index).
CSR_ENTRY = 12
#: The first coarse level of BCD's multilevel start, as fractions of the fine graph's
#: samples and stored entries (measured on kNN graphs of 10^6 and 10^7 points: 0.08-0.09
#: and 0.35-0.45).
COARSE_SAMPLES = 0.1
COARSE_ENTRIES = 0.5
#: Bytes per graph entry during assembly: the directed triplets (int64 row and column,
#: float64 value), their symmetrised copy and the CSR result.
ASSEMBLY_ENTRY = 40
#: The guard asks for the predicted arrays plus this fraction of them (the baseline, a
#: measured constant, without): the model counts the arrays, not the transient copies,
#: and above the baseline the measured peaks of 10^5- to 10^7-point fits held up to 38%
#: more than it predicts (20% at 10^6 and above;
#: ``benchmarks/results/memory_estimate_fixed_pairs_repredicted.md``), so without a
#: margin a fit admitted at the limit could still end in the kernel's OOM killer.
MEMORY_MARGIN = 0.3


@dataclass(frozen=True)
class MemoryEstimate:
    """Predicted peak memory of a fit.

    Attributes
    ----------
    peak_bytes : int
        Predicted peak resident memory of the process during the fit.
    phase : str
        The phase of the peak: ``"graph"``, ``"solve"`` or ``"certificate"``.
    breakdown : dict of str to int
        Bytes of each array held at the peak (and ``"baseline"``, the interpreter and
        libraries).
    config : dict
        The arguments of :func:`npkl_memory_estimate` the estimate was made for.
    """

    peak_bytes: int
    phase: str
    breakdown: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)

    @property
    def peak_gb(self):
        """``peak_bytes`` in GB (10^9 bytes)."""
        return self.peak_bytes / 1e9

    @property
    def required_bytes(self):
        """The memory the guard of ``fit`` asks for: ``peak_bytes`` plus
        :data:`MEMORY_MARGIN` of its arrays (the part above the baseline; the model's
        measured error)."""
        arrays = self.peak_bytes - self.breakdown.get("baseline", 0)
        return int(self.peak_bytes + MEMORY_MARGIN * arrays)

    def fits(self, available=None):
        """Whether :attr:`required_bytes` fit in ``available`` bytes (default:
        :func:`available_memory`; True when that is unknown)."""
        available = available_memory() if available is None else available
        return available is None or self.required_bytes <= available

    def summary(self):
        """One line: the peak, its phase and its three largest parts."""
        parts = sorted(self.breakdown.items(), key=lambda kv: -kv[1])[:3]
        detail = ", ".join(f"{name} {_gb(b)}" for name, b in parts)
        return f"predicted peak memory {_gb(self.peak_bytes)} in the {self.phase} ({detail})"

    def __str__(self):
        return self.summary()


def _gb(b):
    return f"{b / 1e9:.2f} GB"


def npkl_memory_estimate(n_samples, n_features, *, rank, n_neighbors=5, dtype=np.float64,
                         knn_method="exact", solver="bcd", n_pairs=0, certificate=True,
                         nnz=None, graph="knn", extrapolation=False, gamma_vectors=False,
                         multilevel=False):
    """Predicted peak memory of ``NPKL.fit`` (module docstring for the model).

    Parameters
    ----------
    n_samples, n_features : int
        ``n`` and ``d`` of ``X`` (``n_features`` is ignored for a precomputed graph).
    rank : int
        Columns of the embedding.
    n_neighbors : int, default=5
    dtype : dtype, default=np.float64
        Float type of the embedding (and, when float32, of the sweeps' copy of the
        Laplacian's values).
    knn_method : {"exact", "approximate"}, default="exact"
        The neighbour search (``"auto"`` resolved by the caller).
    solver : str, default="bcd"
        ``"bcd"`` keeps a reordered copy of ``L`` and reorders ``E`` in place; the
        others are modelled with a reordered copy of both.
    n_pairs : int, default=0
        Constrained pairs (``40`` bytes each: indices, signs, terms).
    certificate : bool, default=True
        Whether the certificate runs after the solve.
    nnz : int, optional
        Stored entries of sparse ``X`` (its size is then ``12 nnz``).
    graph : {"knn", "precomputed", "precomputed_nearest_neighbors"}, default="knn"
    extrapolation : bool, default=False
        Whether BCD's sweeps are extrapolated (``solver_options["extrapolation"]``: two
        more arrays of the size of the embedding).
    gamma_vectors : bool, default=False
        Whether the fit keeps the vector of its ``gamma_0`` eigen-solve (float32,
        ``4 n`` bytes: ``gamma="auto"`` with a margin loss above 400 samples), from which
        ``partial_fit`` starts.
    multilevel : bool, default=False
        Whether BCD starts coarse to fine (``solver_options["multilevel"]``), holding a
        coarse level beside the fine problem.

    Returns
    -------
    MemoryEstimate
    """
    n, d, r = int(n_samples), int(n_features), int(rank)
    k = int(n_neighbors)
    f = np.dtype(dtype).itemsize
    # directed edges (k per point), stored both ways after symmetrisation, plus diagonal
    entries = 2 * n * k + n
    x_bytes = 0 if graph != "knn" else (CSR_ENTRY * int(nnz) + 4 * n if nnz is not None
                                        else 8 * n * d)
    if graph != "knn":
        index = 0
    elif knn_method == "approximate":
        from psdlearn.graph import _nndescent_length, _spatial_insertion, _uses_nndescent
        if _uses_nndescent(n):
            # its float32 copy of X, its trees' point indices and the lists (int32 index,
            # float32 distance)
            length = _nndescent_length(n, max(k, SIGMA_NEIGHBORS) + 1)
            index = n * (4 * d + 4 * NNDESCENT_TREES + 8 * length)
        else:
            index = n * (4 * d + 4 * HNSW_LEVEL0_LINKS + (8 if _spatial_insertion(n, d) else 0))
    else:
        index = x_bytes + 8 * n  # the kd-tree's (or brute force's) copy and its order
    lists = 16 * n * (max(k, SIGMA_NEIGHBORS) + 1)
    laplacian = CSR_ENTRY * entries + 4 * (n + 1)
    pairs = 40 * int(n_pairs)
    base = {"baseline": BASELINE_BYTES, "X": x_bytes, "index": index, "pairs": pairs}
    # after the graph phase: the kept gamma_0 vectors, and the Laplacian in the points'
    # value order (a kNN graph's; fit keeps the one in the input's order too)
    kept = {"gamma_0 vectors": 4 * n if gamma_vectors else 0,
            "value-ordered Laplacian": laplacian if graph == "knn" else 0}
    from psdlearn.npkl.solvers import NPKL_SOLVERS

    renumber = solver in NPKL_SOLVERS and getattr(NPKL_SOLVERS[solver], "renumber", False)
    phases = {
        "graph": {**base, "neighbour lists": lists, "graph assembly": ASSEMBLY_ENTRY * entries},
        # a renumbering solver holds L's renumbered copy instead of the value-ordered one
        "solve": {**base, **kept, "Laplacian": laplacian,
                  **({"value-ordered Laplacian": 0, "reordered Laplacian": laplacian}
                     if renumber else {}),
                  "embedding": (1 if solver == "bcd" else 2) * f * n * r,
                  "extrapolation arrays": 2 * f * n * r if extrapolation else 0,
                  # its embedding and Laplacian values in float32 (bcd.COARSE_DTYPE)
                  "coarse level": (8 * n + int((CSR_ENTRY + 4) * COARSE_ENTRIES * entries)
                                   + int(4 * COARSE_SAMPLES * n) * r
                                   if multilevel and solver == "bcd" else 0),
                  "float32 Laplacian values": 4 * entries if f == 4 else 0,
                  # ADMM writes each half step into spare arrays, swapped in when complete
                  "spare half-step arrays": 3 * f * n * r if solver == "admm" else 0},
    }
    if certificate:
        # the basis of range(E) (a first pass and its Cholesky QR step), then the Lanczos
        # run on the dual matrix with the basis kept
        cert = {**base, **kept, "Laplacian": laplacian, "embedding": f * n * r,
                "float64 copy of the embedding": 8 * n * r if f < 8 else 0,
                "range basis": 8 * n * r}
        phases["certificate"] = max(
            ({**cert, "first pass of the range basis": 8 * n * r},
             # the basis's product with S is freed before the Lanczos run, which keeps
             # the basis (its deflation set)
             {**cert, "dual matrix": laplacian,
              "Lanczos vectors or the basis's product":
                  max(8 * n * (LANCZOS_VECTORS + 4), 8 * n * r)}),
            key=lambda p: sum(p.values()))
    phase = max(phases, key=lambda p: sum(phases[p].values()))
    breakdown = {key: int(v) for key, v in phases[phase].items() if v}
    config = {"n_samples": n, "n_features": d, "rank": r, "n_neighbors": k,
              "dtype": np.dtype(dtype).name, "knn_method": knn_method, "solver": solver,
              "n_pairs": int(n_pairs), "certificate": bool(certificate), "nnz": nnz,
              "graph": graph, "extrapolation": bool(extrapolation),
              "gamma_vectors": bool(gamma_vectors), "multilevel": bool(multilevel)}
    return MemoryEstimate(int(sum(breakdown.values())), phase, breakdown, config)


def _read_int(path):
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def available_memory():
    """Bytes this process may still allocate, or None when unknown.

    The smaller of ``MemAvailable`` of ``/proc/meminfo`` and the room left under the
    cgroup's limit (v2 ``memory.max - memory.current``, v1 ``limit_in_bytes -
    usage_in_bytes``); None where neither can be read (not Linux).

    Returns
    -------
    int or None
    """
    found = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        cap, used = _read_int(limit), _read_int(usage)
        # v1 reports "no limit" as a huge number (about 2^63)
        if cap is not None and used is not None and cap < 2**60:
            found.append(max(cap - used, 0))
            break
    return min(found) if found else None


def memory_fixes(config, available, *, float32=False, yielding=()):
    """Changes of ``config`` (arguments of :func:`npkl_memory_estimate`) whose predicted
    peak, with its margin (:meth:`MemoryEstimate.fits`), fits in ``available`` bytes, as
    ``NPKL`` arguments (a lower ``rank``, fewer neighbours, float32, the approximate
    search), ending with the Dask route, which holds one row block per worker.

    Parameters
    ----------
    config : dict
    available : int
    float32 : bool, default=False
        Whether the estimator offers ``dtype=np.float32``.
    yielding : tuple of str, default=()
        Keys of ``config`` (``"extrapolation"``, ``"certificate"``) that the fit sets to
        False where only that makes it fit (:func:`guard_npkl_fit`): a change fits when
        it fits with some of them off.

    Returns
    -------
    list of str
    """
    offs = [{}, *_without(yielding)]

    def fits(**change):
        return any(npkl_memory_estimate(**{**config, **change, **off}).fits(available)
                   for off in offs)

    fixes = []
    rank = config["rank"]
    lower = [r for r in sorted({max(1, rank * j // 8) for j in range(1, 8)}, reverse=True)
             if r < rank]
    fitting = next((r for r in lower if fits(rank=r)), None)
    if fitting is not None:
        fixes.append(f"rank={fitting}")
    if config["graph"] == "knn":  # the graph's assembly grows with k (the graph phase)
        k = config["n_neighbors"]
        fewer = next((j for j in sorted({max(1, k * i // 8) for i in range(1, 8)},
                                        reverse=True) if j < k and fits(n_neighbors=j)), None)
        if fewer is not None:
            fixes.append(f"n_neighbors={fewer}")
    if float32 and config["dtype"] != "float32" and fits(dtype="float32"):
        fixes.append("dtype=np.float32")
    if (config["graph"] == "knn" and config["knn_method"] == "exact"
            and fits(knn_method="approximate")):
        fixes.append("knn_method='approximate'")
    fixes.append("X as a row-chunked dask.array, fitted on a Dask cluster "
                 "(psdlearn.npkl.distributed; each worker holds its row blocks)")
    return fixes


def check_memory(estimate, *, name, verbose=0, available=None, float32=False,
                 yielding=()):
    """Raise ``MemoryError`` before a fit whose predicted peak, with its margin
    (:attr:`MemoryEstimate.required_bytes`), exceeds the memory left.

    Parameters
    ----------
    estimate : MemoryEstimate
    name : str
        The estimator, for the messages.
    verbose : int, default=0
        ``>= 1``: the estimate (and the memory available) on stderr.
    available : int, optional
        Default: :func:`available_memory` (the check is skipped when that is unknown).
    float32, yielding
        Passed to :func:`memory_fixes`.

    Raises
    ------
    MemoryError
        With the prediction, the memory available and the changes that would fit.
    """
    import sys

    available = available_memory() if available is None else available
    if verbose:
        room = "unknown" if available is None else _gb(available)
        print(f"{name}: {estimate.summary()}; available {room}", file=sys.stderr)
    if estimate.fits(available):
        return
    fixes = memory_fixes(estimate.config, available, float32=float32, yielding=yielding)
    raise MemoryError(
        f"{name}.fit: {estimate.summary()}; with the model's margin of "
        f"{MEMORY_MARGIN:.0%} on its arrays that is {_gb(estimate.required_bytes)}, more "
        f"than the {_gb(available)} this process may still use; nothing was allocated. "
        f"Changes that would fit: {'; '.join(fixes)}.")


def _knn_method(method, n, d, sparse):
    """``knn_method="auto"`` resolved as :class:`psdlearn.graph.NeighborIndex` does."""
    from psdlearn.graph import AUTO_EXACT_MAX_SAMPLES, AUTO_TREE_MAX_FEATURES, _have_faiss

    if method != "auto":
        return method
    small = n <= AUTO_EXACT_MAX_SAMPLES or (not sparse and d <= AUTO_TREE_MAX_FEATURES)
    return "exact" if small or not _have_faiss() else "approximate"


def npkl_estimate(est, n_samples, n_features, *, n_pairs=0, nnz=None, rank=None):
    """:func:`npkl_memory_estimate` for the parameters of the NPKL estimator ``est``.

    ``rank`` overrides the rank read from ``est``: an int ``rank``; ``"auto"`` the rule of
    ``n_pairs`` (``r (r + 1) / 2 <= m``, ``m`` the pairs for the margin losses, ``2 m + n``
    for pcp); ``"adaptive"`` the larger of ``rank_init`` and that rule (the cap of
    the escalation).
    """
    from psdlearn.npkl.gamma import _DENSE_MAX
    from psdlearn.npkl.losses import get_loss
    from psdlearn.npkl.problem import auto_rank
    from psdlearn.npkl.solvers import NPKL_SOLVERS

    n = int(n_samples)
    if rank is None:
        # the margin losses count the pairs, pcp both orders of each and the diagonal
        count = int(n_pairs) if get_loss(est.loss).margin else 2 * int(n_pairs) + n
        rule = min(auto_rank(count), n)
        rank = (int(est.rank) if not isinstance(est.rank, str)
                else rule if est.rank == "auto" else max(rule, int(est.rank_init)))
    spec = NPKL_SOLVERS[est.solver]
    return npkl_memory_estimate(
        n, n_features, rank=rank, n_neighbors=est.n_neighbors,
        dtype=getattr(est, "dtype", np.float64),
        knn_method=_knn_method(est.knn_method, n, n_features, nnz is not None),
        solver=est.solver, n_pairs=n_pairs, nnz=nnz, graph=est.graph,
        certificate=bool(spec.certificate and est.certificate_tol is not None),
        extrapolation=_extrapolated(est, n), multilevel=_multilevel(est, n),
        gamma_vectors=(est.gamma == "auto" and get_loss(est.loss).margin and n > _DENSE_MAX))


def _extrapolated(est, n):
    """Whether a BCD fit of ``est`` on ``n`` samples extrapolates its sweeps."""
    from psdlearn.npkl._multilevel import use_multilevel
    from psdlearn.npkl.losses import get_loss

    if est.solver != "bcd" or get_loss(est.loss).bounded:
        return False
    setting = (getattr(est, "solver_options", None) or {}).get("extrapolation", "auto")
    return use_multilevel(setting, n)


def _multilevel(est, n):
    """Whether a BCD fit of ``est`` on ``n`` samples starts coarse to fine."""
    from psdlearn.npkl._multilevel import use_multilevel

    setting = (getattr(est, "solver_options", None) or {}).get("multilevel", "auto")
    return est.solver == "bcd" and use_multilevel(setting, n)


def guard_npkl_fit(est, X, y):
    """Before ``NPKL.fit`` allocates: the estimate on stderr when verbose, and
    ``MemoryError`` when it exceeds the memory available (:func:`check_memory`).

    Inputs that do not read as a matrix and side information (the fit's validation
    reports those) skip the check. At a fixed rank, where the certificate's arrays are
    what does not fit, the fit runs without it and ``certificate_.note`` says why
    (``est._certificate_memory_note``).

    Returns
    -------
    PairwiseConstraints or None
        ``y`` read as pairs over the rows of ``X`` (conflicts not checked), for the fit to
        reuse; None where it was not read.
    """
    import scipy.sparse as sp

    from psdlearn.constraints import as_constraints

    est._certificate_memory_note = None
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        return None
    n, d = int(shape[0]), int(shape[1])
    try:
        C = as_constraints(y, n, check_conflicts=False)  # fit warns of conflicts, once
        rank = (est._auto_rank(y, C, n) if est.rank == "auto" else None)
        estimate = npkl_estimate(est, n, d if est.graph == "knn" else 0,
                                 n_pairs=C.n_pairs, nnz=X.nnz if sp.issparse(X) else None,
                                 rank=rank)
    except (ValueError, TypeError):
        return None
    from psdlearn.npkl.solvers import NPKL_SOLVERS

    available = available_memory()  # read once: the decisions below and the check agree
    if available is not None and not estimate.fits(available):
        estimate = _give_way(est, estimate, available)
    check_memory(estimate, name="NPKL", verbose=est.verbose, available=available,
                 float32="float32" in getattr(NPKL_SOLVERS[est.solver], "dtypes", ()),
                 yielding=_yielding(est, estimate))
    return C


def _give_way(est, estimate, available):
    """The estimate of the fit without what it may leave out when the fit as configured
    does not fit ``available`` bytes; sets what it leaves out on ``est``.

    Two things give way, first alone, then both:

    - ``solver_options["extrapolation"] == "auto"``: the plane search's two arrays the size
      of the embedding; "auto" extrapolates where it pays, and without them the optimum
      is the same.
    - at a fixed rank, the duality certificate: a report that decides nothing in the fit,
      so the fit runs and ``certificate_.note`` says why it has no bound
      (``rank="adaptive"`` grows the rank from it and is refused instead).

    The estimate is returned unchanged when neither helps (the guard then refuses the fit
    with it).
    """
    import sys

    options = getattr(est, "solver_options_", None)
    for off in _without(_yielding(est, estimate)):
        smaller = npkl_memory_estimate(**{**estimate.config, **off})
        if not smaller.fits(available):
            continue
        plane, certificate = "extrapolation" in off, "certificate" in off
        head = (f"with it {estimate.summary()}; with the model's margin "
                f"{_gb(estimate.required_bytes)}, more than the {_gb(available)} available")
        if plane:
            options["extrapolation"] = False
            if est.verbose:
                print(f"NPKL: solver_options['extrapolation']='auto' is off: {head}",
                      file=sys.stderr)
        if certificate:
            est._certificate_memory_note = (
                f"skipped: the fit with it would not fit in memory ({estimate.summary()}; "
                f"with the model's margin of {MEMORY_MARGIN:.0%} on its arrays "
                f"{_gb(estimate.required_bytes)}, more than the {_gb(available)} "
                "available at the fit's start)")
            if est.verbose:
                print(f"NPKL: the duality certificate is skipped: {head}", file=sys.stderr)
        return smaller
    return estimate


def _without(yielding):
    """The config changes that leave out the parts ``yielding``, in the order they are
    tried: each alone, then all together."""
    alone = [{key: False} for key in yielding]
    return alone + ([dict.fromkeys(yielding, False)] if len(yielding) > 1 else [])


def _yielding(est, estimate):
    """The parts of the fit of ``estimate`` that :func:`_give_way` may leave out."""
    options = getattr(est, "solver_options_", None)
    plane = (estimate.config.get("extrapolation") and options is not None
             and options.get("extrapolation") == "auto")
    certificate = est.rank != "adaptive" and estimate.config["certificate"]
    return tuple(key for key, ok in (("extrapolation", plane), ("certificate", certificate))
                 if ok)
