"""
Deciding whether two new items are of the same kind
====================================================

Pair verification: given two points, say whether they belong to the same class.
:class:`psdlearn.PairsClassifier` follows metric-learn's conventions: it is
fitted on labelled pairs (``+1`` same, ``-1`` different), learns a kernel
from them (NPKL by default), and scores a new pair by the cosine of the two
points in the learned embedding. Here the pairs to decide are between points
that no training pair contains, and the learned similarity is compared with
the Euclidean distance on the inputs.
"""

# %%
# Training, validation and test pairs on disjoint points
# ------------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.model_selection import train_test_split

import psdlearn as pl

X, y = pl.datasets.load("wine")
i_fit, i_rest = train_test_split(np.arange(len(y)), test_size=0.5, stratify=y,
                                 random_state=0)
i_val, i_test = train_test_split(i_rest, test_size=0.5, stratify=y[i_rest],
                                 random_state=0)


def pairs_among(idx, n, seed):
    """``n`` similar and ``n`` dissimilar pairs of the points ``idx``, as (m, 2, d)."""
    C = pl.PairwiseConstraints.from_labels(y[idx], n_must=n, n_cannot=n,
                                           random_state=seed)
    return X[idx][C.pairs], C.signs


P_fit, s_fit = pairs_among(i_fit, 60, 0)
P_val, s_val = pairs_among(i_val, 40, 1)
P_test, s_test = pairs_among(i_test, 40, 2)

# %%
# Fit, then calibrate the threshold on the validation pairs
# ---------------------------------------------------------
# ``fit`` sets the threshold for accuracy on the training pairs, whose points
# the kernel has seen; pairs of new points are scored by the out-of-sample
# embedding, so the threshold is recalibrated for accuracy on held-out pairs.
# (``strategy="max_tpr"`` / ``"max_tnr"`` with ``min_rate`` fix one error rate
# instead, ``"f_beta"`` weighs recall against precision.)
clf = pl.PairsClassifier().fit(P_fit, s_fit)
fit_threshold = clf.threshold_
clf.calibrate_threshold(P_val, s_val, strategy="accuracy")
pred = clf.predict(P_test)
tpr = np.mean(pred[s_test > 0] > 0)
tnr = np.mean(pred[s_test < 0] < 0)
euclid = -np.linalg.norm(P_test[:, 0] - P_test[:, 1], axis=1)
print(f"ROC AUC, learned kernel:     {clf.score(P_test, s_test):.3f}")
print(f"ROC AUC, Euclidean distance: {roc_auc_score(s_test, euclid):.3f}")
print(f"threshold: {fit_threshold:.3f} from fit, {clf.threshold_:.3f} calibrated")
print(f"test TPR {tpr:.2f}, TNR {tnr:.2f} at the calibrated threshold")

# %%
# ROC curves on the test pairs
# ----------------------------
fig, ax = plt.subplots(figsize=(5, 5))
for name, score in (("learned kernel (cosine)", clf.decision_function(P_test)),
                    ("Euclidean distance on X", euclid)):
    fpr, tp, _ = roc_curve(s_test, score)
    ax.plot(fpr, tp, label=f"{name}, AUC {roc_auc_score(s_test, score):.2f}")
ax.plot([1 - tnr], [tpr], "ko", label="threshold calibrated on validation pairs")
ax.plot([0, 1], [0, 1], ":", color="0.6")
ax.set_xlabel("false-positive rate (different pairs accepted)")
ax.set_ylabel("true-positive rate (same pairs accepted)")
ax.set_title("wine: pairs of unseen points")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
plt.show()
