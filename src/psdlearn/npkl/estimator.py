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
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state, deprecated
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn._compat import BaseEstimator, Hidden, Interval, Options, StrOptions, _fit_context
from psdlearn._constraint_checks import warn_conflicts
from psdlearn._exact_knn import value_order
from psdlearn._interrupt import fitting, phase
from psdlearn._memory import guard_npkl_fit, npkl_estimate
from psdlearn.constraints import PairwiseConstraints, as_constraints, check_side_info
from psdlearn.graph import DEFAULT_DELTA, KNN_METHODS
from psdlearn.npkl._deferred_certificate import DeferredAttribute, run_rounds
from psdlearn.npkl._fit_graph import (
    build_laplacian,
    in_order,
    is_training_data,
    joint_laplacian,
    transform_neighbors,
)
from psdlearn.npkl._out_of_sample import (
    harmonic_rows,
    loo_sample,
    normalized_rows,
    select_n_neighbors,
)
from psdlearn.npkl._settings import check_dtype, resolve_solver_options, warn_uncertified
from psdlearn.npkl._suspicious import ScoresOnRead, most_suspicious
from psdlearn.npkl.distributed.fit import is_dask_array
from psdlearn.npkl.problem import (
    LOSSES,
    NPKLProblem,
    auto_rank,
    label_pairs,
    rank_rule_count,
)
from psdlearn.npkl.solvers import NPKL_SOLVERS, RegistryNames

__all__ = ["NPKL", "auto_rank"]  # auto_rank: psdlearn.npkl.problem, kept here for callers

#: Whether ``fit`` defers its certificate like ``partial_fit`` (npkl._deferred_certificate).
DEFER_FIT_CERTIFICATE = False


