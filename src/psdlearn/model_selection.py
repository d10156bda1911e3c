"""Choosing ``gamma`` from the constraints alone: cross-validation over pairs, not samples.

NPKL is transductive: the kernel is learned over every sample of ``X`` at once, and its
supervision is the set of pairs. Cross-validation therefore keeps ``X`` (its graph) whole
and splits the constraints: each fold learns the kernel from the training pairs and is
scored on how well it separates the held-out must-links from the held-out cannot-links
(:meth:`psdlearn.NPKL.score`, the ROC AUC of the cosine ``K_ij / sqrt(K_ii K_jj)``).

- :class:`ConstraintKFold`: K-fold over constraint rows, stratified by sign, optionally
  holding out whole must-link components.
- :class:`NPKLCV`: NPKL with ``gamma`` chosen by that cross-validation along a path of
  warm-started fits, then refit on every constraint (in the manner of scikit-learn's
  ``LogisticRegressionCV``), by the best mean score or by the one-standard-error rule
  (:func:`select_gamma`).
- :class:`ClusteringScorer`: a held-out score for kernels that are clustered: the
  held-out constraint accuracy of the k-means partition (an estimate of the Rand index).
- :func:`cross_val_constraint_scores`: the suspicion score of each constraint from a kernel
  learned without it, for finding the wrong answers among the constraints.
"""

from __future__ import annotations

import inspect
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.base import clone
from sklearn.model_selection import BaseCrossValidator, StratifiedGroupKFold, StratifiedKFold
from sklearn.utils.validation import check_is_fitted

from psdlearn._compat import Interval, StrOptions, _fit_context
from psdlearn._interrupt import fitting, phase
from psdlearn._progress import FitInterruptedWarning, progress_bar
from psdlearn.constraints import PairwiseConstraints, as_constraints
from psdlearn.npkl._fit_graph import is_training_data
from psdlearn.npkl._suspicious import constraint_scores
from psdlearn.npkl.estimator import NPKL

__all__ = ["ClusteringScorer", "ConstraintKFold", "NPKLCV", "cross_val_constraint_scores",
           "select_gamma"]


def _component_groups(pairs, signs, n_samples):
    """Group label of each row ``(pairs[r], signs[r])``, see :func:`must_link_groups`."""
    ml = pairs[signs > 0]
    graph = sp.coo_matrix((np.ones(len(ml)), (ml[:, 0], ml[:, 1])),
                          shape=(n_samples, n_samples))
    _, comp = connected_components(graph, directed=False)
    a, b = comp[pairs[:, 0]], comp[pairs[:, 1]]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    # must-links: (c, c); cannot-links: (c_a, c_b) with c_a != c_b, never equal to a (c, c)
    _, groups = np.unique(lo.astype(np.int64) * n_samples + hi, return_inverse=True)
    return groups.ravel().astype(np.int64)


def must_link_groups(constraints):
    """Group label of each constraint such that no held-out constraint is implied by others.

    Must-links are grouped by the connected component of the must-link graph they lie in;
    cannot-links by the unordered pair of components of their ends. Holding out whole
    groups, a held-out must-link has no path of training must-links between its ends
    (no training must-link touches its component at all), and a held-out cannot-link
    ``(a, b)`` has no training cannot-link between the components of ``a`` and ``b`` (so
    the transitive closure, :meth:`psdlearn.PairwiseConstraints.closure`, of the training
    pairs implies none of the held-out ones).

    Parameters
    ----------
    constraints : PairwiseConstraints

    Returns
    -------
    groups : ndarray of shape (m,), int64
    """
    C = constraints
    return _component_groups(C.pairs, C.signs, C.n_samples)


