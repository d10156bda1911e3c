"""Pair verification with a learned kernel or metric, in metric-learn's pairs conventions.

A pair of points is labelled ``+1`` (similar: the same class, the same person, a
must-link) or ``-1`` (dissimilar). :class:`PairsClassifier` learns a psdlearn kernel or
metric from labelled pairs and decides new pairs by thresholding a similarity. Pairs are
given as in metric-learn (de Vazelhes et al. 2020): an ``(m, 2, d)`` array of the two
points of each pair, or ``(m, 2)`` indices into ``preprocessor``, an ``(n, d)`` array of
points. With indices the learner sees every point of ``preprocessor``, labelled or not: for
a graph-based learner such as NPKL that is the semi-supervised set.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import ClassifierMixin, clone
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from psdlearn._compat import BaseEstimator, StrOptions, _fit_context
from psdlearn.cluster import _default_learner, check_learner, learner_embedding
from psdlearn.constraints import PairwiseConstraints

__all__ = ["PairsClassifier", "calibrated_threshold"]

_STRATEGIES = ("accuracy", "f_beta", "max_tpr", "max_tnr")


def _is_mahalanobis(learner):
    """Whether the learner is a linear map ``L`` (a Mahalanobis metric ``M = L^T L``)."""
    from psdlearn.kml import RCA
    from psdlearn.psdboost import PSDBoost

    return isinstance(learner, PSDBoost | RCA) or hasattr(learner, "get_mahalanobis_matrix")


def _threshold_table(scores, y):
    """Every distinct threshold ``t`` (accept ``score >= t``) with its confusion counts.

    Returns the candidate thresholds in decreasing order, ``+inf``-like first (reject
    every pair: the largest score plus one), then each distinct score, and the true and
    false positives accepted at each.
    """
    order = np.argsort(-scores, kind="stable")
    s, pos = scores[order], y[order] > 0
    tp, fp = np.cumsum(pos), np.cumsum(~pos)
    last = np.r_[s[1:] != s[:-1], True]  # the last row of each run of equal scores
    top = s[0] + 1.0 if len(s) else 1.0
    thresholds = np.r_[top, s[last]]
    return thresholds, np.r_[0, tp[last]], np.r_[0, fp[last]]


def calibrated_threshold(scores, y, strategy="accuracy", min_rate=None, beta=1.0):
    """The threshold on ``scores`` that is best by ``strategy`` on pairs labelled ``y``.

    A pair is accepted (predicted ``+1``) when its score is ``>= t``. With ``P`` and ``N``
    the numbers of positive and negative pairs and ``TP(t)``, ``FP(t)`` those accepted,
    ``TPR = TP / P``, ``TNR = 1 - FP / N``, precision ``TP / (TP + FP)``:

    - ``"accuracy"``: maximize ``(TP + N - FP) / (P + N)``;
    - ``"f_beta"``: maximize ``F_beta = (1 + beta^2) prec rec / (beta^2 prec + rec)``
      (0 where undefined);
    - ``"max_tpr"``: maximize ``TPR`` subject to ``TNR >= min_rate``;
    - ``"max_tnr"``: maximize ``TNR`` subject to ``TPR >= min_rate``.

    Every distinct score and "reject all" are tried; ties go to the larger threshold.

    Parameters
    ----------
    scores : array-like of shape (m,)
        Decision values, higher = more similar.
    y : array-like of shape (m,)
        ``+1`` / ``-1``.
    strategy : {"accuracy", "f_beta", "max_tpr", "max_tnr"}, default="accuracy"
    min_rate : float in [0, 1], default=None
        The rate to keep (required by ``"max_tpr"`` and ``"max_tnr"``).
    beta : float > 0, default=1.0
        Weight of recall in ``"f_beta"``.

    Returns
    -------
    float
    """
    scores = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(y).ravel()
    if strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}.")
    if strategy in ("max_tpr", "max_tnr"):
        if not isinstance(min_rate, numbers.Real) or not 0 <= min_rate <= 1:
            raise ValueError(f"strategy={strategy!r} needs min_rate, a number in [0, 1]; "
                             f"got {min_rate!r}.")
    if strategy == "f_beta" and not (isinstance(beta, numbers.Real) and beta > 0):
        raise ValueError(f"beta must be a positive number, got {beta!r}.")
    if len(scores) == 0 or len(scores) != len(y):
        raise ValueError(f"scores and y must be non-empty and of equal length, got "
                         f"{len(scores)} and {len(y)}.")
    thresholds, tp, fp = _threshold_table(scores, y)
    P, N = np.sum(y > 0), np.sum(y <= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = tp / P if P else np.ones_like(tp, dtype=float)
        tnr = 1.0 - fp / N if N else np.ones_like(fp, dtype=float)
        if strategy == "accuracy":
            value = (tp + N - fp) / (P + N)
        elif strategy == "f_beta":
            prec, rec = tp / (tp + fp), tpr
            value = (1 + beta**2) * prec * rec / (beta**2 * prec + rec)
            value = np.nan_to_num(value, nan=0.0)
        elif strategy == "max_tpr":
            value = np.where(tnr >= min_rate, tpr, -np.inf)
        else:
            value = np.where(tpr >= min_rate, tnr, -np.inf)
    return float(thresholds[int(np.argmax(value))])


class PairsClassifier(ClassifierMixin, BaseEstimator):
    """Classify pairs of points as similar (+1) or dissimilar (-1) with a learned kernel.

    ``fit(pairs, y)`` fits a clone of ``estimator`` (any psdlearn learner; NPKL by
    default) on the points of the pairs, with the labelled pairs as must-links (``+1``) and
    cannot-links (``-1``). It embeds each point as a row ``e`` of the learned kernel
    ``K = E E^T`` (for a Mahalanobis learner ``e = L x``, ``M = L^T L``), and scores a pair
    ``(u, v)`` by

    .. math::

        \\mathrm{cosine:}\\ \\frac{K_{uv}}{\\sqrt{K_{uu} K_{vv}}}
        = \\frac{e_u^\\top e_v}{\\lVert e_u \\rVert \\lVert e_v \\rVert}
        \\qquad \\text{or} \\qquad
        \\mathrm{distance:}\\ -\\lVert e_u - e_v \\rVert
        = -\\sqrt{K_{uu} + K_{vv} - 2 K_{uv}} ,

    higher = more similar. ``predict`` accepts the pairs whose score is at least
    ``threshold_``, which ``fit`` calibrates for accuracy on the training pairs (as
    metric-learn does); :meth:`calibrate_threshold` recalibrates it on other pairs.
    ``score`` is the ROC AUC of the decision values, which no threshold affects.

    Pairs are given as in metric-learn: an ``(m, 2, d)`` array holding the two points of
    each pair, or ``(m, 2)`` integer indices into ``preprocessor``. With indices the
    learner is fitted on every point of ``preprocessor``, labelled or not (for NPKL: the
    graph over all of them, the semi-supervised set), and pairs of them are scored with the
    fitted embedding; with points, on the distinct points of the pairs, and new points are
    embedded by the learner's ``transform``. Cross-validation
    (:class:`psdlearn.model_selection.ConstraintKFold`) splits the pairs; the learner then
    sees the training pairs only.

    Parameters
    ----------
    estimator : psdlearn estimator, default=None
        The learner, cloned at fit: NPKL, KernelMetricLearner, GeneralizedNystroem
        (kernels), PSDBoost, RCA (Mahalanobis metrics), or any estimator taking
        ``fit(X, PairwiseConstraints)`` with ``embedding_`` or ``transform``. ``None`` is
        ``NPKL(certificate_tol=None, tol=1e-3)``: no duality certificate, which checks the
        solve but does not change the kernel, and a solve stopped at a relative change of
        ``E`` of ``1e-3``, ample for ranking pairs; pass ``NPKL()`` for the certificate and
        the tighter ``tol=1e-5``. Its parameters are reachable as ``estimator__name``
        (GridSearchCV).
    preprocessor : array-like of shape (n_samples, n_features), default=None
        The points that ``(m, 2)`` index pairs refer to; not needed for ``(m, 2, d)``
        pairs.
    similarity : {"auto", "cosine", "distance"}, default="auto"
        The decision value: the cosine of the embeddings, or minus their Euclidean
        distance (the learned metric). ``"auto"``: the cosine for kernel learners and the
        distance for Mahalanobis learners (PSDBoost, RCA), whose metric is the learned
        object.

    Attributes
    ----------
    estimator_ : estimator
        The fitted learner.
    embedding_ : ndarray of shape (n_samples, rank) or None
        Embedding of the rows of ``preprocessor`` (None when fitted on points).
    threshold_ : float
        Pairs with ``decision_function >= threshold_`` are predicted ``+1``.
    similarity_ : {"cosine", "distance"}
        The resolved ``similarity``.
    classes_ : ndarray of shape (2,)
        ``[-1, 1]``.
    n_features_in_ : int
        Dimension ``d`` of the points.

    See Also
    --------
    ConstrainedClustering : the learner's embedding clustered.
    psdlearn.model_selection.ConstraintKFold : folds over pairs.

    References
    ----------
    de Vazelhes, Carey, Tang, Vauquier & Bellet (2020), *metric-learn: Metric Learning
    Algorithms in Python*, JMLR 21(138). Hu & Kwok (2015), *Low-rank kernel learning for
    graph-based clustering*, IEEE TNNLS.

    Examples
    --------
    >>> import numpy as np
    >>> import psdlearn as pl
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, n_must=60, n_cannot=60, random_state=0)
    >>> clf = pl.PairsClassifier(preprocessor=X).fit(C.pairs, C.signs)
    >>> test = pl.PairwiseConstraints.from_labels(y, 50, 50, random_state=1)
    >>> bool(clf.score(test.pairs, test.signs) > 0.9)
    True
    >>> clf.predict(test.pairs[:3]).tolist()
    [1, 1, 1]
    """

    _parameter_constraints = {
        "estimator": "no_validation",
        "preprocessor": ["array-like", None],
        "similarity": [StrOptions({"auto", "cosine", "distance"})],
    }

    def __init__(self, estimator=None, *, preprocessor=None, similarity="auto"):
        self.estimator = estimator
        self.preprocessor = preprocessor
        self.similarity = similarity

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.two_d_array = False
        tags.input_tags.three_d_array = True
        return tags

    # ------------------------------------------------------------------ input
    def _preprocessor(self):
        if self.preprocessor is None:
            raise ValueError("pairs of shape (m, 2) are indices into preprocessor, and "
                             "preprocessor is None: pass preprocessor=X, or the pairs as an "
                             "(m, 2, d) array of points.")
        return check_array(self.preprocessor, dtype=np.float64, input_name="preprocessor")

    def _check_pairs(self, pairs, reset=False):
        """``("indices", (m, 2) int64, X)`` with ``X`` the validated preprocessor, or
        ``("points", (m, 2, d) float64, None)``."""
        if isinstance(pairs, PairwiseConstraints):
            raise TypeError("pairs must be an array; for a PairwiseConstraints C pass "
                            "fit(C.pairs, C.signs).")
        arr = np.asarray(pairs)
        if arr.dtype.kind == "O":
            arr = np.asarray(arr.tolist())
        if arr.ndim == 2 and arr.shape[1] == 2 and arr.dtype.kind in "iub":
            X = self._preprocessor()
            n = X.shape[0]
            if len(arr) == 0:
                raise ValueError("pairs is empty: 0 pairs given.")
            idx = arr.astype(np.int64)
            bad = (idx < 0) | (idx >= n)
            if bad.any():
                row = int(np.flatnonzero(bad.any(axis=1))[0])
                raise ValueError(f"pair index {idx[row].tolist()} at row {row} is out of "
                                 f"range for preprocessor with {n} points.")
            same = idx[:, 0] == idx[:, 1]
            if same.any():
                row = int(np.flatnonzero(same)[0])
                raise ValueError(f"self-pair ({idx[row, 0]}, {idx[row, 0]}) at row {row}: a "
                                 "pair needs two different points.")
            if reset:
                self.n_features_in_ = X.shape[1]
            return "indices", idx, X
        if arr.ndim == 2 and arr.shape[1] == 2:
            raise TypeError(f"pairs of shape (m, 2) are indices and must be integers, got "
                            f"dtype {arr.dtype}; pairs of points have shape (m, 2, d).")
        if arr.ndim != 3 or arr.shape[1] != 2:
            raise ValueError(f"pairs must have shape (m, 2, d) (two points per pair) or (m, 2) "
                             f"(indices into preprocessor); got shape {arr.shape}.")
        flat = check_array(arr.reshape(len(arr) * 2, -1) if len(arr) else arr.reshape(0, 0),
                           dtype=np.float64, input_name="pairs")
        d = arr.shape[2]
        if reset:
            self.n_features_in_ = d
        elif d != self.n_features_in_:
            raise ValueError(f"X has {d} features, but PairsClassifier is expecting "
                             f"{self.n_features_in_} features as input.")
        return "points", flat.reshape(len(arr), 2, d), None

    @staticmethod
    def _check_y(y, m):
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != m:
            raise ValueError(f"y must be a 1-D array of {m} labels (one per pair), got "
                             f"shape {y.shape}.")
        if y.dtype.kind not in "iufb" or not np.all(np.isin(y, (-1, 1))):
            raise ValueError("y must hold +1 (similar pair) or -1 (dissimilar pair); got "
                             f"{np.unique(y)[:5].tolist()}.")
        return y.astype(np.int64)

    @staticmethod
    def _constraints(idx, y, n):
        """Constraints over distinct points from pairs of points, some of them equal.

        Equal feature vectors are one point of the learner: a pair of two equal points
        says nothing about the kernel, and two pairs of the same two points with opposite
        labels contradict each other; both are left out of the fit, with a warning.
        Repeated pairs with one label are one constraint.
        """
        key = np.sort(idx, axis=1)
        keep = key[:, 0] != key[:, 1]
        n_equal = int(np.sum(~keep))
        codes = key[:, 0] * n + key[:, 1]
        conflict = np.zeros(len(idx), dtype=bool)
        for sign in (1, -1):
            other = np.isin(codes, codes[y == -sign])
            conflict |= (y == sign) & other
        keep &= ~conflict
        if n_equal or conflict.any():
            warnings.warn(f"{n_equal} pair(s) of two equal points and {int(conflict.sum())} "
                          "pair(s) of the same two points with opposite labels are left out "
                          "of the fit.", UserWarning, stacklevel=3)
        if not keep.any():
            raise ValueError("no pair of two different points with a consistent label is "
                             "left to fit.")
        _, first = np.unique(codes[keep], return_index=True)
        rows = np.flatnonzero(keep)[first]
        return PairwiseConstraints(key[rows], y[rows], n_samples=n)

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, pairs, y):
        """Learn the kernel or metric from labelled pairs, and calibrate the threshold.

        Parameters
        ----------
        pairs : array-like of shape (m, 2, d) or (m, 2)
            Pairs of points, or integer indices into ``preprocessor``.
        y : array-like of shape (m,)
            ``+1`` similar, ``-1`` dissimilar.

        Returns
        -------
        self
        """
        kind, P, X = self._check_pairs(pairs, reset=True)
        y = self._check_y(y, len(P))
        if kind == "indices":
            idx = P
        else:
            X, inverse = np.unique(P.reshape(-1, P.shape[2]), axis=0, return_inverse=True)
            idx = inverse.reshape(-1, 2)
        C = self._constraints(idx, y, len(X)) if kind == "points" else \
            PairwiseConstraints(idx, y, n_samples=len(X))
        learner = clone(self.estimator) if self.estimator is not None else _default_learner()
        check_learner(learner, "PairsClassifier")
        self.estimator_ = learner.fit(X, C)
        self.similarity_ = self.similarity
        if self.similarity == "auto":
            self.similarity_ = "distance" if _is_mahalanobis(learner) else "cosine"
        E = learner_embedding(self.estimator_, X)
        self.embedding_ = E if kind == "indices" else None
        self.classes_ = np.array([-1, 1])
        self.threshold_ = calibrated_threshold(self._similarity(E[idx[:, 0]], E[idx[:, 1]]),
                                               y, "accuracy")
        return self

    # ------------------------------------------------------------- embedding
    def _transform(self, X):
        return np.asarray(self.estimator_.transform(X), dtype=np.float64)

    def _pair_embeddings(self, pairs):
        """Embeddings ``(E_u, E_v)``, each of shape (m, rank), of the two sides of pairs."""
        check_is_fitted(self, "threshold_")
        kind, P, X = self._check_pairs(pairs)
        if kind == "indices":
            E = self.embedding_
            if E is None:
                E = self._transform(X)
            return E[P[:, 0]], E[P[:, 1]]
        points, inverse = np.unique(P.reshape(-1, P.shape[2]), axis=0, return_inverse=True)
        E = self._transform(points)[inverse.ravel()]
        return E[0::2], E[1::2]

    def _similarity(self, Eu, Ev):
        if self.similarity_ == "distance":
            return -np.linalg.norm(Eu - Ev, axis=1)
        dot = np.einsum("ij,ij->i", Eu, Ev)
        denom = np.linalg.norm(Eu, axis=1) * np.linalg.norm(Ev, axis=1)
        return np.divide(dot, denom, out=np.zeros_like(dot), where=denom > 0)

    # ------------------------------------------------------------- decisions
    def decision_function(self, pairs):
        """Similarity of each pair (higher = more similar): the cosine or minus the distance.

        Parameters
        ----------
        pairs : array-like of shape (m, 2, d) or (m, 2)

        Returns
        -------
        ndarray of shape (m,)
        """
        return self._similarity(*self._pair_embeddings(pairs))

    def pair_score(self, pairs):
        """Same as :meth:`decision_function` (metric-learn's name).

        Parameters
        ----------
        pairs : array-like of shape (m, 2, d) or (m, 2)

        Returns
        -------
        ndarray of shape (m,)
        """
        return self.decision_function(pairs)

    def pair_distance(self, pairs):
        """Learned distance of each pair, ``||e_u - e_v|| = sqrt(K_uu + K_vv - 2 K_uv)``.

        Parameters
        ----------
        pairs : array-like of shape (m, 2, d) or (m, 2)

        Returns
        -------
        ndarray of shape (m,)
        """
        Eu, Ev = self._pair_embeddings(pairs)
        return np.linalg.norm(Eu - Ev, axis=1)

    def predict(self, pairs):
        """``+1`` where ``decision_function(pairs) >= threshold_``, ``-1`` elsewhere.

        Parameters
        ----------
        pairs : array-like of shape (m, 2, d) or (m, 2)

        Returns
        -------
        ndarray of shape (m,), int64
        """
        return np.where(self.decision_function(pairs) >= self.threshold_, 1, -1)

    def score(self, pairs, y, sample_weight=None):
        """ROC AUC of ``decision_function`` against ``y``: the probability that a random
        similar pair scores above a random dissimilar one (ties count half).

        Parameters
        ----------
        pairs : array-like of shape (m, 2, d) or (m, 2)
        y : array-like of shape (m,)
            ``+1`` / ``-1``, both present.
        sample_weight : array-like of shape (m,), default=None

        Returns
        -------
        float in [0, 1]
        """
        y = self._check_y(y, len(np.asarray(pairs)))
        if len(np.unique(y)) < 2:
            raise ValueError("score needs similar (+1) and dissimilar (-1) pairs in y (the "
                             "AUC of one class is undefined).")
        return float(roc_auc_score(y, self.decision_function(pairs),
                                   sample_weight=sample_weight))

    def set_threshold(self, threshold):
        """Set ``threshold_`` by hand.

        Parameters
        ----------
        threshold : float

        Returns
        -------
        self
        """
        if not isinstance(threshold, numbers.Real) or not np.isfinite(threshold):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}.")
        self.threshold_ = float(threshold)
        return self

    def calibrate_threshold(self, pairs, y, strategy="accuracy", min_rate=None, beta=1.0):
        """Set ``threshold_`` to the best one on labelled pairs (validation pairs, say).

        See :func:`calibrated_threshold` for the strategies: ``"accuracy"``, ``"f_beta"``,
        ``"max_tpr"`` (the largest true-positive rate with a true-negative rate of at
        least ``min_rate``) and ``"max_tnr"`` (the reverse), as in metric-learn.

        Parameters
        ----------
        pairs : array-like of shape (m, 2, d) or (m, 2)
        y : array-like of shape (m,)
            ``+1`` / ``-1``.
        strategy : {"accuracy", "f_beta", "max_tpr", "max_tnr"}, default="accuracy"
        min_rate : float in [0, 1], default=None
            Required by ``"max_tpr"`` and ``"max_tnr"``.
        beta : float > 0, default=1.0
            Weight of recall in ``"f_beta"``.

        Returns
        -------
        self
        """
        y = self._check_y(y, len(np.asarray(pairs)))
        self.threshold_ = calibrated_threshold(self.decision_function(pairs), y, strategy,
                                               min_rate, beta)
        return self

    # ------------------------------------------------------- metric, kernel
    def get_metric(self):
        """The learned distance as a function of two points, for scikit-learn's
        ``NearestNeighbors(metric=...)``, ``DBSCAN(metric=...)`` and the like.

        Returns
        -------
        callable
            ``metric(u, v) -> float``, ``||e(u) - e(v)||`` with ``e`` the learner's
            ``transform``; ``u``, ``v`` of shape (n_features,).
        """
        check_is_fitted(self, "threshold_")
        learner = self.estimator_

        def metric(u, v):
            E = learner.transform(np.vstack([np.ravel(u), np.ravel(v)]))
            return float(np.linalg.norm(E[0] - E[1]))

        return metric

    def kernel(self, X, Y=None):
        """The learned kernel between points: ``k(x, y) = e(x)^T e(y)``.

        For ``SVC(kernel="precomputed")``: ``fit(clf.kernel(X))``,
        ``predict(clf.kernel(X_new, X))``. For a Mahalanobis learner this is the linear
        kernel ``x^T M y``.

        Parameters
        ----------
        X : array-like of shape (n_x, n_features)
        Y : array-like of shape (n_y, n_features), default=None
            None: ``X``.

        Returns
        -------
        ndarray of shape (n_x, n_y)
        """
        check_is_fitted(self, "threshold_")
        EX = self._transform(X)
        EY = EX if Y is None else self._transform(Y)
        return EX @ EY.T

