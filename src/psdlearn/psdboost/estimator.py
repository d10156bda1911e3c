r"""PSDBoost: a trace-one PSD Mahalanobis matrix from triplets by matrix generation.

Problem (3) of Shen, Welsh & Wang (2008), for triplets ``r = (i, j, k)`` meaning
``d(i, j) < d(i, k)`` and ``A_r = (a_i - a_k)(a_i - a_k)^T - (a_i - a_j)(a_i - a_j)^T``:

.. math::

    \max_{X, \rho, \xi} \; \rho - C \sum_r \xi_r \quad \text{s.t.} \quad
    \langle A_r, X \rangle \ge \rho - \xi_r, \quad X \succeq 0, \quad
    \operatorname{tr} X = 1, \quad \xi \ge 0 .

Trace-one PSD matrices are the convex hull of the rank-one ``u u^T`` with ``||u|| = 1``
(Theorem 3.4), so ``X = sum_i theta_i u_i u_i^T`` turns (3) into an LP over ``theta``
with infinitely many columns. Algorithm 1 solves it by column generation
(:mod:`.column_generation`): the restricted master LP (P1)/(D1) over the bases generated
so far (HiGHS, :mod:`._master`) gives dual weights ``w`` and value ``pi``; the most
violated dual constraint is the top eigenpair of ``H = sum_r w_r A_r`` (problem B1,
:mod:`._pricing`); stop when ``lambda_max(H) <= pi + eps``. The master holds only the
triplet rows that a current ``X`` violates (row generation); its value is that of (P1)
over all triplets.

Why the gap is a certificate: ``pi`` is the value of a feasible point of (3) (the
restricted primal), and ``w`` is feasible for the full dual, whose value at ``w`` is
``lambda_max(H(w))``; so the optimum of (3) lies in ``[pi, lambda_max(H)]``.

Four solvers of the same problem (``solver=``, the registry :data:`.solvers.SOLVERS`),
each giving a certified pair ``objective_ <= optimum <= upper_bound_``: this column
generation (Algorithm 1), the primal-dual interior-point method of :mod:`.ipm`
(``O(t^2)`` memory, ``O(t^3)`` per iteration: small ``t``), the subspace method of
:mod:`.subspace` (an SDP master over a low-dimensional range, ``O(t D + D^2)`` memory)
and the same method on a working set of triplet rows grown by pricing (its masters hold
about the ``1 / C`` rows that carry dual weight, not all ``t``).
The estimator validates the parameters, derives the triplets and ``C``, dispatches
through the registry and copies the solver's result to its fitted attributes.

References: Shen, C., Welsh, A. & Wang, L. (2008). PSDBoost: matrix-generation linear
programming for positive semidefinite matrices learning. NIPS.
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state, deprecated
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn._compat import BaseEstimator, Interval, StrOptions, _fit_context
from psdlearn._interrupt import fitting, phase
from psdlearn._mahalanobis import MahalanobisMixin
from psdlearn._progress import warn_interrupted
from psdlearn._solver import SolveOptions
from psdlearn.constraints import (
    Triplets,
    check_side_info,
    labelled_mask,
    triplets_from_constraints,
    triplets_from_labels,
)
from psdlearn.psdboost._bounds import margin_scale
from psdlearn.psdboost._outer import first_working_set, solve_rounds, target_pairs
from psdlearn.psdboost._pricing import TripletOperator
from psdlearn.psdboost.ipm import low_rank_applies
from psdlearn.psdboost.solvers import SOLVERS, TripletProblem

__all__ = ["PSDBoost"]

#: ``C="auto"`` is ``1 / (AUTO_NU * t)``: at most this fraction of the triplets ends with a
#: positive slack (see the ``C`` parameter).
AUTO_NU = 0.3
#: With ``impostors="active"``, ``C="auto"`` is ``1 / (AUTO_ACTIVE_NU * p)`` for ``p``
#: target pairs: at most this fraction of the target pairs' count of impostor triplets
#: ends with a positive slack.
AUTO_ACTIVE_NU = 0.1
#: ``n_neighbors="auto"``: target neighbours per point, and with re-selected impostors
#: the number beyond ``AUTO_NEIGHBORS_MAX_LABELLED`` labelled points.
AUTO_NEIGHBORS = 3
AUTO_NEIGHBORS_LARGE = 1
AUTO_NEIGHBORS_MAX_LABELLED = 1000
#: LPBoost's usual ``nu`` (Demiriz et al. 2002), ``C = 1 / (0.1 t)``: the slack price of the
#: reproductions of Shen et al. (2008).
LPBOOST_NU = 0.1
#: ``solver="auto"`` runs the interior-point method up to this many triplets and at most
#: ``AUTO_IPM_MAX_FEATURES`` features, the working-set method otherwise (the measured
#: crossover of the two, in the method notes of the documentation).
AUTO_IPM_MAX_TRIPLETS = 1000
AUTO_IPM_MAX_FEATURES = 128
#: With ``impostors="active"``, ``solver="auto"`` runs the interior-point method on the
#: working sets up to this many rows: each round starts the solver afresh, and on such
#: sets the working-set method's masters cost more than the Newton steps.
AUTO_ACTIVE_IPM_MAX_TRIPLETS = 2000
#: ... and above it while the interior point's low-rank Newton system applies
#: (``t >= 5 n_s``, ``n_s = D (D + 1) / 2``) and costs at most this ``t n_s^2`` per step.
AUTO_ACTIVE_IPM_FLOPS = 1e10


class PSDBoost(MahalanobisMixin, TransformerMixin, BaseEstimator):
    """PSD metric learning by matrix generation and linear programming (PSDBoost).

    Learns a Mahalanobis matrix ``M`` (``metric_``), symmetric positive semidefinite
    with trace one, from triplets ``(i, j, k)`` that say "``x_i`` is closer to ``x_j``
    than to ``x_k``". With ``A_r = d_k d_k^T - d_j d_j^T``, ``d_j = x_i - x_j`` and
    ``d_k = x_i - x_k``, the margin of triplet ``r`` is
    ``<A_r, M> = d_M(x_i, x_k)^2 - d_M(x_i, x_j)^2``, and PSDBoost maximizes the soft
    margin (problem (3) of Shen, Welsh & Wang 2008):

    .. math::

        \\max_{M, \\rho, \\xi} \\; \\rho - C \\sum_{r=1}^t \\xi_r \\quad \\text{s.t.} \\quad
        \\langle A_r, M \\rangle \\ge \\rho - \\xi_r, \\quad \\xi \\ge 0, \\quad
        M \\succeq 0, \\quad \\operatorname{tr} M = 1 .

    Its dual is ``min_w lambda_max(sum_r w_r A_r)`` over ``0 <= w <= C``,
    ``sum_r w_r = 1``. Shen et al. solve (3) by column generation (their Algorithm 1):
    ``M = sum_i theta_i u_i u_i^T`` is a convex combination of trace-one rank-one bases;
    a restricted master LP over the bases generated so far gives dual weights ``w`` and
    value ``pi``, and the next basis is the top eigenvector of ``H(w) = sum_r w_r A_r``
    (computed matrix-free, never forming a ``D x D`` matrix ``A_r``). Every solver of
    ``solver`` reports a certified pair: the optimum of (3) lies in
    ``[objective_, upper_bound_]``, and the fit stops when the gap is below
    ``eps_ = tol * s`` (``s`` the scale of the margins, see ``tol``).

    :meth:`transform` maps ``X`` to ``X @ components_.T``, where Euclidean distance is
    the learned metric. The side information is ``y`` of :meth:`fit`: partial labels,
    pairwise constraints or :class:`psdlearn.Triplets`.

    Parameters
    ----------
    C : float or "auto", default="auto"
        Price of a unit of slack; needs ``C >= 1 / t`` (``t`` triplets), otherwise (3)
        is unbounded. With ``C = 1 / (nu t)`` the optimal ``rho`` is the ``nu t``-th
        smallest margin and ``rho - C sum xi`` is the mean of the ``nu t`` smallest
        margins: (3) maximizes the mean margin of the hardest fraction ``nu`` of the
        triplets (the ``nu``-parametrization of LPBoost, Demiriz et al. 2002). ``"auto"``
        is ``nu = 0.3`` for fixed triplets; with re-selected impostors (see
        ``impostors``) it is ``C = 1 / (0.1 p)`` for ``p`` target pairs, the same in every
        round (at most ``0.1 p`` impostor triplets keep a positive slack), and a given
        ``C`` needs ``C p >= 1``. ``C = 1 / t`` maximizes the mean margin (a rank-one
        metric), ``C >= 1`` the smallest one (hard margin).
    tol : float, default=1e-5
        Stop when ``upper_bound_ - objective_ <= eps_`` with ``eps_ = tol * s``, where
        ``s = mean_r (||x_i - x_j||^2 + ||x_i - x_k||^2) / D`` bounds the mean
        ``|<A_r, M>|`` at the isotropic metric ``M = I / D`` (the scale of the margins).
    max_iter : int, default=1000
        Iteration cap of the solver: master solves (column generation, subspace,
        working set) or Newton steps (interior point).
    n_columns : int, default=5
        Column generation: bases added per master solve, the top ``n_columns``
        eigenvectors of ``H`` whose reduced cost ``u^T H(w) u - pi`` is positive
        (multiple pricing). ``1`` is Algorithm 1 as written.
    smoothing : float in [0, 1), default=0.8
        Column generation: dual smoothing ``alpha`` (Wentges 1997) against the
        tailing-off of column generation. Pricing uses ``alpha c + (1 - alpha) w``, with
        ``c`` the priced point of smallest ``lambda_max(H)`` so far (the stability
        center); when none of its eigenvectors improves the master (a mispricing),
        pricing is repeated at a point closer to ``w``, at most 50 times. ``0`` is
        Algorithm 1 (pricing at ``w``).
    max_bases : int or None, default=None
        Column generation: cap on the number of columns of the master LP (aggregation,
        Shen et al. 2008 section 5). When it is reached, columns with ``theta = 0`` are
        dropped and, if still too many, the current ``M`` replaces them by its leading
        eigenvectors plus one aggregated trace-one column for its tail; the master value
        never decreases. Must exceed ``min(n_columns, n_features)``. None: no cap.
    n_triplets : int or None, default=None
        Size of a random subsample of the triplets that :meth:`fit` derives from pairs,
        or from labels with ``impostors="nearest"``; all of them when None. Triplets
        passed as :class:`psdlearn.Triplets` are used as given.
    eigen_solver : {"auto", "dense", "lanczos"}, default="auto"
        Pricing: ``"dense"`` forms ``H`` (``D x D``) and calls ``eigh``; ``"lanczos"``
        runs ARPACK on the product ``u -> H(w) u``, ``O(n D + t)`` each; ``"auto"`` is
        dense for ``D <= 64``.
    solver : {"auto", "column-generation", "interior-point", "subspace", \
"working-set"}, default="auto"
        How (3) is solved. Every solver stops at the same certified test and sets the
        same attributes (a few, marked below, belong to column generation only).

        - ``"column-generation"``: Algorithm 1 of Shen et al. (2008) with the
          refinements ``n_columns``, ``smoothing`` and ``max_bases``
          (:func:`psdlearn.psdboost.column_generation.solve_column_generation`).
        - ``"interior-point"``: a primal-dual path-following method on the whole
          problem (:func:`psdlearn.psdboost.ipm.solve_ipm`); ``O(t^2)`` memory and
          ``O(t^3 + t^2 D + D^3)`` time per Newton step, or ``O(t n_s^2 + n_s^3)``
          through the Newton system's low-rank part of order ``n_s = D (D + 1) / 2``,
          which it uses from ``t >= 5 n_s``.
        - ``"subspace"``: an SDP master over a subspace of dimension at most 30 (60 up
          to 1000 triplets), spanned by the range of the solution and the top
          eigenvectors of ``H(w)``, with a proximal term (a spectral bundle method,
          Helmberg & Rendl 2000; :func:`psdlearn.psdboost.subspace.solve_subspace`);
          ``O(t D + D^2)`` memory.
        - ``"working-set"``: the subspace method whose masters hold only a working set
          of triplet rows (those whose margin falls below the master's ``rho``; rows
          held at ``w_r = C`` are fixed), so that a dense master fits for large ``t``.
          Both bounds are evaluated on all ``t`` triplets: the certificate is that of
          the full problem. ``O(t k + |F|^2 + n D)`` memory (``|F|`` free rows, ``k``
          the subspace dimension).
        - ``"auto"``: ``"interior-point"`` for ``t <= 1000`` triplets and
          ``D <= 128`` features, ``"working-set"`` otherwise; with
          ``impostors="active"``, each round's working set goes to the interior-point
          method up to 2000 rows, and beyond where its low-rank Newton system applies
          (``t >= 5 n_s``) at a cost ``t n_s^2 <= 1e10`` per step, ``n_s = D (D + 1) / 2``.
    max_time : float or None, default=None
        Wall-clock budget in seconds, for all rounds together: the solver stops at its
        first check after it (after each Newton step or pricing; no new round starts)
        and returns the certified pair reached,
        with a ``ConvergenceWarning`` stating the gap ``upper_bound_ - objective_``.
        None: no budget.
    random_state : int, RandomState instance or None, default=None
        Seeds the triplet subsample of :meth:`fit` and the first Lanczos start vector.
    verbose : int, default=0
        ``>= 1``: a progress bar on stderr over the iterations, with the bounds
        reached. Nothing is written to stdout.
    n_neighbors : int or "auto", default="auto"
        Target neighbours per labelled point: its ``n_neighbors`` nearest same-class
        points in the Euclidean metric (as in large-margin nearest neighbours), fixed
        during the fit. ``"auto"``: 3, the neighbours a 3-NN classifier consults; with
        ``impostors="active"`` and more than 1000 labelled points, 1. The working sets
        grow with the number of target pairs, so one target neighbour per point fits
        several times faster at large ``n`` for a fraction of a point of 3-NN accuracy,
        while three are the more accurate on small sets (measurements in the method
        notes of the documentation). Ignored for pairwise constraints and triplets.
    impostors : {"active", "nearest"}, default="active"
        How :meth:`fit` pairs the target neighbours with other-class points when ``y``
        holds labels. ``"active"`` follows the metric and is the more accurate where the
        classes overlap, at up to several times the fit time of ``"nearest"``.

        - ``"active"``: problem (3) over every triplet ``(i, j, l)`` with ``j`` a target
          neighbour of ``i`` and ``l`` any point of another class, solved by re-selection
          (row generation). Each round solves (3) on a working set ``W`` by ``solver``,
          then searches under the new metric for the *active impostors*, the rows with
          ``d(i, l)^2 - d(i, j)^2 < rho - eps`` (an exact nearest-neighbour query: each
          target pair's nearest other-class points outside ``W``); each pair's most
          violated rows join ``W`` first (at most ``2 / C`` per round) and rows with zero
          dual weight and a margin above ``rho``
          leave it, until a round lowers the optimum by at most ``eps``; from then on
          rows only join (no cycling where the optimum is degenerate). With ``C``
          fixed, dropping zero-weight rows keeps the optimum of (3) on ``W`` and adding
          rows can only lower it, so the optimum of each round never
          exceeds that of the previous one. The fit ends when no row lies below
          ``rho - eps``: then ``metric_`` is optimal for all the impostor triplets, with
          the certified gap of the last round (a row outside ``W`` with margin at least
          ``rho`` meets the optimality conditions with ``w_r = 0``); or, when the search
          found every row below it, once the metric's value on ``W`` and those rows is
          within ``eps`` of the round's dual bound (they join ``W`` with zero weight,
          ``rounds_[-1]["appended"]``). The first ``W``
          holds the ``max(1.5 / C, 1 / C + 50)`` target pairs of smallest Euclidean
          margin, each with the nearest other-class point of ``i``.
        - ``"nearest"``: fixed triplets, each target pair with the nearest other-class
          point of ``i`` (Euclidean; :func:`psdlearn.triplets_from_labels`), solved once.
          With ``n_neighbors=1`` this is the rule of Shen et al. (2008, section 6).

    Attributes
    ----------
    solver_ : str
        The solver that ran (``solver`` with ``"auto"`` resolved).
    metric_ : ndarray of shape (``n_features_in_``, ``n_features_in_``)
        The learned ``M``: symmetric positive semidefinite, trace one.
    components_ : ndarray of shape (``rank_``, ``n_features_in_``)
        ``L`` with ``metric_ = L^T L``: ``transform(X) = X @ components_.T``.
    rank_ : int
        Number of rows of ``components_``: the bases with ``theta > 0`` (column
        generation, when at most ``n_features``), else the numerical rank of
        ``metric_``.
    side_info_ : Triplets
        The triplets of the fit (derived from ``y``, or ``y`` itself; with
        ``impostors="active"`` the last working set), rows ``(i, j, k)`` for
        ``d(i, j) < d(i, k)``; ``side_info_.triplets`` is the ``(t, 3)`` array. The
        solver's attributes below (``slacks_``, ``dual_weights_``, histories) are those
        of the last solve, on these rows.
    n_neighbors_ : int or None
        Target neighbours per labelled point used (``n_neighbors`` with ``"auto"``
        resolved); None when ``y`` holds pairwise constraints or triplets.
    n_rounds_ : int
        Solves of (3): re-selection rounds with ``impostors="active"``, else 1.
    rounds_ : list of dict
        Per solve: ``n_triplets`` (rows of its working set), ``objective`` and
        ``upper_bound`` (its certified pair), ``n_violated`` (impostor triplets outside
        the working set found below ``rho - eps`` after it, at most two per target pair;
        0 exactly when there is none, at the last round of a converged fit),
        ``seconds`` since the start of the solves, and in a last round that ended by the
        bound on all impostor triplets, ``appended`` (the rows that joined without a
        solve).
    C_ : float
        The slack price used.
    eps_ : float
        Absolute stopping threshold ``tol * s``.
    objective_ : float
        ``rho - C sum xi`` of ``metric_`` with its best ``rho`` and ``xi``: a lower
        bound on the optimum of (3).
    upper_bound_ : float
        Smallest dual value ``lambda_max(H(w))`` over the certified dual points ``w``
        (interior point: the dual objective of its last iterate); the optimum of (3)
        lies in ``[objective_, upper_bound_]``.
    rho_ : float
        Margin ``rho`` of ``metric_``.
    slacks_ : ndarray of shape (t,)
        The slacks ``xi``.
    dual_weights_ : ndarray of shape (t,)
        Dual weights ``w`` (``0 <= w <= C``, ``sum w = 1``): of the last master LP
        (column generation), or the ``w`` attaining ``upper_bound_``.
    objective_history_ : list of float
        Per iteration: the master value ``pi`` (column generation, never decreasing),
        the best lower bound so far (subspace, working set), or the primal objective
        of the iterate (interior point, a bound once its residual vanishes).
    upper_bound_history_ : list of float
        Per iteration, an upper bound on the optimum: the best ``lambda_max(H(w))`` so
        far, or the dual objective of the iterate (interior point).
    time_history_ : list of float
        Seconds from the start of the solver to the end of each iteration.
    n_iter_ : int
        Iterations that completed: master solves, or Newton steps (interior point).
    converged_ : bool
        Whether the stopping test held (with re-selection: in the last round, and no
        impostor triplet left below ``rho - eps``); False after ``max_iter``,
        ``max_time``, 50 rounds or an interrupted fit.
    n_matvec_ : int
        Products ``u -> H(w) u`` computed by Lanczos (0 with the dense eigen-solver).
    theta_ : ndarray of shape (n_master_columns,)
        (Column generation only.) Weights of the master's columns (sum one).
    bases_ : list of ndarray of shape (r_i, ``n_features_in_``)
        (Column generation only.) Factor ``F_i`` of each master column,
        ``Z_i = F_i^T F_i`` (``r_i = 1`` except an aggregated column).
    best_dual_weights_ : ndarray of shape (t,)
        (Column generation only.) The dual point ``w`` attaining ``upper_bound_``.
    lambda_max_history_ : list of float
        (Column generation only.) ``lambda_max(H)`` of each pricing step, each an
        upper bound on the optimum: entry 0 at uniform weights, then one per pricing.
    n_bases_ : int
        (Column generation only.) Bases generated (aggregations excluded).
    n_master_rows_ : int
        (Column generation only.) Triplet rows held by the master LP at the end (row
        generation keeps out triplets whose margin never fell below ``rho``).
    n_aggregations_ : int
        (Column generation only.) Aggregation steps taken (``max_bases``).
    n_mispricings_ : int
        (Column generation only.) Pricing steps at a smoothed point that gave no
        improving column (``smoothing``).
    subspace_dim_history_ : list of int
        (Subspace and working set only.) Dimension of each master's subspace.
    working_set_history_ : list of int
        (Working set only.) Triplet rows held by each master (bound rows included).
    bound_history_ : list of int
        (Working set only.) Rows of each master held at ``w_r = C``.
    fit_time_ : float
        Seconds spent in :meth:`fit`.
    n_features_in_ : int
        Number of features seen during :meth:`fit`.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen during :meth:`fit`, when ``X`` has string column
        names.

    See Also
    --------
    RCA : A Mahalanobis metric from similar pairs, in closed form.
    psdlearn.triplets_from_labels : The triplets that :meth:`fit` derives from labels.

    Notes
    -----
    PSDBoost learns a linear metric, so it helps where the classes are separated by a
    reweighting of the features. Where classes overlap much (a third or more of the
    nearest-neighbour triplets violated by every metric), maximizing the smallest
    margins concentrates ``metric_`` on a few directions and k-NN can lose accuracy.
    Compare with the Euclidean metric by cross-validation.

    The re-selection of impostors (``impostors="active"``, the default) is an extension
    of Shen et al. (2008), who fix one triplet per point; every round is their problem
    (3) on the working set, so its certificate holds for that set, and for all impostor
    triplets once none is left below ``rho - eps``. Each round's solve costs that of ``solver``
    on the working set, whose size is about ``1 / C`` plus the rows at the margin.

    A Ctrl-C (``KeyboardInterrupt``) during the fit stops it at the last complete
    iteration: the fitted attributes hold that iterate, a
    :class:`psdlearn._progress.FitInterruptedWarning` says so and ``converged_`` is
    False. An interrupt before the first iteration completes is re-raised.

    References
    ----------
    Shen, C., Welsh, A. & Wang, L. (2008). PSDBoost: matrix-generation linear
    programming for positive semidefinite matrices learning. Advances in Neural
    Information Processing Systems 21 (NIPS).

    Demiriz, A., Bennett, K. P. & Shawe-Taylor, J. (2002). Linear programming boosting
    via column generation. Machine Learning 46.

    Weinberger, K. Q. & Saul, L. K. (2009). Distance metric learning for large margin
    nearest neighbor classification. Journal of Machine Learning Research 10 (target
    neighbours and impostors).

    Wentges, P. (1997). Weighted Dantzig-Wolfe decomposition for linear mixed-integer
    programming. International Transactions in Operational Research 4(2).

    Helmberg, C. & Rendl, F. (2000). A spectral bundle method for semidefinite
    programming. SIAM Journal on Optimization 10(3).

    Examples
    --------
    >>> import psdlearn as pl
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> X, y = pl.datasets.load("iris")
    >>> m = pl.PSDBoost(random_state=0).fit(X, y)
    >>> round(float(m.metric_.trace()), 6)
    1.0
    >>> m.transform(X).shape[0]
    150
    >>> knn = KNeighborsClassifier(3, metric=m.get_metric()).fit(X, y)
    """

    _parameter_constraints = {
        "C": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_columns": [Interval(numbers.Integral, 1, None, closed="left")],
        "smoothing": [Interval(numbers.Real, 0, 1, closed="left")],
        "max_bases": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left"),
                        StrOptions({"auto"})],
        "impostors": [StrOptions({"active", "nearest"})],
        "n_triplets": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "eigen_solver": [StrOptions({"auto", "dense", "lanczos"})],
        "solver": [StrOptions({"auto", *SOLVERS.names()})],
        "max_time": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, C="auto", tol=1e-5, max_iter=1000, n_columns=5, smoothing=0.8,
                 max_bases=None, n_triplets=None, eigen_solver="auto", solver="auto",
                 max_time=None, random_state=None, verbose=0, n_neighbors="auto",
                 impostors="active"):
        self.C = C
        self.solver = solver
        self.max_time = max_time
        self.n_columns = n_columns
        self.smoothing = smoothing
        self.tol = tol
        self.max_iter = max_iter
        self.max_bases = max_bases
        self.n_triplets = n_triplets
        self.n_neighbors = n_neighbors
        self.impostors = impostors
        self.eigen_solver = eigen_solver
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the metric from side information ``y``.

        What is derived from each kind of ``y``:

        - partial labels (1-D, ``-1`` = unlabelled): for every labelled point ``i`` its
          ``n_neighbors`` target neighbours ``j`` (nearest labelled points of the same
          class), and ``k`` = the active impostors of ``i``, re-selected as the metric
          changes (``impostors="active"``), or its nearest labelled point of another
          class (``impostors="nearest"``, the triplets of Shen et al. 2008, section 6,
          subsampled to ``n_triplets``; :func:`psdlearn.triplets_from_labels`);
        - a :class:`psdlearn.PairwiseConstraints` or an ``(m, 3)`` array of
          ``[i, j, +1/-1]`` rows: every must-link ``(i, j)`` and cannot-link ``(i, k)``
          sharing a point ``i`` give ``(i, j, k)``, subsampled to ``n_triplets``
          (:func:`psdlearn.triplets_from_constraints`);
        - a :class:`psdlearn.Triplets`: used as given (a bare ``(t, 3)`` array would
          read as pairwise constraints, so wrap it: ``fit(X, Triplets(T))``).

        The triplets used are kept as ``side_info_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense features (sparse input is rejected).
        y : array-like of shape (n_samples,) or (m, 3), PairwiseConstraints or Triplets
            The side information, as above; required.

        Returns
        -------
        self : PSDBoost
            Fitted estimator.

        Raises
        ------
        ValueError
            ``y`` is missing, gives no triplet, or ``C < 1 / t`` (``C < 1 / p`` for ``p``
            target pairs with ``impostors="active"``).
        """
        with fitting(self):
            start = time.perf_counter()
            X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
            if y is None:
                raise ValueError(
                    "PSDBoost requires y to be passed, but the target y is None: pass partial "
                    "labels, pairwise constraints or a psdlearn.Triplets.")
            rng = check_random_state(self.random_state)
            side = check_side_info(y, len(X), accept=("labels", "pairs", "triplets"))
            self.n_neighbors_ = None
            solver = "the solver" if self.solver == "auto" else f"the {self.solver} solver"
            if side.kind == "labels" and self.impostors == "active":
                with phase(f"{solver} (active impostors)"):
                    self._fit_active(X, self._codes(side.labels), rng, start)
            else:
                with phase("the choice of the triplets"):
                    triplets = self._triplets(X, side, rng)
                with phase(solver):
                    self._fit(X, triplets, rng)
            self.fit_time_ = time.perf_counter() - start
        return self

    @deprecated("fit_triplets(X, T) is deprecated and will be removed in the next release; "
                "use fit(X, psdlearn.Triplets(T)) instead (same fit).")
    def fit_triplets(self, X, triplets):
        """Deprecated: learn the metric from triplets, as ``fit(X, Triplets(triplets))``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense features.
        triplets : array-like of shape (t, 3) or Triplets
            Integer rows ``(i, j, k)``: sample ``i`` should be closer to ``j`` than to
            ``k``. Duplicate rows are merged with a warning.

        Returns
        -------
        self : PSDBoost
            Fitted estimator.
        """
        if not isinstance(triplets, Triplets):
            shape = np.shape(X)
            triplets = Triplets(triplets, n_samples=shape[0] if shape else None)
        return self.fit(X, triplets)

    def _triplets(self, X, side, rng):
        """The triplets of ``side`` (see :meth:`fit`), as a (t, 3) int64 array."""
        if side.kind == "triplets":
            triplets = side.triplets.triplets
            if len(triplets) == 0:
                raise ValueError("y holds no triplet: PSDBoost needs at least one.")
            return triplets
        if side.kind == "pairs":
            triplets = triplets_from_constraints(side.constraints, n_triplets=self.n_triplets,
                                                 random_state=rng)
            if len(triplets) == 0:
                raise ValueError(
                    "the pairwise constraints in y give no triplet: a triplet (i, j, k) "
                    "needs a must-link (i, j) and a cannot-link (i, k) that share the "
                    "sample i.")
            return triplets
        codes = self._codes(side.labels)
        triplets = triplets_from_labels(X, codes, n_triplets=self.n_triplets, random_state=rng,
                                        n_neighbors=self._resolve_neighbors(codes))
        if len(triplets) == 0:
            raise ValueError("y gives no triplet: a triplet needs a class with at least 2 "
                             "labelled samples.")
        return triplets

    @staticmethod
    def _codes(labels):
        """Class codes ``0..c-1`` of the labels, ``-1`` for the unlabelled points."""
        labelled = labelled_mask(labels)
        codes = np.full(len(labels), -1, dtype=np.int64)
        classes, codes[labelled] = np.unique(labels[labelled], return_inverse=True)
        if len(classes) < 2:
            raise ValueError(
                f"y has labelled samples of {len(classes)} class(es): the triplets of "
                "PSDBoost need labelled samples of at least 2 classes.")
        return codes

    def _resolve_neighbors(self, codes):
        """``n_neighbors`` with ``"auto"`` resolved (see the parameter), kept as
        ``n_neighbors_``."""
        if self.n_neighbors != "auto":
            self.n_neighbors_ = int(self.n_neighbors)
        elif self.impostors == "active" and np.sum(codes >= 0) > AUTO_NEIGHBORS_MAX_LABELLED:
            self.n_neighbors_ = AUTO_NEIGHBORS_LARGE
        else:
            self.n_neighbors_ = AUTO_NEIGHBORS
        return self.n_neighbors_

    # ------------------------------------------------------------------ solver
    def _resolve_C(self, t, nu=AUTO_NU, what="triplets"):
        if self.C == "auto":
            return 1.0 / (nu * t)
        C = float(self.C)
        if C * t < 1.0 - 1e-12:
            raise ValueError(f"C={C} is below 1/t = {1.0 / t:.3g} for t={t} {what}: the "
                             "LP (3) is then unbounded (sum w = 1 cannot hold with w <= C).")
        return C

    def _fit(self, X, triplets, rng):
        """Problem (3) on the fixed ``triplets``."""
        t = len(triplets)
        C = self._resolve_C(t)
        op = TripletOperator(X, triplets)
        nj, nk, jk = op.difference_stats()
        # A_r = dk dk^T - dj dj^T is PSD iff dj is a multiple c dk with |c| <= 1.
        parallel = nj * nk - jk**2 <= 1e-12 * np.maximum(nj * nk, 1e-300)
        if np.all(parallel & (nj <= nk * (1 + 1e-12))):
            warnings.warn(
                "every triplet is satisfied by every metric (each A_r is PSD: a_i - a_j is "
                "a shorter multiple of a_i - a_k): the triplets do not constrain the "
                "metric, and PSDBoost only maximizes the smallest margin.",
                UserWarning, stacklevel=4)
        self.C_, self.eps_ = C, self.tol * margin_scale(nj, nk, X.shape[1])
        res, spec = self._solve(X, triplets, C, rng, self.max_time, op=op)
        self._store(X, triplets, res, spec)
        self.n_rounds_ = 1
        self.rounds_ = [{"n_triplets": t, "objective": self.objective_,
                         "upper_bound": self.upper_bound_, "n_violated": 0,
                         "seconds": self.time_history_[-1] if self.time_history_ else 0.0}]
        self._warn_unconverged(res, spec, res.status == "max_time")
        return self

    def _fit_active(self, X, codes, rng, start):
        """Problem (3) over all impostor triplets of the target pairs, by re-selection
        (:func:`psdlearn.psdboost._outer.solve_rounds`)."""
        pairs = target_pairs(X, codes, self._resolve_neighbors(codes))
        if len(pairs) == 0:
            raise ValueError("y gives no triplet: a triplet needs a class with at least 2 "
                             "labelled samples.")
        C = self._resolve_C(len(pairs), AUTO_ACTIVE_NU, "target pairs")
        first = first_working_set(X, codes, pairs, C)
        nj, nk, _ = TripletOperator(X, first).difference_stats()
        self.C_, self.eps_ = C, self.tol * margin_scale(nj, nk, X.shape[1])
        deadline = None if self.max_time is None else start + self.max_time

        def solve(triplets):
            left = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
            return self._solve(X, triplets, C, rng, left,
                               max_ipm_triplets=AUTO_ACTIVE_IPM_MAX_TRIPLETS)

        res, spec, triplets, rounds, status = solve_rounds(
            X, codes, pairs, first, C, self.eps_, solve, deadline=deadline)
        self._store(X, triplets, res, spec)
        self.n_rounds_, self.rounds_ = len(rounds), rounds
        self.converged_ = bool(self.converged_ and status == "optimal")
        if status == "max_rounds" and not res.interrupted:
            warnings.warn(
                f"PSDBoost stopped after {len(rounds)} rounds of impostor re-selection with "
                f"{rounds[-1]['n_violated']} (or more) impostor triplets still below the "
                "margin rho: metric_ is optimal for the working set side_info_ only.",
                ConvergenceWarning, stacklevel=4)
        else:
            self._warn_unconverged(res, spec, status == "max_time")
        return self

    def _solve(self, X, triplets, C, rng, max_time, *, op=None, max_ipm_triplets=None):
        """Problem (3) on ``triplets`` by the selected solver: ``(result, spec)``."""
        self.solver_ = self._select_solver(len(triplets), X.shape[1], max_ipm_triplets)
        spec = SOLVERS[self.solver_]
        op = TripletOperator(X, triplets) if op is None else op
        problem = TripletProblem(X, triplets, C, op, self.eps_)
        params = {**self.get_params(deep=False), "max_time": max_time}
        options = SolveOptions(max_iter=self.max_iter, tol=self.tol, random_state=rng,
                               verbose=self.verbose, params=params)
        return spec.solve(problem, None, options), spec

    def _store(self, X, triplets, res, spec):
        """The fitted attributes of the solver's result on ``triplets``."""
        self.side_info_ = Triplets(triplets, n_samples=len(X))
        self.components_ = res.embedding.T
        self.rank_ = self.components_.shape[0]
        for name in spec.attributes:
            setattr(self, f"{name}_", res.info[name])
        self.objective_ = float(self.rho_ - self.C_ * self.slacks_.sum())
        self.upper_bound_ = float(self.upper_bound_)
        self.objective_history_ = list(res.objective_history)
        self.time_history_ = list(res.time_history)
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged

    def _warn_unconverged(self, res, spec, timed_out):
        if res.interrupted:
            warn_interrupted("PSDBoost", res.n_iter, unit=spec.unit, stacklevel=6)
        elif not res.converged:
            stop = f"max_time={self.max_time} s" if timed_out else f"max_iter={self.max_iter}"
            warnings.warn(
                f"PSDBoost ({self.solver_}) stopped at {stop} before {spec.stop_rule}, with "
                f"a certified gap upper_bound_ - objective_ = "
                f"{self.upper_bound_ - self.objective_:.3g} > eps = {self.eps_:.3g}: "
                f"{spec.hint}.", ConvergenceWarning, stacklevel=5)

    def _select_solver(self, t, n_features, max_ipm_triplets=None):
        if self.solver != "auto":
            return self.solver
        active = max_ipm_triplets is not None
        if not active:
            max_ipm_triplets = AUTO_IPM_MAX_TRIPLETS
        small = t <= max_ipm_triplets and n_features <= AUTO_IPM_MAX_FEATURES
        # the interior point's low-rank Newton system: O(t n_s^2) per step, no t x t matrix
        n_s = n_features * (n_features + 1) // 2
        low_rank = (active and low_rank_applies(t, n_features)
                    and t * n_s**2 <= AUTO_ACTIVE_IPM_FLOPS)
        return "interior-point" if small or low_rank else "working-set"

    # ------------------------------------------------------------------ use
    def transform(self, X):
        """Map ``X`` to the space where Euclidean distance is the learned metric.

        Each row depends on its own point only.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)
            Points to map, seen in :meth:`fit` or new.

        Returns
        -------
        ndarray of shape (n_samples, ``rank_``)
            ``X @ components_.T``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.components_.T

    def get_mahalanobis_matrix(self):
        """The learned Mahalanobis matrix ``metric_``.

        Returns
        -------
        M : ndarray of shape (``n_features_in_``, ``n_features_in_``)
            Symmetric positive semidefinite with trace one;
            ``d(x, z)^2 = (x - z)^T M (x - z)``.
        """
        check_is_fitted(self)
        return self.metric_

    @deprecated("the attribute triplets_ is deprecated and will be removed in the next "
                "release; use side_info_.triplets instead.")
    @property
    def triplets_(self):
        """Deprecated: ``side_info_.triplets``, the (t, 3) triplets of the fit."""
        return self.side_info_.triplets

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = False  # validate_data rejects sparse X
        return tags
