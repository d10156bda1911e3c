"""
=========================================
Choosing gamma from the constraints alone
=========================================

``gamma`` weighs the pairs against the smoothness of the kernel on the data graph. With
no labelled test set to tune it on, :class:`~psdlearn.NPKLCV` cross-validates on the
*pairs*: it keeps all the points, splits the constraints into folds
(:class:`~psdlearn.ConstraintKFold`), fits on the training pairs along a warm-started path
of gammas and scores each fit by how well the kernel separates the held-out must-links
from the held-out cannot-links (ROC AUC of the kernel's cosine). It then refits on all
pairs with the best gamma.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import rand_score

import psdlearn as pl

X, y = pl.datasets.load("sonar")
C = pl.PairwiseConstraints.from_labels(y, n_must=0.3, n_cannot=0.3, random_state=0)

cv = pl.NPKLCV(gammas=8, loss="square", tol=1e-4,
               cv=pl.ConstraintKFold(3, shuffle=True, random_state=0),
               random_state=0).fit(X, C)
print(f"chosen gamma: {cv.gamma_:.3g}")

# %%
# On sonar the held-out score rises with gamma and levels off, and the clustering quality
# follows it: the pairs carry information that the neighbourhood graph alone misses.
#
# For comparison only (a user would not have them), the Rand index of the clustering at
# each gamma, against the true labels. The held-out AUC is computed without them.

n_classes = len(np.unique(y))
rand = [
    rand_score(y, pl.kernel_kmeans(
        pl.NPKL(gamma=g, loss="square", tol=1e-4, random_state=0).fit_transform(X, C),
        n_clusters=n_classes, random_state=0))
    for g in cv.gammas_
]

fig, ax1 = plt.subplots(figsize=(7, 4.5), layout="constrained")
mean, std = cv.scores_.mean(axis=1), cv.scores_.std(axis=1)
ax1.errorbar(cv.gammas_, mean, yerr=std, fmt="o-", capsize=3, label="held-out pair AUC (CV)")
ax1.axvline(cv.gamma_, color="C0", ls=":", label="chosen gamma")
ax1.set_xscale("log")
ax1.set_xlabel("gamma")
ax1.set_ylabel("ROC AUC on held-out pairs", color="C0")
ax2 = ax1.twinx()
ax2.plot(cv.gammas_, rand, "s--", color="C1", label="Rand index (true labels)")
ax2.set_ylabel("Rand index of kernel k-means", color="C1")
fig.legend(loc="outside lower center", ncols=3, fontsize="small")
ax1.set_title(f"sonar: {C.n_pairs} pairs, square loss, 3-fold constraint CV")
plt.show()