def _pair_rows(X, y):
    """Index pairs ``(m, 2)`` and signs ``(m,)`` of the rows of any form of pairs."""
    if isinstance(X, PairwiseConstraints):
        return X.pairs, X.signs
    arr = np.asarray(X)
    if arr.ndim == 3 and arr.shape[1] == 2:  # the points of each pair: number them
        flat = arr.reshape(-1, arr.shape[2])
        _, inverse = np.unique(flat, axis=0, return_inverse=True)
        pairs = inverse.reshape(-1, 2).astype(np.int64)
    elif arr.ndim == 2 and arr.shape[1] in (2, 3):
        if arr.shape[1] == 3 and y is None:
            return _pair_rows(arr[:, :2], arr[:, 2])
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError("X of shape (m, 2) or (m, 3) must hold integer indices.")
        pairs = arr[:, :2].astype(np.int64)
    else:
        raise ValueError("X must be a PairwiseConstraints, an (m, 3) array of [i, j, +1/-1] "
                         "rows, (m, 2) index pairs or (m, 2, d) pairs of points; got shape "
                         f"{arr.shape}.")
    if y is None:
        raise ValueError("y (the +1/-1 sign of each pair) is required with pairs of shape "
                         f"{arr.shape}.")
    signs = np.asarray(y).ravel()
    if len(signs) != len(pairs):
        raise ValueError(f"y has {len(signs)} entries but X holds {len(pairs)} pairs.")
    if not np.all(np.isin(signs, (-1, 1))):
        raise ValueError("y must hold +1 (must-link / similar) or -1 (cannot-link).")
    if pairs.size and pairs.min() < 0:
        raise ValueError("pair indices must be non-negative.")
    return pairs, signs.astype(np.int64)


def _renamed_x(X, constraints):
    """``X``, or the value of its former name ``constraints`` with a FutureWarning."""
    if constraints is None:
        return X
    warnings.warn("the argument 'constraints' of ConstraintKFold.split / get_n_splits is "
                  "renamed 'X' (scikit-learn's splitter API); 'constraints' will be removed "
                  "in the next release.", FutureWarning, stacklevel=3)
    if X is not None:
        raise TypeError("pass the pairs as X or as constraints, not both.")
    return constraints


