"""The race of the candidate ``lambda`` of ``GeneralizedNystroem(lambda_selection="cv")``.

Each candidate is scored by the held-out accuracy of a linear SVM on the features of ``S``
fit without the test fold, averaged over the splits of ``CV_REPEATS`` draws of a stratified
3-fold split (drawn by the estimator). A split's score is a function of the split and the
candidate only (:func:`split_score`: the fit starts from the closed form, not from another
candidate's solution), so that dropping candidates does not change the scores of the
others. From :data:`CV_RACE_MIN_LABELLED` labelled points the candidates race: all are
scored on the first draw, only the best :data:`CV_RACE_KEEP` on the others. The chosen
``lambda`` is then the exhaustive search's choice among the candidates kept, hence the
exhaustive choice whenever that one is among the best ``CV_RACE_KEEP`` of the first draw;
nothing is guaranteed for a winner ranked lower there.
"""

from __future__ import annotations

import numpy as np

from psdlearn._linalg import psd_factor
from psdlearn.nystroem.dictionary import solve_dictionary

__all__ = ["race", "split_score"]

#: Relative-decrease tolerance of the fold fits of ``lambda_selection="cv"`` (the final fit
#: keeps ``tol``): a fold's ``S`` only has to rank the candidates by held-out accuracy, and
#: the digits of its objective beyond the second do not move the linear SVM's predictions.
CV_TOL = 1e-2
#: Candidates scored on every draw of the folds when there are at least
#: :data:`CV_RACE_MIN_LABELLED` labelled points: the others stop after the first draw.
#: Over 5 seeds of the 10 sets of ``bench_defaults_nystroem.py`` with 57 to 231 labelled
#: points, the exhaustive search's winner was among the best 3 of the first draw in 45 of
#: 50 fits (the other 5 chose a candidate within 0.7 points of its score); 51 of the 99
#: split fits of 11 candidates.
CV_RACE_KEEP = 3
#: Fewer labelled points than this: every candidate on every draw. The search costs little
#: there, and the first draw's test folds (5 points on iris) rank the candidates too coarsely
#: to drop any (its winner was outside the best 3 on 4 of 10 seeds of iris and wine).
CV_RACE_MIN_LABELLED = 100
#: Armijo start of the fold fits: twice the largest curvature of the scaled problem,
#: ``(lam + d_i d_j) / ((sqrt(lam) + d_i)(sqrt(lam) + d_j)) <= 1``, a step that is always
#: accepted (starting from half the previous candidate's estimate rejected about one trial
#: step, one eigendecomposition, per solve; from ``2 lam``, 3 to 5).
CV_STEP = 2.0


def race(lambdas, candidates, folds, E_l, codes, prior, *, max_iter, tol):
    """Score the candidates on the splits, racing from :data:`CV_RACE_MIN_LABELLED`
    labelled points.

    Parameters
    ----------
    lambdas : ndarray of shape (k,)
    candidates : list of int
        Indices into ``lambdas`` to score (the first draw visits them in this order).
    folds : list of (train, test, QuadraticData)
        The splits, draw by draw (3 per draw); the data term is the training points'.
    E_l : ndarray of shape (l, m)
        Kernel rows of the labelled points.
    codes : ndarray of shape (l,)
        Their class codes.
    prior : ndarray of shape (m, m)
    max_iter : int
    tol : float
        The estimator's; the fold fits stop at ``max(tol, CV_TOL)``.

    Returns
    -------
    scores : ndarray of shape (k,)
        Mean held-out accuracy over the splits of each candidate kept, NaN for the others
        (and for candidates whose first draw a Ctrl-C cut short).
    best : int
        Index of the best score, the larger ``lambda`` on a tie.
    interrupted : bool
        Whether a Ctrl-C ended the scoring; then the means are over the splits done.

    Raises
    ------
    KeyboardInterrupt
        A Ctrl-C before any candidate's first draw was scored.
    """
    accuracy = np.full((len(lambdas), len(folds)), np.nan)
    rotated, kept, interrupted = {}, list(candidates), False
    try:
        for i in candidates:  # the first draw: every candidate
            for f in range(3):
                accuracy[i, f] = split_score(prior, lambdas[i], folds[f], E_l, codes,
                                             rotated, f, max_iter=max_iter, tol=tol)
        if len(codes) >= CV_RACE_MIN_LABELLED:
            first = accuracy[:, :3].mean(axis=1)
            kept = sorted(candidates, key=lambda i: (first[i], lambdas[i]),
                          reverse=True)[:CV_RACE_KEEP]
        for i in kept:
            for f in range(3, len(folds)):
                accuracy[i, f] = split_score(prior, lambdas[i], folds[f], E_l, codes,
                                             rotated, f, max_iter=max_iter, tol=tol)
    except KeyboardInterrupt:
        interrupted = True
    done = np.isfinite(accuracy)
    # a candidate counts once its first draw is scored
    scored = [i for i in kept if done[i, :3].all()]
    if not scored:
        raise KeyboardInterrupt
    scores = np.full(len(lambdas), np.nan)
    for i in scored:
        scores[i] = float(accuracy[i, done[i]].mean())
    # a tie goes to the larger lambda, the solution closer to the prior
    best = max(scored, key=lambda i: (scores[i], lambdas[i]))
    return scores, best, interrupted


def split_score(prior, lam, fold, E_l, codes, rotated, f, *, max_iter, tol):
    """Held-out accuracy of a ``LinearSVC(C=1)`` on the features of ``S`` fit on the
    fold's training points at ``lam``: a function of the split and ``lam`` only.

    The fit starts from the closed form (13) projected on the PSD cone (returned as the
    optimum where it is PSD), its Armijo search at :data:`CV_STEP`, so that no trial step
    is rejected, its projections in single precision; it stops at the relative decrease
    ``max(tol, CV_TOL)``. ``rotated`` caches the fold's kernel rows in the eigenbasis of
    its ``A`` (key ``f``, the split's index).
    """
    from sklearn import config_context
    from sklearn.svm import LinearSVC

    train, test, data = fold
    res = solve_dictionary(prior, lam, data, max_iter=max_iter, tol=max(tol, CV_TOL),
                           a_init=CV_STEP, eigenbasis=True, projection_dtype=np.float32,
                           closed_form_exit=True)
    if res.interrupted:
        raise KeyboardInterrupt
    # any factor of S gives the linear SVM the same kernel
    F = psd_factor(res.S) if res.factor is None else res.factor
    if f not in rotated:  # E_l U on the fold's points, once per fold
        U = data.eigensystem()[1]
        rotated[f] = (E_l[train] @ U, E_l[test] @ U)
    # the inputs are finite and the parameters fixed: scikit-learn's checks skipped; the
    # prediction is LinearSVC.predict's (the largest decision value, or its sign)
    with config_context(assume_finite=True, skip_parameter_validation=True):
        clf = LinearSVC(C=1.0).fit(rotated[f][0] @ F, codes[train])
    decision = rotated[f][1] @ F @ clf.coef_.T + clf.intercept_
    pred = ((decision[:, 0] > 0).astype(int) if decision.shape[1] == 1
            else decision.argmax(axis=1))
    return float(np.mean(clf.classes_[pred] == codes[test]))
