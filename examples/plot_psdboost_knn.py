"""
=========================================
A learned metric for k-nearest neighbours
=========================================

Euclidean distance weighs every feature equally, so noisy features drown the ones that
matter. :class:`~psdlearn.PSDBoost` learns a Mahalanobis metric
``d(x, z)^2 = (x - z)^T M (x - z)`` from the labels (through triplets "``x_i`` is closer
to a same-class neighbour than to another class"), with ``M`` positive semidefinite and
of trace one. Its ``transform`` is the linear map with ``M = A^T A``, so a k-nearest
neighbour classifier after it uses the learned metric. Each point keeps its three
nearest same-class neighbours as targets (one above 1000 labelled points, where the fit
would otherwise take several times longer), and the other-class points that come closer
than the targets under the current metric (the impostors) are re-selected round after
round (``impostors="nearest"`` pairs each target with its Euclidean nearest point of
another class once, as Shen et al. 2008 do). Beside it, scikit-learn's
:class:`~sklearn.neighbors.NeighborhoodComponentsAnalysis`, which learns a linear map for
nearest neighbours by gradient ascent on a soft leave-one-out accuracy.

The data: three classes separated in two features, plus eight features of pure noise.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier, NeighborhoodComponentsAnalysis

import psdlearn as pl

rng = np.random.default_rng(0)
n = 600
y = rng.integers(0, 3, n)
centers = np.array([[0.0, 0.0], [1.5, 0.0], [0.75, 1.3]])
X = np.hstack([centers[y] + 0.35 * rng.standard_normal((n, 2)),
               rng.standard_normal((n, 8))])
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.5, stratify=y, random_state=0)

euclidean = KNeighborsClassifier(5).fit(X_train, y_train).score(X_test, y_test)

metric = pl.PSDBoost(random_state=0).fit(X_train, y_train)
knn = KNeighborsClassifier(5).fit(metric.transform(X_train), y_train)
learned = knn.score(metric.transform(X_test), y_test)
nca = NeighborhoodComponentsAnalysis(random_state=0).fit(X_train, y_train)
knn_nca = KNeighborsClassifier(5).fit(nca.transform(X_train), y_train)
nca_score = knn_nca.score(nca.transform(X_test), y_test)
print(f"5-NN test accuracy: Euclidean {euclidean:.3f}, PSDBoost metric {learned:.3f}, "
      f"NCA {nca_score:.3f} ({metric.n_rounds_} rounds of impostor re-selection)")

# %%
# The learned matrix ``M`` puts almost all its weight on the two informative features.
# Below: the test points in the first two principal directions of the raw features and
# of the learned map.

M = metric.get_mahalanobis_matrix()
fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), layout="constrained")
for ax, Z, title in [
    (axes[0], PCA(2).fit(X_train).transform(X_test),
     f"Euclidean (PCA)\n5-NN accuracy {euclidean:.2f}"),
    (axes[1], PCA(2).fit(metric.transform(X_train)).transform(metric.transform(X_test)),
     f"PSDBoost metric\n5-NN accuracy {learned:.2f}"),
]:
    ax.scatter(Z[:, 0], Z[:, 1], c=y_test, cmap="viridis", s=10)
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
axes[2].bar(np.arange(M.shape[0]), np.diag(M), color=["C1"] * 2 + ["C0"] * 8)
axes[2].set_xlabel("feature (0, 1 informative; 2-9 noise)")
axes[2].set_ylabel("diagonal of M")
axes[2].set_title("learned feature weights")
plt.show()