class ConstraintKFold(BaseCrossValidator):
    """K-fold cross-validation over pairs, stratified by sign.

    The samples are not split (a kernel is learned over all of them); the pairs are. Each
    fold holds out about ``1 / n_splits`` of the must-links (similar pairs) and of the
    cannot-links. The pairs may be a :class:`psdlearn.PairwiseConstraints` (for
    :class:`NPKLCV`), an ``(m, 3)`` array of ``[i, j, +1/-1]`` rows, or, as a scikit-learn
    splitter for ``GridSearchCV`` and ``cross_val_score`` on a
    :class:`psdlearn.PairsClassifier`, ``(m, 2)`` index pairs or ``(m, 2, d)`` pairs of
    points with their signs in ``y``. The folds depend on the set of pairs, not on the
    order of the rows.

    Must-links are transitive, and that leaks: a held-out must-link ``(a, b)`` is implied
    by training must-links ``(a, c)``, ``(c, b)``, and a kernel that fits the training
    pairs then "predicts" it without generalizing anything (likewise a held-out
    cannot-link between two must-link components that a training cannot-link already
    separates). With ``groups="components"`` whole groups of :func:`must_link_groups` are
    held out instead (all the must-links of a component, all the cannot-links between two
    components), so that no held-out pair follows from the training ones; the folds are
    then only approximately balanced (a large component is one group). The leak inflates
    the held-out score but shifts every value of a hyperparameter alike (the method notes
    on model selection, in the documentation, give its measured effect on the choice).
    Use ``"components"`` where the held-out score itself is reported.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2.
    shuffle : bool, default=False
        Shuffle the pairs (or groups) before splitting.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffle; only used with ``shuffle=True``.
    groups : {"pairs", "components"}, default="pairs"
        Split individual pairs, or whole must-link components (see above).

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn import PairwiseConstraints
    >>> from psdlearn.model_selection import ConstraintKFold
    >>> C = PairwiseConstraints.from_labels(np.repeat([0, 1], 10), 6, 6, random_state=0)
    >>> [len(test) for _, test in ConstraintKFold(3).split(C)]
    [4, 4, 4]
    >>> [len(test) for _, test in ConstraintKFold(3).split(C.pairs, C.signs)]
    [4, 4, 4]
    """

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None, groups="pairs"):
        if not isinstance(n_splits, numbers.Integral) or n_splits < 2:
            raise ValueError(f"n_splits must be an integer >= 2, got {n_splits!r}.")
        if groups not in ("pairs", "components"):
            raise ValueError(f"groups must be 'pairs' or 'components', got {groups!r}.")
        self.n_splits = int(n_splits)
        self.shuffle = shuffle
        self.random_state = random_state
        self.groups = groups

    def get_n_splits(self, X=None, y=None, groups=None, *, constraints=None):
        """Number of folds.

        Parameters
        ----------
        X, y, groups : object
            Ignored; present for the scikit-learn splitter API.
        constraints : object
            Deprecated name of ``X``; ignored.

        Returns
        -------
        int
        """
        _renamed_x(X, constraints)
        return self.n_splits

    def split(self, X=None, y=None, groups=None, *, constraints=None):
        """Yield ``(train_idx, test_idx)`` index arrays over the rows of the pairs.

        Parameters
        ----------
        X : PairwiseConstraints, or array-like of shape (m, 3), (m, 2) or (m, 2, d)
            The pairs. Indices refer to ``X.pairs`` (its sorted, de-duplicated rows) for a
            :class:`PairwiseConstraints`, to the rows given otherwise. ``(m, 2)``: indices
            of points; ``(m, 2, d)``: the points themselves (equal rows are one point).
        y : array-like of shape (m,), default=None
            Sign of each pair, ``+1`` or ``-1``; required for ``(m, 2)`` and ``(m, 2, d)``
            pairs, read from the constraints otherwise.
        groups : None
            Ignored (the grouping is the ``groups`` parameter); for the splitter API.
        constraints : object
            Deprecated name of ``X`` (a ``FutureWarning``); removed in the next release.

        Yields
        ------
        train_idx, test_idx : ndarray of int64
        """
        X = _renamed_x(X, constraints)
        pairs, signs = _pair_rows(X, y)
        for s, name in ((1, "must-links"), (-1, "cannot-links")):
            if np.sum(signs == s) < self.n_splits:
                raise ValueError(f"{self.n_splits} folds need at least {self.n_splits} "
                                 f"{name}, got {int(np.sum(signs == s))}.")
        # split the rows in a canonical order, so that the folds do not depend on it
        key = np.sort(pairs, axis=1)
        order = np.lexsort((key[:, 1], key[:, 0]))
        key, sorted_signs = key[order], signs[order]
        rs = self.random_state if self.shuffle else None
        if self.groups == "pairs":
            splits = StratifiedKFold(self.n_splits, shuffle=self.shuffle,
                                     random_state=rs).split(sorted_signs, sorted_signs)
        else:
            n = int(key.max()) + 1 if key.size else 0
            splits = StratifiedGroupKFold(self.n_splits, shuffle=self.shuffle,
                                          random_state=rs).split(
                sorted_signs, sorted_signs, _component_groups(key, sorted_signs, n))
        for train, test in splits:
            yield np.sort(order[train]).astype(np.int64), np.sort(order[test]).astype(np.int64)


