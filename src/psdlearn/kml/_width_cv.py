"""Folds of the constraint cross-validation that chooses KernelMetricLearner's width.

The method learns ``beta`` from similar pairs alone (Yeung, Chang & Dai 2007), so the
cannot-links a user gives have no term in it. ``kernel_gamma="auto"`` uses them to choose
the kernel width instead: the samples are not split (the kernel is formed over all of
``X``), the side information is. Each fold learns ``beta`` from the training similar pairs
and scores the held-out pairs by the ROC AUC of the learned squared distance (similar
pairs should be nearer than dissimilar ones).

- Pairs: :class:`psdlearn.model_selection.ConstraintKFold`, stratified by sign.
- Partial labels: the labelled samples are split, stratified by class; the training
  similar set is every within-class pair of the training samples, the held-out pairs are
  the pairs of held-out samples (a random sample of them when there are many).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata
from sklearn.model_selection import StratifiedKFold
from sklearn.utils import check_random_state

from psdlearn.constraints import check_side_info
from psdlearn.kml._similar import SimilarSet

__all__ = ["CV_FACTORS", "CV_FOLDS", "constraint_folds", "held_out_auc"]

#: Factors of the label-free width tried, in the order of preference on equal scores
#: (the label-free width first, then outwards).
CV_FACTORS = (1.0, 0.5, 2.0, 0.25, 4.0)
#: Folds of the cross-validation.
CV_FOLDS = 3
#: Held-out pairs per fold drawn from partial labels (all of them below this).
MAX_HELD_OUT_PAIRS = 20_000


def constraint_folds(y, n_samples, random_state):
    """Folds of the width cross-validation, or None when ``y`` cannot supply them.

    Parameters
    ----------
    y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
        Side information of ``fit`` (already accepted by :func:`similar_set`).
    n_samples : int
    random_state : RandomState instance
        Shuffles the folds and samples held-out label pairs.

    Returns
    -------
    list of (SimilarSet, ndarray of shape (t, 2), ndarray of shape (t,), bool) or None
        Per fold: the training similar set, the held-out pairs and whether each is
        similar. None when there are fewer than ``CV_FOLDS`` must-links or cannot-links,
        or, for labels, fewer than two classes with ``CV_FOLDS`` labelled samples.
    """
    rng = check_random_state(random_state)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    side = check_side_info(y, n_samples, accept=("labels", "pairs"))
    if side.kind == "pairs":
        from psdlearn.model_selection import ConstraintKFold

        C = side.constraints
        if C.n_must < CV_FOLDS or C.n_cannot < CV_FOLDS:
            return None
        folds = []
        for train, test in ConstraintKFold(CV_FOLDS, shuffle=True,
                                           random_state=seed).split(C):
            must = C.pairs[train][C.signs[train] > 0]
            folds.append((SimilarSet(n_samples, pairs=must), C.pairs[test],
                          C.signs[test] > 0))
        return folds
    codes = side.codes
    sizes = np.bincount(codes[codes >= 0], minlength=1)
    # classes too small to appear in every fold stay in training
    split = np.flatnonzero((codes >= 0) & (sizes[np.maximum(codes, 0)] >= CV_FOLDS))
    if len(np.unique(codes[split])) < 2:
        return None
    folds = []
    for _, test in StratifiedKFold(CV_FOLDS, shuffle=True, random_state=seed).split(
            split, codes[split]):
        held = split[test]
        train_codes = codes.copy()
        train_codes[held] = -1
        pairs = _pairs_among(held, rng)
        folds.append((SimilarSet(n_samples, codes=train_codes), pairs,
                      codes[pairs[:, 0]] == codes[pairs[:, 1]]))
    return folds


def _pairs_among(points, rng):
    """Every pair of ``points``, or ``MAX_HELD_OUT_PAIRS`` distinct ones drawn at random."""
    t = len(points)
    if t * (t - 1) // 2 <= MAX_HELD_OUT_PAIRS:
        iu, ju = np.triu_indices(t, k=1)
    else:
        iu = rng.randint(t, size=MAX_HELD_OUT_PAIRS)
        ju = (iu + 1 + rng.randint(t - 1, size=MAX_HELD_OUT_PAIRS)) % t
    return np.column_stack([points[iu], points[ju]])


def held_out_auc(B, rows, beta, pairs, similar):
    """ROC AUC of minus the learned squared distance over held-out pairs.

    Parameters
    ----------
    B : ndarray of shape (len(rows), q)
        Unweighted features at the samples ``rows``: the learned embedding is ``B * beta``.
    rows : ndarray of shape (len(B),), int
        Sorted sample indices of the rows of ``B``.
    beta : ndarray of shape (q,)
    pairs : ndarray of shape (t, 2), int
        Held-out pairs, samples among ``rows``.
    similar : ndarray of shape (t,), bool

    Returns
    -------
    float
        NaN when the held-out pairs hold one kind only.
    """
    if similar.all() or not similar.any():
        return float("nan")
    local = np.searchsorted(rows, pairs)
    diff = (B[local[:, 0]] - B[local[:, 1]]) * beta
    # the Mann-Whitney form of the AUC, ties counted half (roc_auc_score's validation
    # would cost more than the rest of the cross-validation on small sets)
    ranks = rankdata(-np.einsum("ij,ij->i", diff, diff))
    n_pos = int(similar.sum())
    n_neg = len(similar) - n_pos
    return float((ranks[similar].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