class NPKL(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Nonparametric low-rank kernel learning from pairwise constraints.

    Learns a positive semidefinite kernel matrix ``K = E E^T`` over the training points
    that is smooth on the data manifold (small ``tr(L K)`` for the normalized Laplacian
    ``L`` of a k-nearest-neighbour graph) and agrees with must-link / cannot-link pairs or
    partial labels (Hu & Kwok 2015, 2013). The rows of ``E`` are an embedding of the
    points in which the side information holds; :meth:`transform` extends it to new
    points.

    The problem (Hu & Kwok 2015, eq. 10), over ``E`` of shape ``(n, r)`` with rows
    ``e_i``, for the margin losses:

    .. math::

        \min_{E \in \mathbb{R}^{n \times r}} \; \operatorname{tr}(E^T L E)
            + \gamma \sum_{(i, j) \in \mathcal{T}} \ell\big(T_{ij}\, e_i^T e_j\big),

    with ``T_ij = +1`` for a must-link and ``-1`` for a cannot-link, each constrained pair
    counted once, and ``l(z) = max(1 - z, 0)`` (hinge), ``max(1 - z, 0)^2`` (squared
    hinge), ``(1 - z)^2`` (square) or ``-z`` subject to ``||e_i|| <= b`` (linear). The
    ``pcp`` loss is the pairwise constraint propagation objective of Hu & Kwok (2013,
    eq. 1),

    .. math::

        \min_{K = E E^T} \; \operatorname{tr}(L K)
            + \frac{\gamma}{2} \sum_{(i, j) \in \Omega} (K_{ij} - t_{ij})^2,

    over the ordered set ``Omega`` of both orders of every constrained pair and every
    diagonal entry, with targets ``t = 1`` (must-link, diagonal) and ``0``
    (cannot-link). Without the rank restriction both problems are convex in ``K``; at
    rank ``r`` the fit is checked against that convex problem by a duality certificate
    (``certificate_``).

    Parameters
    ----------
    loss : {"hinge", "squared_hinge", "square", "linear", "pcp"}, default="hinge"
        The loss ``l`` on the pairs (see the problem above).
    solver : {"bcd", "admm", "simplenpkl", "sdp", "mfpc"}, default="bcd"
        ``"bcd"``: block coordinate descent over the rows of ``E`` (Hu & Kwok 2015,
        Algorithm 1), for every loss but ``pcp``. ``"admm"``: ADMM on ``K = V^T U``
        with ``V = U`` (Hu & Kwok 2013, Algorithm 1), for ``pcp`` and ``square``.
        ``"simplenpkl"``: SimpleNPKL (Zhuang et al. 2011), every loss. ``"sdp"``: the
        convex problem over ``K >= 0`` solved by cvxpy (extra ``sdp``), small ``n``
        only. ``"mfpc"``: ``K = Q U Q^T`` with ``Q`` the ``rank`` trailing Laplacian
        eigenvectors (Shang et al. 2012), for ``pcp`` and ``square``.
        :data:`psdlearn.npkl.NPKL_SOLVERS` lists what each solver supports.
    rank : int, "auto" or "adaptive", default="auto"
        Number of columns ``r`` of ``E``. ``"auto"``: the largest ``r`` with
        ``r (r + 1) / 2 <= m``, where ``m`` counts the constraints (Hu & Kwok 2015,
        section IV-A): the given pairs, or ``2 m + n`` for ``pcp`` (Hu & Kwok 2013 count
        the ordered set). From a label vector, ``m`` counts the smallest set of pairs that
        implies the labels, ``(l - c) + c (c - 1) / 2`` for ``l`` labelled points in ``c``
        classes, not the ``l (l - 1) / 2`` pairs they imply. Never above ``n``.
        ``"adaptive"`` (``bcd`` and ``admm``): start at ``rank_init`` and, while the
        certificate does not hold, add the eigenvectors of the negative eigenvalues of
        the dual matrix as new columns (Burer-Monteiro rank escalation, Journée et al.
        2010), up to the ``"auto"`` rank. Ignored by ``solver="sdp"``.
    rank_init : int, default=8
        With ``rank="adaptive"``: the starting rank and the most columns added per step.
    certificate_tol : float or None, default=1e-4
        ``certificate_.certified`` is ``relative_gap <= certificate_tol``; a fit that is
        not certified raises a ``ConvergenceWarning`` that says which value to change.
        ``None`` skips the certificate (``certificate_ = None``; not allowed with
        ``rank="adaptive"``).
    gamma : float or "auto", default="auto"
        Weight ``gamma`` of the loss. ``"auto"``: for the margin losses ``30 gamma_0``,
        where ``gamma_0`` is the largest ``gamma`` at which ``K = 0`` is optimal (one
        generalized eigenvalue, :mod:`psdlearn.npkl.gamma`); for ``pcp``
        ``100 max_i L_ii``, which keeps the graph's pull on every target below about
        2 %. ``gamma_`` holds the value used. :class:`psdlearn.model_selection.NPKLCV`
        chooses it by cross-validation over the constraints.
    n_neighbors : int, default=5
        ``k`` of the kNN graph; at least ``n_samples`` is capped to ``n_samples - 1``
        with a warning.
    sigma : float or "auto", default="auto"
        Width of the Gaussian graph weights ``exp(-||x_i - x_j||^2 / (2 sigma^2))``
        (see :func:`psdlearn.graph.knn_laplacian`).
    delta : float, default=0.01
        Ridge of the normalized Laplacian ``(1 + delta) I - D^{-1/2} S D^{-1/2}``.
    graph : {"knn", "precomputed_nearest_neighbors", "precomputed"}, default="knn"
        What ``X`` of :meth:`fit` is: feature vectors (dense or CSR), a sparse
        ``(n, n)`` kNN distance graph (e.g. from
        ``sklearn.neighbors.KNeighborsTransformer(mode="distance")``; the
        ``n_neighbors`` nearest of each row get the Gaussian weights), or the sparse
        ``(n, n)`` Laplacian itself.
    knn_method : {"auto", "exact", "approximate"}, default="auto"
        Neighbour search of the graph and of :meth:`transform`: exact (kd-tree or brute
        force), approximate (HNSW, extra ``ann``), or exact up to 20,000 points and
        approximate above (:class:`psdlearn.graph.NeighborIndex`).
    n_jobs : int, default=None
        Threads of the neighbour search; ``None`` uses every core.
    out_of_sample : {"normalized", "weighted_mean"}, default="normalized"
        The row :meth:`transform` gives a new point: the minimizer of the normalized
        graph term with the point attached to the training graph (Hu & Kwok 2015,
        section III-E), or the Gaussian-weighted mean of its neighbours' rows. Read at
        :meth:`transform` time.
    b : float, default=1.0
        Radius of the ball ``||e_i|| <= b`` of the linear loss (part of its problem, for
        every solver).
    max_iter : int, default=1000
        Most sweeps (BCD), iterations (ADMM) or steps (SimpleNPKL, MFPC).
    tol : float, default=1e-5
        Stop when ``||E_t - E_{t-1}||_F / ||E_t||_F < tol`` (ADMM: also the relative
        primal residual ``||V - U||_F / ||V||_F``). BCD on the hinge without a certificate
        (``certificate_tol=None``) also stops its exact stage when five sweeps lower the
        objective by less than ``tol`` (relative).
    dtype : {np.float64, np.float32}, default=np.float64
        Type of ``embedding_`` and of the rows :meth:`transform` returns. With
        ``np.float32`` (``solver="bcd"`` only; the other solvers raise ``ValueError``) the
        sweeps also read the Laplacian's values in single precision and compute in
        float64: half the memory of the embedding and less memory traffic per sweep, for
        the problem of ``L`` rounded to float32 (``objective_history_`` is its objective;
        :meth:`objective` and ``certificate_`` are those of ``L`` itself, in float64).
    solver_options : dict, default=None
        Settings read by one solver only, with their defaults (a key the chosen solver
        does not read raises ``ValueError``; ``solver_options_`` holds the values used).

        - ``"bcd"``: ``"omega"`` (``"auto"`` or a float in ``(0, 2)``; over-relaxation of
          the row updates, ``"auto"`` Young's factor ``2 / (1 + sqrt(1 - rho^2))`` for
          the Jacobi bound ``rho = 1 / (1 + delta)``; 1.0 is Algorithm 1),
          ``"unconstrained"`` (``"sequential"``: update (13) of the unconstrained rows
          one by one, or ``"block"``: the block iteration (17)), ``"hinge_smoothing"``
          (``"auto"``: solve the Huber-smoothed hinge with ``mu = 0.1, 0.01, 1e-3,
          1e-4`` in turn, then the exact hinge from there; a float: one smoothed stage
          with that ``mu``; ``None``: Algorithm 1 alone), ``"multilevel"`` (``"auto"``,
          True or False: start from the problem solved coarse to fine on aggregates of
          the graph, the same optimum in fewer sweeps; ``"auto"``: from 10,000 samples,
          unless the pairs cost more per sweep than the graph, as with all the pairs of
          a few thousand labelled points: every coarse level keeps them),
          ``"extrapolation"`` (``"auto"``, True or False: every 10 sweeps, move to the
          exact minimizer of the objective over the plane of the last two windows'
          displacements when it is lower; the same optimum, non-increasing objective,
          two more arrays the size of the embedding; ``"auto"``: from 10,000 samples,
          and not where only the fit without those arrays fits in the memory available).
        - ``"admm"``: ``"rho"`` (100.0; initial penalty, then adapted), ``"init"``
          (``"random"`` or ``"bcd"``: start from BCD on the square loss), ``"omega"``
          (of that BCD start).
        - ``"simplenpkl"``: ``"B"`` (``"auto"`` or a float; the capacity
          ``tr(K^2) <= B``, ``"auto"``: 100 for ``n <= 1000``, ``100 n`` above and for
          ``pcp``).
        - ``"sdp"``: ``"max_samples"`` (200; larger problems raise) and ``"force"``
          (False; solve them anyway).
    warm_start : bool, default=False
        Start from the previous ``embedding_`` when it has the shape of this fit
        (``bcd`` and ``admm``).
    random_state : int, RandomState instance or None, default=None
        Seeds the initial ``E`` and the order of the rows in each sweep. With
        ``graph="knn"`` both are drawn for the points ordered by their values (fixed
        projections), not by their positions: the rows of ``X`` in another order, with
        the pairs relabelled to match, give the same model with its rows in that order
        (points tied at the k-th distance are ranked by index, see
        :class:`psdlearn.graph.NeighborIndex`).
    verbose : int, default=0
        ``verbose >= 1``: progress bars on stderr (neighbour search, then the sweeps).
    unconstrained, omega, hinge_smoothing, sdp_max_samples, sdp_force, rho, init, B : deprecated
        Deprecated top-level names of the ``solver_options`` keys (``sdp_max_samples``
        and ``sdp_force`` are ``"max_samples"`` and ``"force"``); they give a
        ``FutureWarning`` and will be removed in the next release.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, rank_), of type ``dtype``
        The learned factor: ``K = embedding_ @ embedding_.T`` (for ``admm``, ``V``).
    rank_ : int
        Number of columns of ``embedding_``.
    gamma_ : float
        Loss weight used.
    side_info_ : PairwiseConstraints
        The pairs used (derived from labels when ``y`` is a label vector).
    constraint_scores_ : ndarray of shape (n_pairs,)
        How strongly the learned kernel disagrees with each pair of ``side_info_``, in
        ``[-1, 1]``, higher is more suspicious: ``-T_ij / 2`` times the sum of the
        cosine of ``e_i, e_j`` and that of the rows predicted by their graph neighbours,
        ``(diag(L) - L) E`` (the normalized margin of the loss, from the pair's own rows
        and from the data around them). :meth:`suspicious_constraints` lists the top
        ones. Not set by a fit on a dask array.
    solver_options_ : dict
        The solver's options used, defaults included.
    objective_history_ : list of float
        The objective at the start and after every sweep or iteration.
    time_history_ : list of float
        Cumulative solver seconds, aligned with ``objective_history_``.
    n_iter_ : int
        Sweeps, iterations or steps run (all stages); 1 for ``sdp``.
    converged_ : bool
        Whether the solver's stopping test held (False at ``max_iter`` or after Ctrl-C).
    certificate_ : Certificate or None
        ``bcd`` and ``admm``: a bound on the gap to the optimum of the convex problem
        over ``K >= 0`` (fields ``lambda_min``, ``gap_bound``, ``relative_gap``,
        ``certified``; :mod:`psdlearn.npkl.certificate`). After :meth:`partial_fit` at a
        fixed rank it is computed on the first read of ``certificate_``, ``rank_path_``
        or ``certificate_time_`` (the same bound, and the same ``ConvergenceWarning``
        when it does not certify, raised at that read). At a fixed rank the bound is
        skipped where it would cost more than a fifth of the solve's CPU time (at least
        10 s), or where its arrays would not fit in the memory the fit has (the fit
        itself fits: a memory guard checks before the fit allocates); ``note`` then says
        why, its bounds are NaN and ``certified`` is False.
    rank_path_ : list of (int, float)
        ``bcd`` and ``admm``: ``(rank, relative_gap)`` of every certificate computed.
    certificate_time_ : float
        ``bcd`` and ``admm``: seconds spent in certificates and rank escalation.
    omega_ : float
        ``bcd``: the over-relaxation factor used.
    smoothing_stages_ : list of (float, int)
        ``bcd``: ``(mu, sweeps)`` of each stage, ``mu = 0`` for the exact hinge.
    multilevel_levels_ : list of (int, int)
        ``bcd``: ``(n_samples, sweeps)`` of each coarse level of the multilevel start.
    laplacian_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        The graph Laplacian ``L``.
    sigma_ : float or None
        Gaussian width used (None with ``graph="precomputed"``).
    n_neighbors_ : int or None
        ``k`` of the graph after capping (None with ``graph="precomputed"``).
    degrees_ : ndarray of shape (n_samples,) or None
        Degrees of the kNN similarity graph.
    neighbor_index_ : NeighborIndex or None
        Search index over the training points (``graph="knn"``).
    n_neighbors_transform_ : int or None
        Training neighbours of a new point in :meth:`transform`: among ``k, 2k, 3k,
        4k``, the one whose weighted mean best predicts the training rows left out one
        at a time (``graph="knn"``; the search runs on first use, the sample is drawn in
        :meth:`fit`); ``n_neighbors_`` otherwise.
    graph_info_ : dict or None
        The neighbour search used: ``method``, ``backend``, ``n_neighbors`` and
        estimated ``recall``. None with a precomputed graph.
    X_fit_ : ndarray or sparse matrix of shape (n_samples, n_features)
        Training points (``graph="knn"``).
    n_features_in_ : int
        Number of features (``graph="knn"``) or of samples (precomputed graphs).
    graph_time_, fit_time_ : float
        Seconds spent building the graph and in the solver.
    simplenpkl_objective_history_ : list of float
        ``simplenpkl``: the saddle-point dual it maximizes, per step.
    B_ : float
        ``simplenpkl``: the capacity used.
    mfpc_U_ : ndarray of shape (rank_, rank_)
        ``mfpc``: ``U`` of ``K = Q U Q^T``.
    primal_residual_history_, dual_residual_history_, rho_history_ : list of float
        ``admm``: ``||V - U||_F``, ``rho ||V_k - V_{k-1}||_F`` and the penalty, per
        iteration (Hu & Kwok 2013, eq. 14).
    sdp_status_ : str
        ``sdp``: the conic solver's status.
    sdp_value_ : float
        ``sdp``: the optimal value reported by the conic solver.
    comm_history_, partition_info_ : list of dict, dict
        Fit on a dask array only: per iteration, bytes and seconds of the exchanges;
        the row blocks.

    See Also
    --------
    psdlearn.model_selection.NPKLCV : NPKL with ``gamma`` chosen by cross-validation.
    psdlearn.graph.knn_laplacian : The graph term.
    psdlearn.kernel_kmeans : Clusters of the learned kernel.

    References
    ----------
    Hu, E.-L. & Kwok, J. T. (2015). Scalable nonparametric low-rank kernel learning using
    block coordinate descent. IEEE Transactions on Neural Networks and Learning Systems,
    26(9).

    Hu, E.-L. & Kwok, J. T. (2013). Efficient kernel learning from side information using
    ADMM. IJCAI.

    Zhuang, J., Tsang, I. W. & Hoi, S. C. H. (2011). A family of simple non-parametric
    kernel learning algorithms. JMLR, 12.

    Shang, F., Jiao, L. C. & Wang, F. (2012). Semi-supervised learning with mixed
    knowledge information. KDD.

    Journée, M., Bach, F., Absil, P.-A. & Sepulchre, R. (2010). Low-rank optimization on
    the cone of positive semidefinite matrices. SIAM Journal on Optimization, 20(5).

    Examples
    --------
    >>> import psdlearn as pl
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    >>> model = pl.NPKL(loss="square", random_state=0).fit(X, C)
    >>> model.embedding_.shape
    (150, 18)
    >>> model.transform(X[:2]).shape
    (2, 18)
    >>> labels = pl.kernel_kmeans(model.embedding_, n_clusters=3, random_state=0)
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
        "dtype": [Options(type, {np.float64, np.float32})],
        "solver_options": [dict, None],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        # deprecated top-level names of solver options (FutureWarning in fit)
        "unconstrained": [Hidden(StrOptions({"deprecated", "sequential", "block"}))],
        "omega": [Hidden(StrOptions({"deprecated", "auto"})),
                  Hidden(Interval(numbers.Real, 0, 2, closed="neither"))],
        "hinge_smoothing": [Hidden(StrOptions({"deprecated", "auto"})),
                            Hidden(Interval(numbers.Real, 0, None, closed="neither")), None],
        "sdp_max_samples": [Hidden(StrOptions({"deprecated"})),
                            Hidden(Interval(numbers.Integral, 1, None, closed="left"))],
        "sdp_force": [Hidden(StrOptions({"deprecated"})), "boolean"],
        "rho": [Hidden(StrOptions({"deprecated"})),
                Hidden(Interval(numbers.Real, 0, None, closed="neither"))],
        "init": [Hidden(StrOptions({"deprecated", "random", "bcd"}))],
        "B": [Hidden(StrOptions({"deprecated", "auto"})),
              Hidden(Interval(numbers.Real, 0, None, closed="neither"))],
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
        dtype=np.float64,
        solver_options=None,
        warm_start=False,
        random_state=None,
        verbose=0,
        unconstrained="deprecated",
        omega="deprecated",
        hinge_smoothing="deprecated",
        sdp_max_samples="deprecated",
        sdp_force="deprecated",
        rho="deprecated",
        init="deprecated",
        B="deprecated",
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
        self.dtype = dtype
        self.solver_options = solver_options
        self.warm_start = warm_start
        self.random_state = random_state
        self.unconstrained = unconstrained
        self.omega = omega
        self.hinge_smoothing = hinge_smoothing
        self.sdp_max_samples = sdp_max_samples
        self.sdp_force = sdp_force
        self.rho = rho
        self.init = init
        self.B = B
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        return tags

    @deprecated("constraints_ is deprecated and will be removed in the next release; use "
                "side_info_ (the same PairwiseConstraints).")
    @property
    def constraints_(self):
        """The side information used by :meth:`fit` (deprecated alias of ``side_info_``)."""
        return self.side_info_

    # set by the fit, or on first read after a partial_fit (npkl._deferred_certificate)
    certificate_ = DeferredAttribute()
    rank_path_ = DeferredAttribute()
    certificate_time_ = DeferredAttribute()
    constraint_scores_ = ScoresOnRead()

    @property
    def n_neighbors_transform_(self):
        """Training neighbours of a new point in :meth:`transform` (the attribute's entry
        above). The leave-one-out search that chooses it runs on first use, on the sample
        and embedding of the fit, so that a fit whose points are never extended does not
        pay for it."""
        pending = self.__dict__.get("_pending_transform_choice")
        if pending is not None:
            rows, embedding = pending
            self._n_neighbors_transform = select_n_neighbors(
                self.neighbor_index_, self.X_fit_, embedding, self.sigma_,
                self.n_neighbors_, rows=rows)
            self._pending_transform_choice = None
        try:
            return self.__dict__["_n_neighbors_transform"]
        except KeyError:
            raise AttributeError("n_neighbors_transform_") from None

    @n_neighbors_transform_.setter
    def n_neighbors_transform_(self, value):
        self._n_neighbors_transform = value
        self._pending_transform_choice = None

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
            Side information: pairwise constraints, ``[i, j, +1/-1]`` rows, or partial
            labels (``-1`` = unlabelled), from which every pair of labelled points becomes
            a must-link (same label) or cannot-link constraint.

        Returns
        -------
        self : NPKL
            The fitted estimator.
        """
        check_dtype(self, dask=is_dask_array(X))
        if is_dask_array(X):  # row blocks on a Dask cluster: psdlearn.npkl.distributed
            from psdlearn.npkl.distributed import fit_dask

            return fit_dask(self, X, y)
        with fitting(self):
            self.solver_options_ = resolve_solver_options(self)
            # MemoryError before any allocation, estimate if verbose
            C = guard_npkl_fit(self, X, y)
            start_graph = time.perf_counter()
            with phase("the graph build" if self.graph != "knn" else "the kNN graph build"):
                L = self._build_laplacian(X)
            self.graph_time_ = time.perf_counter() - start_graph
            n = L.shape[0]
            if C is None or C.n_samples != n:  # the guard could not read y: say why here
                C = as_constraints(y, n, check_conflicts=False)
            warn_conflicts(C, stacklevel=1)
            if C.n_pairs == 0:
                raise ValueError("y holds no constraint: NPKL needs at least one pair (or two "
                                 "labelled points).")
            spec = NPKL_SOLVERS[self.solver]
            if self.loss not in spec.losses:
                raise ValueError(f"solver={self.solver!r} handles the losses {spec.losses}, not "
                                 f"loss={self.loss!r}.")
            rule = self._auto_rank(y, C, n)
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
            # gamma_0 and the solver see the points in an order set by their values, so that
            # the random start and sweep orders follow the points, not their positions
            order = value_order(self.X_fit_) if self.graph == "knn" else None
            L_o, pairs_o = in_order(L, C.pairs, order)
            with phase("the gamma_0 eigen-solve (gamma='auto')"):
                self.gamma_ = self._resolve_gamma(L_o, pairs_o, C.signs)
            with phase("the set-up of the problem"):
                problem = NPKLProblem(L_o, pairs_o, C.signs.astype(np.float64), self.loss,
                                      self.gamma_, float(self.b))
            del L_o  # the solve holds L and its renumbered copy, not this one
            start = time.perf_counter()
            with phase(f"the {spec.name} solver"):  # its set-up (renumbering) included
                perm = None
                if getattr(spec, "renumber", False):
                    perm, _, problem = problem.renumbered()
                deferred = run_rounds(self, spec, problem, rank,
                                      check_random_state(self.random_state),
                                      defer=DEFER_FIT_CERTIFICATE, order=order,
                                      renumbered=perm)
            self.fit_time_ = time.perf_counter() - start
            if not deferred:
                warn_uncertified(self)
            self.n_neighbors_transform_ = self.n_neighbors_
            if self.neighbor_index_ is not None:  # chosen on first use (the property)
                self._pending_transform_choice = (
                    loo_sample(len(self.embedding_), self.random_state, order),
                    self.embedding_)
            self.laplacian_ = L
            self.side_info_ = C
            self.__dict__.pop("constraint_scores_", None)  # scored for this fit on first read
        return self

    def partial_fit(self, X, y):
        """Add side information over the training points and re-solve from the current fit.

        The new pairs join ``side_info_`` (:meth:`PairwiseConstraints.union
        <psdlearn.PairwiseConstraints.union>`: a pair given again is merged with a
        warning, a pair given with the opposite sign raises ``ValueError``, cannot-links
        that must-links contradict give a ``ConstraintConflictWarning``) and the problem
        on the union is solved starting from ``embedding_``. The graph, its neighbour
        index, ``sigma_`` and ``n_neighbors_transform_`` are kept: the points are the
        same, only the loss term grows. ``gamma="auto"`` and ``rank="auto"`` are chosen
        again as :meth:`fit` chooses them for the union (``gamma_0`` of all the pairs; the
        rank rule's count grows by the new pairs, and new columns start small and
        random), so the result solves the problem a fresh fit on all the side information
        solves; a given ``gamma`` or ``rank`` is kept. With ``rank="adaptive"`` the
        escalation continues from ``rank_``. With the
        ``bcd`` solver at a fixed rank the rows of the new pairs are first updated alone,
        the others held fixed, until they settle (they carry most of the change), and the
        hinge's smoothing continuation (``hinge_smoothing="auto"``) starts at
        ``mu = 1e-2``: both only shorten the sweeps, whose stopping test is that of
        :meth:`fit`. Solvers without a warm start (``simplenpkl``, ``sdp``, ``mfpc``)
        solve the union from their usual start, the graph still kept. On an unfitted
        estimator it is :meth:`fit`.

        At a fixed rank the duality certificate decides nothing in the solve, and after a
        few new pairs it costs more than the solve (at 10^5 points, 3.5 of 4.8 CPU s):
        it is left to the first read of ``certificate_`` (or ``rank_path_``,
        ``certificate_time_``), which computes the bound :meth:`fit` would and raises
        its ``ConvergenceWarning`` there when it does not certify. A loop of
        ``partial_fit`` calls pays for the certificates it reads. With
        ``rank="adaptive"`` (the certificate grows the rank) or ``verbose`` it is
        computed in ``partial_fit``.

        Parameters
        ----------
        X : array-like, sparse matrix or None
            The ``X`` of :meth:`fit` (the same object or equal values; ``None`` is
            accepted for it).
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            The new side information, indices into the rows of ``X``.

        Returns
        -------
        self : NPKL
            The refitted estimator; ``side_info_`` holds the union.

        Raises
        ------
        ValueError
            If ``X`` is not the training input, or a new pair contradicts a stored one.
        """
        if not hasattr(self, "embedding_"):
            return self.fit(X, y)
        from psdlearn.npkl._partial import partial_fit

        check_dtype(self)
        with fitting(self, "partial_fit"), phase("the re-solve on the union"):
            return partial_fit(self, X, y)

    def suspicious_constraints(self, k=10):
        """The ``k`` constraints the learned kernel disagrees with most.

        Ranked by ``constraint_scores_``, highest first: candidates for a wrong answer,
        to check by hand or to drop before a refit.

        Parameters
        ----------
        k : int, default=10
            How many (at most ``side_info_.n_pairs``).

        Returns
        -------
        indices : ndarray of shape (k,), int64
            Rows of ``side_info_.pairs``.
        constraints : ndarray of shape (k, 3), int64
            Their ``[i, j, +1/-1]`` rows.
        """
        check_is_fitted(self, "constraint_scores_")
        return most_suspicious(self.constraint_scores_, self.side_info_, k)

    def _auto_rank(self, y, C, n):
        """The rank of ``rank="auto"``: :func:`auto_rank` of the constraint count
        (:func:`rank_rule_count`) of the pairs ``C``, or, when ``y`` is a label vector,
        of the smallest pair set that implies its labels (:func:`label_pairs`); at most
        ``n``. The count is kept as ``_rank_count`` (``partial_fit`` adds to it)."""
        pairs, signs = C.pairs, C.signs
        shape = () if isinstance(y, PairwiseConstraints) else np.shape(np.asarray(y))
        if len(shape) == 1 or len(shape) == 2 and shape[1] == 1:  # a label vector
            side = check_side_info(y, n, accept=("labels",), check_conflicts=False)
            pairs, signs = label_pairs(side.codes)
        self._rank_count = rank_rule_count(self.loss, pairs, signs, n)
        return min(auto_rank(self._rank_count), n)

    def _resolve_gamma(self, L, pairs, signs, start=None):
        """``gamma_``; for ``gamma="auto"`` with a margin loss, LOBPCG's vectors of
        ``gamma_0`` are kept as ``_gamma_vectors`` (float32, value order, None from the
        dense solve): ``partial_fit`` starts its ``gamma_0`` from them (``start``)."""
        self._gamma_vectors = None
        if self.gamma != "auto":
            return float(self.gamma)
        from psdlearn.npkl.gamma import auto_gamma, critical_gamma
        from psdlearn.npkl.losses import get_loss

        gamma0 = None
        if get_loss(self.loss).margin:
            gamma0, vectors = critical_gamma(L, pairs, signs, self.loss, start=start,
                                             return_vectors=True, verbose=self.verbose)
            if vectors is not None:
                self._gamma_vectors = vectors.astype(np.float32)
        gamma, _ = auto_gamma(L, pairs, signs, self.loss, gamma0=gamma0)
        if not np.isfinite(gamma):
            warnings.warn("gamma='auto': no nonzero kernel lowers the loss of these "
                          "constraints (lambda_max(G, L) <= 0), so K = 0 is optimal for "
                          "every gamma; gamma = 1 is used.", UserWarning, stacklevel=4)
            return 1.0
        return gamma

    def memory_estimate(self, n_samples, n_features, *, n_pairs=0, nnz=None):
        """Predicted peak memory of :meth:`fit`: the largest of its phases (graph, solve,
        certificate), each the sum of its arrays (``X``, neighbour index and lists,
        Laplacian, ``n x rank`` embedding and copies, Lanczos vectors) plus the
        interpreter. :meth:`fit` raises ``MemoryError`` before allocating when it exceeds
        the memory left to the process, naming changes that would fit.

        Parameters
        ----------
        n_samples, n_features : int
            Shape of ``X`` (``n_features`` 0 for a precomputed graph).
        n_pairs : int, default=0
            Constrained pairs (they set ``rank="auto"``).
        nnz : int, optional
            Stored entries of a sparse ``X``.

        Returns
        -------
        MemoryEstimate
            ``peak_bytes``, ``peak_gb``, ``phase``, ``breakdown`` (bytes per array),
            ``config``; ``fits()`` compares with the memory available.
        """
        return npkl_estimate(self, n_samples, n_features, n_pairs=n_pairs, nnz=nnz)

    def fit_transform(self, X, y=None, **fit_params):
        """Fit and return ``embedding_``, shape (n_samples, rank_).

        This is the solution of the constrained problem; :meth:`transform` of the
        training points returns the same rows.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or (n, n) sparse
            As in :meth:`fit`.
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            As in :meth:`fit`.
        **fit_params : dict
            Passed to :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples, rank_)
            The learned embedding.
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
            The objective at ``E``.
        """
        check_is_fitted(self, "embedding_")
        problem = NPKLProblem(self.laplacian_, self.side_info_.pairs,
                              self.side_info_.signs.astype(np.float64), self.loss,
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
            The ROC AUC; higher is better.
        """
        from sklearn.metrics import roc_auc_score

        check_is_fitted(self, "embedding_")
        training = is_training_data(X, self.graph, getattr(self, "X_fit_", None),
                                    len(self.embedding_))
        E = self.embedding_ if training else self.transform(X)
        C = as_constraints(y, len(E), check_conflicts=False)
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

        A row of ``X`` equal to a row of the training input (an exact match, looked up
        by a hash of each row and confirmed by value) returns that row of ``embedding_``, so
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
        ndarray of shape (n_new, rank_)
            The rows of the points in the learned embedding.

        See Also
        --------
        transform_joint : The extension that links new points to each other.
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
        out = np.empty((X.shape[0], self.embedding_.shape[1]), dtype=self.embedding_.dtype)
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
            New points.

        Returns
        -------
        ndarray of shape (n_new, rank_)
            Their rows, coupled through the joint graph.
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
        return np.column_stack([solve(rhs[:, c]) for c in range(rhs.shape[1])]).astype(
            self.embedding_.dtype, copy=False)