def select_gamma(scores, rule="best"):
    """Index of the chosen ``gamma`` in a table of cross-validation scores.

    Parameters
    ----------
    scores : array-like of shape (n_gammas, n_folds)
        Held-out scores (higher is better), rows in increasing ``gamma``.
    rule : {"best", "one_se"}, default="best"
        ``"best"``: the largest mean score ``s_g`` (ties: the largest ``gamma``).
        ``"one_se"``: the one-standard-error rule (Breiman et al. 1984; Hastie,
        Tibshirani & Friedman, *Elements of Statistical Learning*, 7.10): the smallest
        ``gamma`` whose mean is within one standard error of the best,

        .. math::

            g^* = \\min \\{ g : s_g \\ge s_b - \\sigma_b / \\sqrt{F} \\},

        with ``b`` the best index of ``"best"``, ``sigma_b`` the standard deviation of its
        ``F`` fold scores (``ddof=1``; 0 for one fold). A smaller ``gamma`` puts more
        weight on the graph term ``tr(L K)``, the regularizer of NPKL: among the values
        that the folds cannot tell apart from the best, the rule takes the most
        regularized one, instead of letting fold noise or a plateau carry the choice to
        the large-``gamma`` end (where the fits are the stiffest and, for ADMM at a fixed
        iteration budget, the least converged). With few folds the standard error is
        wide, and the small-``gamma`` end it can reach is not a safe one for NPKL (near
        ``gamma_0`` the kernel is of rank one and clusters poorly), hence the default
        ``"best"``.

    Returns
    -------
    int
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] == 0 or scores.shape[1] == 0:
        raise ValueError(f"scores must be a non-empty (n_gammas, n_folds) table, got shape "
                         f"{scores.shape}.")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores contains NaN or inf.")
    if rule not in ("best", "one_se"):
        raise ValueError(f"rule must be 'best' or 'one_se', got {rule!r}.")
    mean = scores.mean(axis=1)
    best = int(np.flatnonzero(mean >= mean.max() - 1e-12)[-1])
    if rule == "best":
        return best
    n_folds = scores.shape[1]
    se = scores[best].std(ddof=1) / np.sqrt(n_folds) if n_folds > 1 else 0.0
    return int(np.flatnonzero(mean >= mean[best] - se - 1e-12)[0])


def cross_val_constraint_scores(estimator, X, y, *, cv=5, random_state=None):
    """Out-of-fold suspicion score of each constraint: how much a kernel learned without it
    disagrees with it.

    :attr:`psdlearn.NPKL.constraint_scores_` scores each pair under a kernel that was fitted
    to it, and a wrong pair bends that kernel towards itself. Here the pairs are split into
    folds (:class:`ConstraintKFold`, stratified by sign); for each fold a clone of
    ``estimator`` is fitted on the other folds and the held-out pairs ``(i, j)`` of sign
    ``T_ij`` are scored as in ``constraint_scores_``,

    .. math::

        s_{ij} = -\\frac{T_{ij}}{2}\\big(\\cos(e_i, e_j) + \\cos(\\hat e_i, \\hat e_j)\\big)
        \\in [-1, 1],

    with ``e`` the rows of the fold's embedding and ``E_hat = (diag(L) - L) E`` the rows its
    graph neighbours predict. The pair itself never entered the kernel that judges it, in
    the manner of cross-validated label-noise detection. It costs ``cv`` fits on one
    graph (built by the first); it ranks
    wrong pairs better where the data separates the classes only partly, and about as
    well as ``constraint_scores_`` where the kNN graph already separates them.

    Parameters
    ----------
    estimator : NPKL
        An unfitted :class:`psdlearn.NPKL` (or subclass) with the settings to use; it is
        cloned, never fitted itself. The fold fits skip the duality certificate
        (``certificate_tol=None``): a ranking needs no proof of optimality.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The data, as for ``estimator.fit``.
    y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
        The side information, as for ``estimator.fit`` (partial labels become every pair
        of labelled points).
    cv : int or cross-validation splitter, default=5
        Number of folds (a shuffled :class:`ConstraintKFold` seeded by ``random_state``),
        or a splitter whose ``split`` takes the constraints.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffle of the folds when ``cv`` is an int.

    Returns
    -------
    scores : ndarray of shape (n_pairs,)
        In ``[-1, 1]``, higher is more suspicious, aligned with the rows of
        ``PairwiseConstraints`` built from ``y`` (sorted pairs, the order of a fitted
        estimator's ``side_info_``). A positive score: both the pair's own rows and its
        neighbours' rows, learned without the pair, contradict it.

    See Also
    --------
    psdlearn.NPKL.suspicious_constraints : The in-fit ranking (one fit).

    Examples
    --------
    >>> import numpy as np
    >>> import psdlearn as pl
    >>> from psdlearn.model_selection import cross_val_constraint_scores
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, 30, 30, random_state=0)
    >>> scores = cross_val_constraint_scores(pl.NPKL(random_state=0), X, C, random_state=0)
    >>> scores.shape
    (60,)
    """
    if not isinstance(estimator, NPKL):
        raise TypeError(f"estimator must be a psdlearn.NPKL (or subclass), got "
                        f"{type(estimator).__name__}.")
    n_samples = X.shape[0] if hasattr(X, "shape") else len(X)
    C = as_constraints(y, n_samples)
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        cv = ConstraintKFold(int(cv), shuffle=True, random_state=random_state)
    elif isinstance(cv, str) or not hasattr(cv, "split"):
        raise TypeError(f"cv must be an int or a splitter with a split method, got {cv!r}.")
    fold_model = clone(estimator)
    if "certificate_tol" in fold_model.get_params():
        # a ranking needs no optimality certificate; it would cost a fit's time per fold
        fold_model.set_params(certificate_tol=None)
    scores = np.full(C.n_pairs, np.nan)
    data = X
    for train, test in cv.split(C):
        model = clone(fold_model).fit(
            data, PairwiseConstraints(C.pairs[train], C.signs[train], n_samples))
        if data is X:  # the graph depends on X alone: the later folds reuse the first's
            data = model.laplacian_
            fold_model.set_params(graph="precomputed")
        scores[test] = constraint_scores(model.embedding_, model.laplacian_,
                                         C.pairs[test], C.signs[test])
    if np.isnan(scores).any():
        raise ValueError("cv left some constraints out of every test fold; it must be a "
                         "partition of the constraints (a K-fold splitter).")
    return scores


class ClusteringScorer:
    """Held-out constraint accuracy of the k-means partition of the learned kernel.

    Where the kernel is learned to be clustered (kernel k-means into ``n_clusters``, the
    protocol of Hu & Kwok 2013 and 2015), what matters is how many pairs of points the
    partition gets right: its Rand index. The held-out constraints are pairs whose answer
    is known, so the partition's rates on them estimate it from the training constraints
    alone:

    .. math::

        \\mathrm{score} = \\tfrac12 \\big( P(c_i = c_j \\mid \\text{must-link})
                             + P(c_i \\ne c_j \\mid \\text{cannot-link}) \\big),

    the two rates averaged so that the score does not depend on the constraints' mix of
    signs (the Rand index weights the two kinds of pairs by their share among all pairs,
    unknown without labels). :meth:`psdlearn.NPKL.score` (the AUC of the cosine) scores how
    the kernel *ranks* pairs; the two disagree where a kernel that ranks pairs well
    partitions them worse, e.g. near ``gamma_0``, where the kernel is nearly of rank one:
    it can still rank pairs, but its k-means partition is poor.

    Parameters
    ----------
    n_clusters : int
        Number of clusters of the task (the papers use the number of classes).
    n_init : int, default=10
        k-means restarts (:func:`psdlearn.cluster.kernel_kmeans`).
    random_state : int, default=0
        Seeds k-means, the same for every fit, so that scores differ by the kernel only.

    Examples
    --------
    >>> import psdlearn as pl
    >>> from psdlearn.model_selection import NPKLCV, ClusteringScorer
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    >>> model = NPKLCV(gammas=3, cv=3, scoring=ClusteringScorer(3), random_state=0).fit(X, C)
    >>> model.scores_.shape
    (3, 3)
    >>> bool(model.scores_.mean() > 0.8)
    True
    """

    def __init__(self, n_clusters, *, n_init=10, random_state=0):
        if not isinstance(n_clusters, numbers.Integral) or n_clusters < 1:
            raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}.")
        self.n_clusters = int(n_clusters)
        self.n_init = n_init
        self.random_state = random_state

    def __repr__(self):
        return (f"ClusteringScorer({self.n_clusters}, n_init={self.n_init}, "
                f"random_state={self.random_state!r})")

    def __call__(self, estimator, X, constraints):
        """Balanced held-out accuracy of the partition, in [0, 1].

        Parameters
        ----------
        estimator : fitted NPKL
        X : array-like, sparse matrix or None
            The training data of the fit (its ``embedding_`` is clustered), or new points
            (clustered in ``transform(X)``; ``constraints`` then index its rows).
        constraints : PairwiseConstraints or array-like of shape (m, 3)
            Held-out pairs, both signs present.

        Returns
        -------
        float
        """
        from psdlearn.cluster import kernel_kmeans

        check_is_fitted(estimator, "embedding_")
        E = estimator.embedding_
        if not is_training_data(X, estimator.graph, getattr(estimator, "X_fit_", None),
                                len(E)):
            E = estimator.transform(X)
        C = as_constraints(constraints, len(E))
        if C.n_must == 0 or C.n_cannot == 0:
            raise ValueError("the score needs must-links and cannot-links.")
        if not np.any(E):  # a zero kernel (gamma below gamma_0) partitions nothing
            return 0.5
        labels = kernel_kmeans(E, min(self.n_clusters, len(E)), n_init=self.n_init,
                               random_state=self.random_state)
        same = labels[C.pairs[:, 0]] == labels[C.pairs[:, 1]]
        must = C.signs > 0
        return float(0.5 * (np.mean(same[must]) + np.mean(~same[~must])))


#: NPKL parameters that NPKLCV sets itself.
_OWN = ("gamma", "warm_start")


class NPKLCV(NPKL):
    """NPKL with ``gamma`` chosen by cross-validation over the constraints.

    For each fold of ``cv`` (:class:`ConstraintKFold`), NPKL is fit on the training
    constraints over all of ``X`` for every ``gamma`` of the grid, from the smallest to the
    largest, each fit warm-started from the previous one (``warm_start=True``; the
    kernels of neighbouring ``gamma`` are close, so a fit takes a few sweeps) and stopped
    at the looser ``cv_tol``, and scored
    on the held-out constraints (by default :meth:`NPKL.score`: the ROC AUC of the cosine
    similarity of must-links against cannot-links). The ``gamma`` chosen by ``selection``
    from the table of scores (:func:`select_gamma`: the best mean score, ties to the
    largest, or the one-standard-error rule) is refit on every constraint.

    All folds and the refit share one kNN graph, and with ``rank="auto"`` one rank: that
    of the full constraint set (a fold has fewer pairs, and a rank above its own
    ``r (r + 1) / 2 <= m`` rule only loosens the low-rank restriction); the refit starts
    from the fold fit of the chosen ``gamma`` that scored best.

    Parameters
    ----------
    gammas : int or array-like of float, default=None
        The grid. An int ``k``: ``k`` values log-spaced from a tenth to 100 times the
        value of ``NPKL(gamma="auto")`` on all constraints (for the margin losses 3 to 3000
        times ``gamma_0 = 1 / lambda_max(G, L)``, the largest ``gamma`` at which ``K = 0``
        is optimal; for ``pcp`` 10 to 10^4 times ``max_i L_ii``; see
        :mod:`psdlearn.npkl.gamma`); ``None``: 8 such values. An array: those values.
    cv : int, cross-validation splitter or iterable, default=5
        An int ``k`` is ``ConstraintKFold(k)``; a splitter has ``split(constraints)``
        (:class:`ConstraintKFold`);
        an iterable yields ``(train_idx, test_idx)`` over the constraint rows (of
        ``PairwiseConstraints(y).pairs``, i.e. sorted and de-duplicated).
    scoring : callable, default=None
        ``scoring(estimator, X, constraints) -> float``, higher is better, evaluated on
        the held-out constraints; ``None`` is :meth:`NPKL.score`. For a kernel that will
        be clustered, :class:`ClusteringScorer` estimates the partition's accuracy.
    selection : {"best", "one_se"}, default="best"
        How the table of scores chooses ``gamma`` (:func:`select_gamma`): the best mean,
        or the smallest ``gamma`` within one standard error of it.
    require_convergence : bool, default=False
        Choose only among the ``gamma`` whose fold fits all converged (to ``cv_tol``)
        within ``max_iter`` (``cv_converged_``); all of them when none did.
        Cross-validation compares the models of the grid, and a fit stopped at the
        iteration cap is not the model of its ``gamma``: its score is evidence about the
        solver's budget, and the refit at that ``gamma`` (to ``tol <= cv_tol``, the same
        cap) will not reach the model either. This matters for ADMM on ``pcp`` with a
        small ``max_iter``: the held-out score can creep up with ``gamma`` to the top of
        the grid while the fits there stop at the cap.
    cv_tol : float, default=1e-3
        ``tol`` of the fold fits (the refit uses ``tol``): a looser tolerance than the
        refit's, since the held-out score changes little below it and the path's fits
        are the bulk of the cost.
    NPKL_PARAMETERS
        Every other parameter of :class:`psdlearn.NPKL` (all but ``gamma`` and
        ``warm_start``), applied to every fit.

    Attributes
    ----------
    gamma_ : float
        The chosen ``gamma``.
    gammas_ : ndarray of shape (n_gammas,)
        The grid, increasing.
    scores_ : ndarray of shape (n_gammas, n_folds)
        Held-out score of each ``gamma`` on each fold.
    cv_n_iter_ : ndarray of shape (n_gammas, n_folds)
        Sweeps / iterations of each fold fit (small along the warm-started path).
    cv_converged_ : ndarray of shape (n_gammas, n_folds), bool
        Whether each fold fit converged to ``cv_tol`` before ``max_iter``.
    gamma0_ : float or None
        ``gamma_0`` of the full constraint set when the grid is relative to it (margin
        losses; None for ``pcp`` and for a given grid).
    (every fitted attribute of NPKL)
        Of the refit on all constraints with ``gamma_``: ``embedding_``,
        ``objective_history_``, ``n_iter_``, ``rank_``, ``laplacian_``, ...

    Examples
    --------
    >>> import psdlearn as pl
    >>> from psdlearn.model_selection import NPKLCV
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    >>> model = NPKLCV(gammas=4, cv=3, random_state=0).fit(X, C)
    >>> model.scores_.shape
    (4, 3)
    """

    _parameter_constraints = {
        **{k: v for k, v in NPKL._parameter_constraints.items() if k not in _OWN},
        "gammas": [Interval(numbers.Integral, 1, None, closed="left"), "array-like", None],
        "cv": [Interval(numbers.Integral, 2, None, closed="left"), "cv_object"],
        "scoring": [callable, None],
        "selection": [StrOptions({"best", "one_se"})],
        "require_convergence": ["boolean"],
        "cv_tol": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, *, gammas=None, cv=5, scoring=None, selection="best",
                 require_convergence=False, cv_tol=1e-3, **params):
        unknown = set(params) - set(_NPKL_DEFAULTS)
        if unknown:
            raise TypeError(f"NPKLCV got unexpected parameters {sorted(unknown)}.")
        self.gammas = gammas
        self.cv = cv
        self.scoring = scoring
        self.selection = selection
        self.require_convergence = require_convergence
        self.cv_tol = cv_tol
        for name, default in _NPKL_DEFAULTS.items():
            setattr(self, name, params.get(name, default))

    def _npkl(self, **changes):
        return NPKL(**{**{k: getattr(self, k) for k in _NPKL_DEFAULTS}, **changes})

    def _splits(self, C):
        if isinstance(self.cv, numbers.Integral):
            return list(ConstraintKFold(self.cv).split(C))
        if hasattr(self.cv, "split"):
            return list(self.cv.split(C))
        return [(np.asarray(tr), np.asarray(te)) for tr, te in self.cv]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Choose ``gamma`` by cross-validation over the constraints, then refit.

        Parameters
        ----------
        X : array-like or sparse matrix
            As for :meth:`NPKL.fit` (features, a kNN distance graph, or a Laplacian).
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            Side information, as for :meth:`NPKL.fit`.

        Returns
        -------
        self
        """
        with fitting(self):
            from psdlearn.npkl.gamma import auto_gamma

            base = self._npkl()
            with phase("the graph build" if self.graph != "knn" else "the kNN graph build"):
                L = base._build_laplacian(X)
            n = L.shape[0]
            C = as_constraints(y, n)
            if C.n_pairs == 0:
                raise ValueError("y holds no constraint: NPKLCV needs pairs (or labels).")
            rank = self.rank
            if rank == "auto":
                rank = self._auto_rank(y, C, n)
            self.gamma0_ = None
            if self.gammas is None or isinstance(self.gammas, numbers.Integral):
                with phase("the gamma_0 eigen-solve (the centre of the grid)"):
                    centre, self.gamma0_ = auto_gamma(L, C.pairs, C.signs, self.loss)
                if not np.isfinite(centre):
                    raise ValueError("no nonzero kernel lowers the loss of these constraints; "
                                     "pass an explicit grid of gammas.")
                k = 8 if self.gammas is None else int(self.gammas)
                grid = centre * (np.logspace(-1.0, 2.0, k) if k > 1 else np.ones(1))
            else:
                grid = np.sort(np.asarray(self.gammas, dtype=np.float64).ravel())
                if grid.size == 0 or not np.all(grid > 0):
                    raise ValueError("gammas must be positive.")
            splits = self._splits(C)
            scorer = self.scoring or (lambda est, X_, C_: est.score(X_, C_))
            scores = np.empty((len(grid), len(splits)))
            n_iter = np.zeros((len(grid), len(splits)), dtype=np.int64)
            converged = np.zeros((len(grid), len(splits)), dtype=bool)
            best_fold_E = [None] * len(grid)
            bar = progress_bar(self.verbose, total=scores.size, desc="NPKLCV", unit="fit")
            with phase("the cross-validation"), bar:
                for f, (train, test) in enumerate(splits):
                    C_tr = PairwiseConstraints(C.pairs[train], C.signs[train], n)
                    C_te = PairwiseConstraints(C.pairs[test], C.signs[test], n)
                    # no certificate on the loose fold fits (it would fail and warn), unless
                    # rank="adaptive" grows the rank by it
                    model = self._npkl(graph="precomputed", rank=rank, warm_start=True,
                                       tol=max(self.tol, self.cv_tol), verbose=0,
                                       certificate_tol=(self.certificate_tol
                                                        if rank == "adaptive" else None))
                    # small gamma first: K grows along the path, and a stiff large-gamma
                    # problem starts from a near solution (a cold start there is the slowest)
                    for g in range(len(grid)):
                        with warnings.catch_warnings():  # a fold fit stopped stops the search
                            warnings.simplefilter("ignore", FitInterruptedWarning)
                            model.set_params(gamma=float(grid[g])).fit(L, C_tr)
                        if model._interrupted_in is not None:
                            stop = KeyboardInterrupt()
                            stop.phases = [f"{model._interrupted_in} of the fit of fold {f + 1} "
                                           f"at gamma={grid[g]:.3g}"]
                            raise stop
                        scores[g, f] = scorer(model, L, C_te)
                        n_iter[g, f] = model.n_iter_
                        converged[g, f] = model.converged_
                        if best_fold_E[g] is None or scores[g, f] > scores[g, :f].max():
                            best_fold_E[g] = model.embedding_
                        bar.update(1)
            candidates = np.arange(len(grid))
            if self.require_convergence and converged.all(axis=1).any():
                candidates = np.flatnonzero(converged.all(axis=1))
            best = int(candidates[select_gamma(scores[candidates], self.selection)])
            final = self._npkl(gamma=float(grid[best]), rank=rank, warm_start=True)
            final.embedding_ = best_fold_E[best]
            with phase("the refit at the chosen gamma"):
                final.fit(X, C)
            # the fitted attributes, and the private state behind the lazily chosen
            # n_neighbors_transform_ and the training-row lookup of transform
            private = ("_training_rows", "_n_neighbors_transform", "_pending_transform_choice",
                       "_pending_certificate")
            for name, value in vars(final).items():
                if (name.endswith("_") and not name.startswith("_")) or name in private:
                    setattr(self, name, value)
            self.gamma_ = float(grid[best])
            self.gammas_ = grid
            self.scores_ = scores
            self.cv_n_iter_ = n_iter
            self.cv_converged_ = converged
        return self

    def score(self, X, y):
        """:meth:`NPKL.score` of the refit model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training data of ``fit`` (the held-out constraints index its rows).
        y : PairwiseConstraints or array-like of shape (m, 3)
            Held-out constraints.

        Returns
        -------
        float
        """
        check_is_fitted(self, "embedding_")
        return super().score(X, y)


def _npkl_defaults():
    sig = inspect.signature(NPKL.__init__)
    return {name: p.default for name, p in sig.parameters.items()
            if p.kind == p.KEYWORD_ONLY and name not in _OWN}


#: NPKL's parameters (but ``gamma`` and ``warm_start``) and defaults; NPKLCV takes all of
#: them, so that parameters added to NPKL reach NPKLCV without a second list.
_NPKL_DEFAULTS = _npkl_defaults()
NPKLCV.__init__.__signature__ = inspect.Signature(
    [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
       for name, default in {"gammas": None, "cv": 5, "scoring": None, "selection": "best",
                             "require_convergence": False, "cv_tol": 1e-3,
                             **_NPKL_DEFAULTS}.items()])
# The docstring names NPKL's parameters from the same list as the signature, so that a
# parameter added to NPKL is documented here too.
NPKLCV.__doc__ = NPKLCV.__doc__.replace(
    "    NPKL_PARAMETERS\n", f"    {', '.join(_NPKL_DEFAULTS)}\n", 1)
