"""The NPKL estimator: nonparametric low-rank kernel learning from pairwise constraints.

Problem (Hu & Kwok 2015 eq. 10), with ``K = E E^T``, ``E`` of shape ``(n, r)``:

.. math::

    \\min_E \\; \\operatorname{tr}(E^T L E)
        + \\gamma \\sum_{(i, j) \\in \\mathcal{T}} \\ell(T_{ij}\\, e_i^T e_j)

over the kNN Laplacian ``L`` of the data and the must-link (``T_ij = +1``) /
cannot-link (``-1``) pairs; see :mod:`psdlearn.npkl.problem` for the losses, including
``pcp`` (Hu & Kwok 2013 eq. 1). Solvers (:data:`psdlearn.npkl.solvers.NPKL_SOLVERS`, which
also says which losses, warm starts and certificates each one supports): ``"bcd"`` (Hu &
Kwok 2015 Algorithm 1, low rank, linear time per sweep), ``"admm"`` (Hu & Kwok 2013
Algorithm 1, for the quadratic losses ``pcp`` and ``square``), ``"mfpc"`` (the fixed
spectral basis baseline of Hu & Kwok 2013), ``"simplenpkl"`` (the baseline of both papers)
and ``"sdp"`` (the convex problem over ``K >= 0`` solved exactly by cvxpy: the reference,
small ``n`` only). :meth:`NPKL.fit` runs any of them the same way: start, solve, certify
and escalate the rank where the solver admits a certificate, copy the result.
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import factorized
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn._compat import Interval, StrOptions, _fit_context
from psdlearn.constraints import as_constraints
from psdlearn.graph import DEFAULT_DELTA, KNN_METHODS
from psdlearn.npkl._fit_graph import (
    build_laplacian,
    is_training_data,
    joint_laplacian,
    transform_neighbors,
)
from psdlearn.npkl._out_of_sample import harmonic_rows, normalized_rows, select_n_neighbors
from psdlearn.npkl._rounds import solve_rounds
from psdlearn.npkl.distributed.fit import is_dask_array
from psdlearn.npkl.problem import LOSSES, NPKLProblem, auto_rank, rank_rule_count
from psdlearn.npkl.solvers import NPKL_SOLVERS, RegistryNames

__all__ = ["NPKL", "auto_rank"]  # auto_rank: psdlearn.npkl.problem, kept here for callers


class NPKL(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Nonparametric low-rank kernel learning from pairwise constraints (Hu & Kwok 2015).

    Learns ``K = E E^T`` that is smooth on the data manifold (small ``tr(L K)``) and agrees
    with the must-link / cannot-link pairs (see the module docstring for the objective).

    Parameters
    ----------
    loss : {"hinge", "squared_hinge", "square", "linear", "pcp"}, default="hinge"
        Loss on the margins ``T_ij K_ij``, or ``"pcp"``: ``gamma / 2 sum (K_ij - t_ij)^2``
        over both orders of every pair and the diagonal, targets 1 (must-link, diagonal)
        and 0 (cannot-link) (Hu & Kwok 2013 eq. 1).
    solver : {"bcd", "admm", "simplenpkl", "sdp", "mfpc"}, default="bcd"
        ``"bcd"``: block coordinate descent over the rows of ``E`` (Hu & Kwok 2015 Algorithm 1;
        hinge, squared hinge, square, linear). ``"admm"``: ADMM on ``K = V^T U``, ``V = U``
        (Hu & Kwok 2013 Algorithm 1; pcp and square). ``"simplenpkl"``: the SimpleNPKL baseline
        (JMLR 2011). ``"sdp"``: the convex SDP over ``K >= 0`` by cvxpy (extra ``sdp``);
        small ``n``. ``"mfpc"``: the baseline ``K = Q U Q^T`` of Hu & Kwok 2013 Table 2
        (Shang, Jiao & Wang 2012): ``Q`` the ``rank`` trailing Laplacian eigenvectors, ``U``
        PSD and optimal (pcp and square; :mod:`psdlearn.npkl.mfpc`).
    rank : int, "auto" or "adaptive", default="auto"
        Rank ``r`` of ``K``; ``"auto"`` is the largest ``r`` with ``r (r + 1) / 2 <= m``,
        with ``m`` the number of constrained pairs, or for ``loss="pcp"`` the size of its
        ordered set, ``2 m + n`` (Hu & Kwok 2013 Table 1 counts it so), and never above ``n``
        (a rank-``n`` factor already spans every PSD ``K``). ``"adaptive"`` (``bcd`` and
        ``admm``): start at ``rank_init``; while the duality certificate
        (:mod:`psdlearn.npkl.certificate`) does not hold, append the eigenvectors of the
        negative eigenvalues of the dual matrix as new columns (scaled by a line search,
        Burer-Monteiro rank escalation, Journée et al. 2010) and continue from there; stop
        at the first certified rank, where the new columns buy no decrease, or at the
        ``"auto"`` rank. The rounds that may still grow the rank stop at ``30 tol``; the
        last one is continued to ``tol`` and certified. For the hinge the rank is set on
        its Huber-smoothed problem (``mu = 1e-2``, a stage of ``hinge_smoothing``), where
        the escalation is a descent step, and its last round's exact BCD stage also stops
        when 25 sweeps lower the objective by less than ``1e-2 certificate_tol``
        (relative; :data:`psdlearn.npkl.bcd.FINAL_PLATEAU_FACTOR`). Ignored by
        ``solver="sdp"`` (the rank of its solution is whatever it is).
    rank_init : int, default=8
        ``rank="adaptive"`` only: the starting rank, and the most columns added per
        escalation.
    certificate_tol : float or None, default=1e-4
        ``certificate_.certified`` is ``relative_gap <= certificate_tol``; with
        ``rank="adaptive"`` the rank grows until it holds (``certificate_`` is always that
        of the final fit, solved to ``tol``). ``None`` skips the certificate
        (``certificate_ = None``): it costs a few Lanczos runs on the sparse dual matrix
        (products ``O(nnz(L) + m)``; ``benchmarks/results/npkl_certificate.md`` has the
        fit times with it). Not allowed with ``rank="adaptive"``.
    gamma : float or "auto", default="auto"
        Weight of the loss. Not given in Hu & Kwok 2013 or 2015. ``"auto"``, margin losses:
        ``30 gamma_0``, where ``gamma_0 = 1 / lambda_max(G, L)`` is the largest ``gamma`` at
        which ``K = 0`` is optimal (``G``: minus the gradient of the loss term at ``K = 0``
        per unit of ``gamma``; see :mod:`psdlearn.npkl.gamma`); it follows ``n``, ``m`` and
        how well the constraints agree with the graph, and costs one LOBPCG solve (about
        1 s at ``n = 1e5``). ``"auto"``, ``pcp``: ``100 max_i L_ii``, which bounds the graph
        term's pull on every target (``K_ii = 1``, ``K_ij = 1`` or 0) by 1-2 %.
        ``benchmarks/results/npkl_gamma_auto.md`` and ``npkl_gamma_auto_pcp.md`` compare
        both with ``gamma = 1`` on the protocol sets. ``gamma_`` holds the value used. On
        ``gamma = 1`` (the default before; the reproductions keep it): with the
        normalized Laplacian (``L_ii = 1 + delta``, spectrum in ``[delta, 2 + delta]``,
        independent of ``n``) the
        per-sample problem (18) balances ``L_ii / 2 ||v||^2`` against ``gamma / 2`` per
        violated pair, so ``gamma = 1`` weighs one unit of smoothness against one unit of
        loss for any ``n``; SimpleNPKL (JMLR 2011) also uses ``C = 1`` on the adult sets.
        But a few pairs among many points each pay the graph term of the rows they move
        alone: with 1000 pairs among 1e6 points ``gamma_0 > 1`` and ``gamma = 1`` gives
        ``K = 0``. To choose ``gamma`` from the constraints, see
        :class:`psdlearn.model_selection.NPKLCV`.
    n_neighbors : int, default=5
        ``k`` of the kNN graph (the papers: 5, and 50 for the adult sets). At least
        ``n_samples`` is capped to ``n_samples - 1`` with a warning.
    sigma : float or "auto", default="auto"
        Gaussian width of the graph weights (see :func:`psdlearn.graph.knn_laplacian`).
    delta : float, default=0.01
        Ridge of the normalized Laplacian.
    graph : {"knn", "precomputed_nearest_neighbors", "precomputed"}, default="knn"
        What ``X`` of :meth:`fit` is. ``"knn"``: feature vectors (dense or CSR); the kNN
        graph is built with :class:`psdlearn.graph.NeighborIndex`.
        ``"precomputed_nearest_neighbors"``: a sparse ``(n, n)`` kNN *distance* graph
        built elsewhere, e.g. ``sklearn.neighbors.KNeighborsTransformer(mode="distance")``
        (row ``i`` stores the distances to the neighbours of ``i``; a stored diagonal is
        ignored); the ``n_neighbors`` nearest of each row are used, with the same Gaussian
        weights and sigma rule as ``"knn"``. ``"precomputed"``: the ``(n, n)`` sparse
        Laplacian itself.
    knn_method : {"auto", "exact", "approximate"}, default="auto"
        Neighbour search of the graph and of :meth:`transform`: exact (kd-tree or brute
        force), approximate (HNSW, extra ``ann``), or exact up to 20,000 points and
        approximate above (see :class:`psdlearn.graph.NeighborIndex`). ``graph_info_``
        reports what was used and its estimated recall.
    n_jobs : int, optional
        Threads of the neighbour search; ``None`` uses every core.
    out_of_sample : {"normalized", "weighted_mean"}, default="normalized"
        Row that :meth:`transform` gives a new point from its ``n_neighbors_transform_``
        nearest training points ``j`` (weights ``s_j``, training degrees ``D_jj``; see
        :mod:`psdlearn.npkl._out_of_sample`). ``"normalized"``: Hu & Kwok (2015)
        section III-E for that one point, the minimizer of the normalized-Laplacian graph
        term with the point attached to the fixed training graph,
        ``sum_j s_j e_j / ((1 + delta) sqrt(d_x (D_jj + s_j)))``, ``d_x = sum_j s_j``.
        ``"weighted_mean"``: ``sum_j s_j e_j / sum_j s_j`` (no density scale). Both are
        per point; ``reproductions/bcd_out_of_sample.md`` compares them with
        :meth:`transform_joint`. Read at :meth:`transform` time.
    b : float, default=1.0
        Radius ``||e_i|| <= b`` for the linear loss (Hu & Kwok 2015 sets ``b = 1``).
    max_iter : int, default=1000
        Maximum BCD sweeps (Hu & Kwok 2015: 1000; 800 on the adult sets) or ADMM iterations
        (Hu & Kwok 2013: 500; 100 on the adult sets).
    tol : float, default=1e-5
        Stop when ``||E_t - E_{t-1}||_F / ||E_t||_F < tol``; ADMM also requires
        ``||V - U||_F / ||V||_F <= tol``.
    unconstrained : {"sequential", "block"}, default="sequential"
        Update of the unconstrained samples: eq. (13) one by one, or the block iteration
        (17).
    omega : "auto" or float in (0, 2), default="auto"
        Over-relaxation of the row updates (not in Hu & Kwok 2015; ``1.0`` is Algorithm 1): a
        row moves to ``e_i + omega (v* - e_i)`` instead of its exact minimizer ``v*`` when
        that does not increase its row objective, so the objective still never
        increases. ``"auto"`` is Young's SOR factor ``2 / (1 + sqrt(1 - rho^2))`` with the
        Jacobi radius bound ``rho = 1 / (1 + delta)`` of Hu & Kwok 2015 Prop. 1 (1.75 for
        ``delta = 0.01``; a precomputed Laplacian with a non-constant diagonal gets a
        Lanczos estimate of ``rho``); it cuts the sweeps 1.5-4x at the same objective.
    hinge_smoothing : "auto", float or None, default="auto"
        Hinge loss only. Row-wise BCD on the hinge can stop at a point that is optimal in
        every row but not stationary (the hinge couples ``e_i`` and ``e_j`` through a kink;
        Hu & Kwok 2015's Theorem 1 relies on a smooth objective): on small problems this leaves
        the objective 4-7% above the SDP optimum. ``"auto"`` first runs BCD on the
        Huber-smoothed hinge with ``mu = 0.1, 0.01, 1e-3, 1e-4`` (each stage warm-started,
        each ``C^1``, so it reaches a stationary point; each stops at ``30 tol``,
        :data:`psdlearn.npkl.bcd.SMOOTHING_TOL_FACTOR`), then the exact hinge BCD of
        Algorithm 1 from there; this reaches the SDP optimum to about 1e-5. A float runs
        one smoothed stage with that ``mu`` before the exact stage; ``None`` runs
        Algorithm 1 alone, as in the paper. The hinge objective (10) is non-increasing
        within the exact stage, not across the smoothed ones (their surrogate is).
    sdp_max_samples : int, default=200
        Size guard of ``solver="sdp"``; larger problems raise unless ``sdp_force=True``
        (measured with Clarabel: about 25 s at n = 200, 200 s and 4.8 GB at n = 300).
    sdp_force : bool, default=False
    rho : float, default=100.0
        ``solver="admm"`` only: initial penalty of the augmented Lagrangian (Hu & Kwok 2013:
        100), then adapted by its schedule (15).
    init : {"random", "bcd"}, default="random"
        ``solver="admm"`` only: start from a random ``V = U`` (the paper) or from the BCD
        solution of the square loss (targets ``+-1``, stopped at relative change
        ``max(tol, 1e-3)``).
    B : float or "auto", default="auto"
        ``solver="simplenpkl"`` only: capacity ``tr(K^p) <= B`` of SimpleNPKL (JMLR 2011).
        ``"auto"``: ``100`` for ``n <= 1000`` and ``100 n`` above (Hu & Kwok 2015 IV-A.2: 100 on
        its small sets, n <= 270, and 100 n on the adult sets, n >= 1605), ``100 n`` for
        ``loss="pcp"`` (Hu & Kwok 2013 footnote 3); see :func:`psdlearn.npkl.simplenpkl.default_B`.
    warm_start : bool, default=False
        Start from ``embedding_`` of the previous fit when it has the shape of this one and
        is not zero (``bcd`` and ``admm``); otherwise from a random ``E``. Used by
        :class:`psdlearn.model_selection.NPKLCV` along its path of ``gamma`` values.
    random_state : int, RandomState instance or None, default=None
        Seeds the random initial ``E`` and the sample order of each sweep.
    verbose : int, default=0
        With ``verbose >= 1`` progress bars on stderr: the neighbour search, then the
        sweeps with the objective.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, rank_)
        Learned kernel ``K = embedding_ @ embedding_.T``. For ``solver="admm"`` it is ``V``
        (the paper's output ``K = V^T V``), not ``(V + U) / 2``: the objective history is
        that of ``V``, so the embedding scores exactly its last entry, and ``U`` differs
        from ``V`` by the last primal residual only.
    objective_history_ : list of float
        Objective (eq. 10) at the initial point and after every sweep (of every stage).
    time_history_ : list of float
        Cumulative solver seconds aligned with ``objective_history_``.
    omega_ : float
        Over-relaxation factor used (``bcd`` only).
    smoothing_stages_ : list of (float, int)
        ``(mu, sweeps)`` of each BCD stage, ``mu = 0`` for the exact one (``bcd`` only).
    gamma_ : float
        Loss weight used (``gamma``, or its value for ``gamma="auto"``).
    n_iter_ : int
        Sweeps (BCD, all stages), iterations (ADMM) or steps (SimpleNPKL, MFPC) run; 1 for the
        SDP.
    converged_ : bool
        Whether the solver's stopping test held (False at ``max_iter`` or after Ctrl-C).
    rank_ : int
    certificate_ : psdlearn.npkl.certificate.Certificate
        ``bcd`` and ``admm``: a bound on the gap of ``embedding_`` to the optimum of the
        convex problem over ``K >= 0``, from the smallest eigenvalue of the dual matrix
        (fields ``lambda_min``, ``gap_bound``, ``relative_gap``, ``certified``; see
        :mod:`psdlearn.npkl.certificate`); None with ``certificate_tol=None`` or after
        Ctrl-C.
    rank_path_ : list of (int, float)
        ``bcd`` and ``admm``: ``(rank, relative_gap)`` of every certificate computed (with
        ``rank="adaptive"`` one per round: the intermediate ones are the cheap bound, and the
        last rank appears again for its final round).
    certificate_time_ : float
        ``bcd`` and ``admm``: seconds spent in the certificates and escalation steps
        (included in ``fit_time_`` and ``time_history_``).
    laplacian_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
    constraints_ : PairwiseConstraints
    sigma_ : float or None
        Gaussian width used for the graph (None with ``graph="precomputed"``).
    n_neighbors_ : int or None
        ``k`` of the graph, after capping (None with ``graph="precomputed"``).
    degrees_ : ndarray of shape (n_samples,) or None
        Degrees ``D_ii`` of the kNN similarity graph.
    neighbor_index_ : psdlearn.graph.NeighborIndex or None
        The search index over the training points (``graph="knn"``), kept so that
        :meth:`transform` queries new points only.
    n_neighbors_transform_ : int or None
        Training neighbours ``k'`` of each new point in :meth:`transform` (either
        ``out_of_sample`` rule): with ``graph="knn"`` the size among ``k, 2k, 3k, 4k`` whose
        weighted mean best predicts the training rows left out one at a time (from ``X``
        and ``embedding_`` alone, no label or constraint; see
        :mod:`psdlearn.npkl._out_of_sample`); ``n_neighbors_`` otherwise (and on Dask).
    graph_info_ : dict or None
        ``method`` ("exact" / "approximate"), ``backend`` ("kd_tree", "brute", "hnsw"),
        ``n_neighbors`` and ``recall`` (estimated recall@k of the search on 256 sampled
        points; 1.0 when exact). None with a precomputed graph.
    X_fit_ : ndarray or sparse matrix of shape (n_samples, n_features)
        Training points (``graph="knn"``), for :meth:`transform_joint`.
    graph_time_ : float
        Seconds spent building the graph.
    fit_time_ : float
        Seconds spent in the solver.
    simplenpkl_objective_history_ : list of float
        ``solver="simplenpkl"`` only: the saddle-point dual ``J`` it maximizes, per step
        (``objective_history_`` holds objective (10) of its kernel at the same steps).
    B_ : float
        Capacity used by ``solver="simplenpkl"``.
    mfpc_U_ : ndarray of shape (rank_, rank_)
        ``solver="mfpc"`` only: the learned ``U`` of ``K = Q U Q^T``.
    primal_residual_history_, dual_residual_history_ : list of float
        ``solver="admm"`` only: ``||V_k - U_k||_F`` and ``rho ||V_k - V_{k-1}||_F`` per
        iteration (Hu & Kwok 2013 eq. 14).
    rho_history_ : list of float
        ``solver="admm"`` only: the penalty of every iteration.
    sdp_status_ : str
        Solver status (``solver="sdp"`` only).
    sdp_value_ : float
        ``solver="sdp"`` only: the optimal value reported by the conic solver (the
        objective of its K before factorization; ``objective_history_`` holds objective
        (10) of the factored embedding).
    n_features_in_ : int
        Number of features (``graph="knn"``) or of samples (precomputed graphs).
    comm_history_, partition_info_ : list of dict, dict
        Fit on a dask array only: per iteration, bytes and seconds of the halo exchanges
        and reductions; the row blocks (sizes, edge cut, colours, workers). See
        ``docs/distributed.md``.

    See Also
    --------
    psdlearn.graph.knn_laplacian : The graph term.
    psdlearn.constraints.as_constraints : The side information ``y`` (convention and names:
        ``docs/glossary.md``).

    References
    ----------
    Hu, E.-L. & Kwok, J. T. (2015). Scalable nonparametric low-rank kernel learning using
    block coordinate descent. IEEE Transactions on Neural Networks and Learning Systems
    26(9).

    Hu, E.-L. & Kwok, J. T. (2013). Efficient kernel learning from side information using
    ADMM. IJCAI.

    Zhuang, J., Tsang, I. W. & Hoi, S. C. H. (2011). A family of simple non-parametric
    kernel learning algorithms. JMLR 12.

    Examples
    --------
    >>> import psdlearn as pl
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    >>> model = pl.NPKL(loss="square", random_state=0).fit(X, C)
    >>> model.embedding_.shape
    (150, 18)
    """

    _parameter_constraints = {
        "loss": [StrOptions(set(LOSSES))],
        "solver": [StrOptions(RegistryNames(NPKL_SOLVERS))],
        "rank": [StrOptions({"auto", "adaptive"}),
                 Interval(numbers.Integral, 1, None, closed="left")],
        "rank_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "certificate_tol": [Interval(numbers.Real, 0, None, closed="left"), None],
        "gamma": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")],
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left")],
        "sigma": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")],
        "delta": [Interval(numbers.Real, 0, None, closed="neither")],
        "graph": [StrOptions({"knn", "precomputed_nearest_neighbors", "precomputed"})],
        "knn_method": [StrOptions(set(KNN_METHODS))],
        "n_jobs": [numbers.Integral, None],
        "out_of_sample": [StrOptions({"normalized", "weighted_mean"})],
        "b": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "unconstrained": [StrOptions({"sequential", "block"})],
        "omega": [StrOptions({"auto"}), Interval(numbers.Real, 0, 2, closed="neither")],
        "hinge_smoothing": [StrOptions({"auto"}), Interval(numbers.Real, 0, None,
                                                           closed="neither"), None],
        "sdp_max_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "sdp_force": ["boolean"],
        "rho": [Interval(numbers.Real, 0, None, closed="neither")],
        "init": [StrOptions({"random", "bcd"})],
        "B": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        loss="hinge",
        solver="bcd",
        rank="auto",
        rank_init=8,
        certificate_tol=1e-4,
        gamma="auto",
        n_neighbors=5,
        sigma="auto",
        delta=DEFAULT_DELTA,
        graph="knn",
        knn_method="auto",
        n_jobs=None,
        out_of_sample="normalized",
        b=1.0,
        max_iter=1000,
        tol=1e-5,
        unconstrained="sequential",
        omega="auto",
        hinge_smoothing="auto",
        sdp_max_samples=200,
        sdp_force=False,
        rho=100.0,
        init="random",
        B="auto",
        warm_start=False,
        random_state=None,
        verbose=0,
    ):
        self.loss = loss
        self.solver = solver
        self.rank = rank
        self.rank_init = rank_init
        self.certificate_tol = certificate_tol
        self.gamma = gamma
        self.n_neighbors = n_neighbors
        self.sigma = sigma
        self.delta = delta
        self.graph = graph
        self.knn_method = knn_method
        self.n_jobs = n_jobs
        self.out_of_sample = out_of_sample
        self.b = b
        self.max_iter = max_iter
        self.tol = tol
        self.unconstrained = unconstrained
        self.omega = omega
        self.hinge_smoothing = hinge_smoothing
        self.sdp_max_samples = sdp_max_samples
        self.sdp_force = sdp_force
        self.rho = rho
        self.init = init
        self.B = B
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        return tags

    @property
    def _n_features_out(self):
        """Columns of :meth:`transform` (``rank_``), named ``npkl0, npkl1, ...`` by
        ``get_feature_names_out``."""
        return self.embedding_.shape[1]

    # ------------------------------------------------------------------ fit
    def _build_laplacian(self, X):
        """``L`` of the graph of ``X`` (:func:`psdlearn.npkl._fit_graph.build_laplacian`),
        setting the graph's fitted attributes."""
        if self.graph == "knn":
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                              ensure_min_samples=2)
        L, fitted = build_laplacian(
            X, graph=self.graph, n_neighbors=self.n_neighbors, sigma=self.sigma,
            delta=self.delta, knn_method=self.knn_method, n_jobs=self.n_jobs,
            random_state=self.random_state, verbose=self.verbose)
        for key, value in fitted.items():
            setattr(self, key, value)
        return L

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the kernel.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or (n, n) sparse
            Data from which the kNN graph is built; with ``graph="precomputed"`` the
            Laplacian itself, with ``graph="precomputed_nearest_neighbors"`` a kNN
            distance graph. A row-chunked ``dask.array.Array`` runs the fit on the current
            ``dask.distributed`` cluster (``psdlearn.npkl.distributed``; ``embedding_`` is
            then a dask array in the same row chunks).
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            Side information (see ``docs/glossary.md``): pairwise constraints,
            ``[i, j, +1/-1]`` rows, or partial labels (``-1`` = unlabelled), from which
            every pair of labelled points becomes a must-link (same label) or cannot-link
            constraint.

        Returns
        -------
        self
        """
        if is_dask_array(X):  # row blocks on a Dask cluster: psdlearn.npkl.distributed
            from psdlearn.npkl.distributed import fit_dask

            return fit_dask(self, X, y)
        start_graph = time.perf_counter()
        L = self._build_laplacian(X)
        self.graph_time_ = time.perf_counter() - start_graph
        n = L.shape[0]
        C = as_constraints(y, n)
        if C.n_pairs == 0:
            raise ValueError("y holds no constraint: NPKL needs at least one pair (or two "
                             "labelled points).")
        spec = NPKL_SOLVERS[self.solver]
        if self.loss not in spec.losses:
            raise ValueError(f"solver={self.solver!r} handles the losses {spec.losses}, not "
                             f"loss={self.loss!r}.")
        rule = min(auto_rank(rank_rule_count(self.loss, C.pairs, C.signs, n)), n)
        if self.rank == "adaptive":
            if not spec.certificate:
                certified = [s.name for s in NPKL_SOLVERS if s.certificate]
                raise ValueError(f"rank='adaptive' needs a solver with a duality certificate "
                                 f"({certified}), not solver={self.solver!r}.")
            if self.certificate_tol is None:
                raise ValueError("rank='adaptive' needs a certificate_tol.")
            rank = min(int(self.rank_init), n)
        else:
            rank = rule if self.rank == "auto" else int(self.rank)
        self._rank_cap = max(rule, rank)
        if rank > n:
            raise ValueError(f"rank={rank} exceeds the number of samples n={n}.")
        self.gamma_ = self._resolve_gamma(L, C)
        problem = NPKLProblem(L, C.pairs, C.signs.astype(np.float64), self.loss,
                              self.gamma_, float(self.b))
        start = time.perf_counter()
        solve_rounds(self, spec, problem, rank, check_random_state(self.random_state))
        self.fit_time_ = time.perf_counter() - start
        self.n_neighbors_transform_ = self.n_neighbors_
        if self.neighbor_index_ is not None:
            self.n_neighbors_transform_ = select_n_neighbors(
                self.neighbor_index_, self.X_fit_, self.embedding_, self.sigma_,
                self.n_neighbors_, self.random_state)
        self.laplacian_ = L
        self.constraints_ = C
        return self

    def _resolve_gamma(self, L, C):
        if self.gamma != "auto":
            return float(self.gamma)
        from psdlearn.npkl.gamma import auto_gamma

        gamma, _ = auto_gamma(L, C.pairs, C.signs, self.loss)
        if not np.isfinite(gamma):
            warnings.warn("gamma='auto': no nonzero kernel lowers the loss of these "
                          "constraints (lambda_max(G, L) <= 0), so K = 0 is optimal for "
                          "every gamma; gamma = 1 is used.", UserWarning, stacklevel=4)
            return 1.0
        return gamma

    def fit_transform(self, X, y=None, **fit_params):
        """Fit and return ``embedding_``, shape (n_samples, rank_).

        This is the solution of the constrained problem; :meth:`transform` of the
        training points returns the same rows.

        Parameters
        ----------
        X, y
            As in :meth:`fit`.
        **fit_params : dict
            Passed to :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples, rank_)
        """
        return self.fit(X, y, **fit_params).embedding_

    def objective(self, E=None):
        """Objective (10) of the fitted problem at ``E``.

        Parameters
        ----------
        E : ndarray of shape (n_samples, r), default=None
            A factor of ``K = E E^T``; None: ``embedding_``.

        Returns
        -------
        float
        """
        check_is_fitted(self, "embedding_")
        problem = NPKLProblem(self.laplacian_, self.constraints_.pairs,
                              self.constraints_.signs.astype(np.float64), self.loss,
                              self.gamma_, float(self.b))
        return problem.objective(self.embedding_ if E is None else E)

    def score(self, X, y):
        """How well the kernel separates must-links from cannot-links: ROC AUC of the cosine.

        With ``K`` the learned kernel, each pair ``(i, j)`` of ``y`` gets the normalized
        similarity ``c_ij = K_ij / sqrt(K_ii K_jj)`` (the cosine of the angle between
        ``e_i`` and ``e_j``; 0 where a row is zero), and the score is the area under the
        ROC curve of ``c`` against the signs: the probability that a random must-link is
        more similar than a random cannot-link, ties counted half. It needs no threshold
        and is invariant to the scale of ``K`` (which ``gamma`` changes); 1 is perfect,
        0.5 is chance, 0 is every sign reversed. Higher is better.

        Parameters
        ----------
        X : array-like, sparse matrix or None
            The training data (the ``X`` of :meth:`fit`, or ``None``): the pairs are scored on
            ``embedding_``, the transductive kernel (this is how held-out constraints between
            training points are scored, e.g. by :class:`psdlearn.model_selection.NPKLCV`).
            A training set is recognized by identity or by equal values. Any other ``X``
            is embedded by :meth:`transform` and ``y`` indexes its rows. With
            ``graph="precomputed"`` (``X`` a Laplacian, no out-of-sample extension) and
            ``graph="precomputed_nearest_neighbors"``, a square ``X`` with the training
            size is taken to be the training graph.
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            Pairs to score, with both signs present, or labels (``-1`` = unlabelled):
            every pair of labelled points, as in :meth:`fit`.

        Returns
        -------
        float in [0, 1]
        """
        from sklearn.metrics import roc_auc_score

        check_is_fitted(self, "embedding_")
        training = is_training_data(X, self.graph, getattr(self, "X_fit_", None),
                                    len(self.embedding_))
        E = self.embedding_ if training else self.transform(X)
        C = as_constraints(y, len(E))
        if C.n_must == 0 or C.n_cannot == 0:
            raise ValueError("score needs must-links and cannot-links in y (the AUC of one "
                             "class is undefined).")
        norms = np.sqrt(np.einsum("ij,ij->i", E, E))
        i, j = C.pairs[:, 0], C.pairs[:, 1]
        dot = np.einsum("ij,ij->i", E[i], E[j])
        denom = norms[i] * norms[j]
        cosine = np.divide(dot, denom, out=np.zeros_like(dot), where=denom > 0)
        return float(roc_auc_score(C.signs > 0, cosine))

    # ------------------------------------------------------------ transform
    def transform(self, X):
        """Embed points: training rows get their fitted row, new points the extension.

        A row of ``X`` equal to a row of the training input (an exact match, see
        :mod:`psdlearn.npkl._training_rows`) returns that row of ``embedding_``, so
        ``transform`` of the training data is the fitted embedding and a Pipeline sees
        the kernel that was learned. Any other row gets the per-point out-of-sample
        extension of Hu & Kwok (2015), section III-E: the training embedding ``E`` stays
        fixed, and a new point ``x`` is linked to its ``k'`` nearest training points ``j``
        (``n_neighbors_transform_``, found with the index kept from :meth:`fit`) by the
        training Gaussian weights ``s_j = exp(-||x - x_j||^2 / (2 sigma^2))``, and not to
        the other new points. With ``out_of_sample="normalized"`` (the default) its row
        minimizes the graph term ``tr([E; e]^T L' [E; e])`` of the normalized Laplacian
        ``L'`` of the training graph with ``x`` attached, the update (13) of section
        III-E for that one row,

        .. math::

            e = \\frac{1}{1 + \\delta} \\sum_j
                \\frac{s_j}{\\sqrt{d_x (D_{jj} + s_j)}}\\, e_j ,
            \\qquad d_x = \\sum_j s_j ,

        with ``D_jj`` the training degrees (``degrees_``). With
        ``out_of_sample="weighted_mean"`` it is ``sum_j s_j e_j / sum_j s_j``, the
        minimizer of ``sum_j s_j ||e - e_j||^2``. Every row depends on that row alone, so
        a batch gives the same rows as its points one at a time, training rows or not. A
        point whose weights all underflow (far from every training point) maps to 0.

        With ``graph="precomputed_nearest_neighbors"`` the rows are distance rows to the
        training points, matched against the rows of the training distance graph. With
        ``graph="precomputed"`` there is no out-of-sample extension: rows of the training
        Laplacian return their fitted rows, and any other row raises ``ValueError``. A
        ``dask.array.Array`` is extended per point on its blocks, training rows included.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_new, n_features)
            Points; with ``graph="precomputed_nearest_neighbors"``, a sparse
            ``(n_new, n_samples)`` distance graph to the training points (e.g.
            ``KNeighborsTransformer.transform``); with ``graph="precomputed"``, rows of
            the training Laplacian.

        Returns
        -------
        E_new : ndarray of shape (n_new, rank_)

        See Also
        --------
        transform_joint : the extension that links new points to each other.
        """
        check_is_fitted(self, "embedding_")
        if self.out_of_sample not in ("normalized", "weighted_mean"):
            raise ValueError("out_of_sample must be 'normalized' or 'weighted_mean', got "
                             f"{self.out_of_sample!r}.")
        if is_dask_array(X):
            from psdlearn.npkl.distributed import transform_dask

            return transform_dask(self, X)
        if self.graph == "knn":
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        elif self.graph == "precomputed":
            X = sp.csr_matrix(X, dtype=np.float64)
        elif not sp.issparse(X):
            return self._extend(X)  # raises: a distance graph must be sparse
        else:
            X = sp.csr_matrix(X, dtype=np.float64)
        lookup = getattr(self, "_training_rows", None)
        found = (lookup.match(X) if lookup is not None
                 else np.full(X.shape[0], -1, dtype=np.int64))
        new = np.flatnonzero(found < 0)
        out = np.empty((X.shape[0], self.embedding_.shape[1]))
        out[found >= 0] = self.embedding_[found[found >= 0]]
        if new.size:
            out[new] = self._extend(X if new.size == X.shape[0] else X[new])
        return out

    def _extend(self, X):
        """The per-point out-of-sample rows of validated ``X`` (no training-row lookup)."""
        dist, ind = transform_neighbors(
            X, graph=self.graph, n_train=len(self.embedding_), n_neighbors=self.n_neighbors_,
            index=self.neighbor_index_, n_neighbors_transform=self.n_neighbors_transform_)
        if self.out_of_sample == "weighted_mean":
            return harmonic_rows(dist, ind, self.embedding_, self.sigma_)
        return normalized_rows(dist, ind, self.embedding_, self.degrees_, self.sigma_,
                               self.delta)

    def transform_joint(self, X):
        """Joint out-of-sample embedding of a batch (Hu & Kwok 2015, III-E, as a system).

        The kNN graph is rebuilt over the training points and all of ``X`` together (with
        the training ``sigma_``), the new points as unconstrained samples; with the
        training rows ``E_I`` fixed, the new rows minimize
        ``tr([E_I; E_O]^T L [E_I; E_O])``, i.e. solve ``L_OO E_O = -L_OI E_I``. New points
        are coupled through their own edges, so the rows depend on the batch; the cost is a
        graph over ``n + n_new`` points. :meth:`transform` is the per-point extension.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_new, n_features)

        Returns
        -------
        E_new : ndarray of shape (n_new, rank_)
        """
        check_is_fitted(self, "embedding_")
        if self.graph != "knn":
            raise ValueError("transform_joint needs the training features: it is available "
                             "with graph='knn' only.")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        n_in = self.X_fit_.shape[0]
        L = joint_laplacian(self.X_fit_, X, n_neighbors=self.n_neighbors_, sigma=self.sigma_,
                            delta=self.delta, knn_method=self.knn_method,
                            n_jobs=self.n_jobs, random_state=self.random_state)
        L_oo = L[n_in:, n_in:].tocsc()
        L_oi = L[n_in:, :n_in]
        rhs = -(L_oi @ self.embedding_)
        solve = factorized(L_oo)
        return np.column_stack([solve(rhs[:, c]) for c in range(rhs.shape[1])])
