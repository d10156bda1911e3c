r"""The cross-validated choice of the linear SVM's ``C`` done by LIBLINEAR's ``-C`` option.

Lan et al. (2017) take the SVM's ``C`` from "the heuristic implemented in LIBLINEAR". From
version 2.1 LIBLINEAR's ``train -C`` searches ``C`` for the L2-regularized squared-hinge SVM
(``-s 2``) as follows (``find_parameters`` / ``calc_start_C`` in ``linear.cpp``):

- start at ``C_0 = 2^floor(log2(1 / (2 l max_i ||x_i||^2)))`` over the ``l`` training points
  (a ``C`` so small that every ``w`` it gives is nearly zero), capped at ``C_max = 1024``;
- double ``C`` up to ``C_max``; at each ``C`` run ``v``-fold cross-validation (default
  ``v = 5``) warm-started from the previous ``C``, and keep the ``C`` of the highest
  cross-validated accuracy, the smallest on ties;
- stop early when no fold's ``w`` has moved (``||w_C - w_{C/2}|| <= 1e-15``) for five
  consecutive values of ``C``.

Here the training sets are small (the 100 labelled points), so each fold's problem is
solved exactly in its dual, on the Gram matrix of the features. With ``D = diag(y)``,
``y in {-1, +1}``, and the Gram matrix ``G`` of the features augmented by a constant 1 (the
regularized intercept of :class:`sklearn.svm.LinearSVC`, ``intercept_scaling = 1``), the
problem ``min_w 1/2 ||w||^2 + C sum_i max(0, 1 - y_i w^T x_i)^2`` has the dual

.. math::

    \min_{\alpha \ge 0} \; \tfrac12 \alpha^T H \alpha - 1^T \alpha, \qquad
    H = D G D + \frac{I}{2C}, \qquad w = \sum_i \alpha_i y_i x_i,

and since ``H = R^T R`` (Cholesky) is positive definite, ``1/2 a^T H a - 1^T a = 1/2 ||R a -
R^{-T} 1||^2 - const``: the dual is a nonnegative least-squares problem, solved exactly
(active set, :func:`scipy.optimize.nnls`). The decision value at a point ``x`` is
``sum_i alpha_i y_i G(x, x_i)``. More than two classes are one-vs-rest, as LIBLINEAR
and :class:`~sklearn.svm.LinearSVC` (prediction: the largest decision value).

Differences from LIBLINEAR, kept because the tables' SVM is :class:`~sklearn.svm.LinearSVC`:
the intercept (LIBLINEAR's default has none; the features here carry the constant 1, so it
also enters ``max ||x_i||^2``), and stratified folds (LIBLINEAR's folds are a plain random
partition; with 10 labelled points per class a plain partition can leave a class out of a
training fold). Exact solves replace the warm starts, which change only the speed.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, solve_triangular
from scipy.optimize import nnls
from sklearn.model_selection import StratifiedKFold

__all__ = ["MAX_C", "liblinear_c", "liblinear_start_c", "squared_hinge_dual"]

#: LIBLINEAR's upper end of the search (``max_C`` in ``find_parameters``).
MAX_C = 1024.0
#: Consecutive unchanged ``w`` that end the search early (LIBLINEAR).
N_UNCHANGED = 5


def liblinear_start_c(G):
    """``C_0 = 2^floor(log2(1 / (2 l max_i G_ii)))``, capped at :data:`MAX_C`.

    Parameters
    ----------
    G : ndarray of shape (l, l)
        Gram matrix of the training points (with the intercept's constant feature).

    Returns
    -------
    float
    """
    n = G.shape[0]
    return min(MAX_C, float(2.0 ** np.floor(np.log2(1.0 / (2.0 * n * np.max(np.diag(G)))))))


def squared_hinge_dual(G, y, C):
    """Exact dual solution of the binary L2-regularized squared-hinge SVM.

    Parameters
    ----------
    G : ndarray of shape (l, l)
        Gram matrix of the training features.
    y : ndarray of shape (l,)
        Labels in {-1, +1}.
    C : float

    Returns
    -------
    beta : ndarray of shape (l,)
        ``alpha * y``: the decision value at ``x`` is ``sum_i beta_i G(x, x_i)``.
    """
    y = np.asarray(y, dtype=np.float64)
    H = np.outer(y, y) * G
    H[np.diag_indices_from(H)] += 1.0 / (2.0 * C)
    R, _ = cho_factor(H, lower=False, check_finite=False)
    R = np.triu(R)
    alpha, _ = nnls(R, solve_triangular(R, np.ones(len(y)), trans="T", check_finite=False),
                    maxiter=50 * len(y))
    return alpha * y


def _fit_predict(G_tr, G_te, codes, n_classes, C):
    """One-vs-rest fit on a fold: predicted codes of the test rows and the ``beta`` columns."""
    if n_classes == 2:
        beta = squared_hinge_dual(G_tr, np.where(codes == 1, 1.0, -1.0), C)[:, None]
        return (G_te @ beta[:, 0] > 0).astype(int), beta
    beta = np.column_stack([squared_hinge_dual(G_tr, np.where(codes == k, 1.0, -1.0), C)
                            for k in range(n_classes)])
    return np.argmax(G_te @ beta, axis=1), beta


def liblinear_c(Q, y, *, n_folds=5, random_state=None, return_path=False):
    """``C`` of the squared-hinge linear SVM by LIBLINEAR's ``-C`` search (module docstring).

    Parameters
    ----------
    Q : array-like of shape (l, d)
        Features of the training points (no intercept column: it is added here).
    y : array-like of shape (l,)
        Class labels.
    n_folds : int, default=5
        Folds, reduced to the smallest class size when that is smaller.
    random_state : int or None
        Seeds the stratified shuffled folds.
    return_path : bool, default=False
        Also return the searched ``C`` values and their cross-validated accuracies.

    Returns
    -------
    C : float
        The smallest ``C`` of the highest cross-validated accuracy.
    path : list of (float, float)
        Only with ``return_path``: ``(C, accuracy)`` in search order.
    """
    Q = np.asarray(Q, dtype=np.float64)
    classes, codes = np.unique(y, return_inverse=True)
    G = Q @ Q.T + 1.0
    folds = min(n_folds, int(np.bincount(codes).min()))
    splits = list(StratifiedKFold(folds, shuffle=True, random_state=random_state)
                  .split(Q, codes))
    C, best_C, best_acc = float(liblinear_start_c(G)), None, -1.0
    prev, unchanged, path = [None] * folds, 0, []
    while C <= MAX_C:
        correct = 0
        for f, (tr, te) in enumerate(splits):
            G_tr = G[np.ix_(tr, tr)]
            pred, beta = _fit_predict(G_tr, G[np.ix_(te, tr)], codes[tr], len(classes), C)
            correct += int(np.sum(pred == codes[te]))
            if prev[f] is not None and unchanged >= 0:
                d = beta - prev[f]
                if np.sqrt(max(np.einsum("ik,ij,jk->", d, G_tr, d), 0.0)) > 1e-15:
                    unchanged = -1
            prev[f] = beta
        acc = correct / len(codes)
        path.append((C, acc))
        if acc > best_acc:
            best_C, best_acc = C, acc
        unchanged += 1
        if unchanged == N_UNCHANGED:
            break
        C *= 2.0
    return (best_C, path) if return_path else best_C
