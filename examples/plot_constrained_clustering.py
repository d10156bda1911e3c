"""
Clustering with a few must-link and cannot-link pairs
=====================================================

Two interleaved half-moons are not what k-means calls clusters: on the raw
coordinates it cuts them with a straight line. Given a few dozen pairs that say
"these two belong together" (must-link) or "these two do not" (cannot-link),
:class:`psdlearn.ConstrainedClustering` learns a kernel that respects them (NPKL
by default: smooth along the data's neighbourhood graph) and clusters it by
kernel k-means. ``predict`` places new points in the learned clusters, which
is how the coloured regions below are drawn.
"""

# %%
# The data and the side information
# ---------------------------------
# 300 points; 25 must-link and 25 cannot-link pairs drawn at random from the
# true labels (which are used for nothing else).
import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_moons
from sklearn.metrics import rand_score

import psdlearn as pl

X, y = make_moons(n_samples=300, noise=0.07, random_state=0)
C = pl.PairwiseConstraints.from_labels(y, n_must=25, n_cannot=25, random_state=0)

# %%
# Fit, and compare with k-means on the coordinates
# ------------------------------------------------
model = pl.ConstrainedClustering(n_clusters=2, random_state=0).fit(X, C)
kmeans = KMeans(n_clusters=2, n_init=10, random_state=0).fit(X)
print(f"Rand index, k-means on X:           {rand_score(y, kmeans.labels_):.3f}")
print(f"Rand index, ConstrainedClustering:  {rand_score(y, model.labels_):.3f}")
print(f"predict(X) == labels_: {bool(np.all(model.predict(X) == model.labels_))}")

# %%
# Plot: the pairs, k-means, and the learned clusters with their regions
# ---------------------------------------------------------------------
xx, yy = np.meshgrid(np.linspace(-1.5, 2.5, 120), np.linspace(-1.0, 1.5, 80))
grid = np.column_stack([xx.ravel(), yy.ravel()])
regions = model.predict(grid).reshape(xx.shape)

fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharex=True, sharey=True)
ax = axes[0]
for (i, j), s in zip(C.pairs, C.signs, strict=True):
    ax.plot(X[[i, j], 0], X[[i, j], 1], "-" if s > 0 else ":",
            color="tab:green" if s > 0 else "tab:red", lw=1)
ax.scatter(X[:, 0], X[:, 1], c="0.6", s=8)
ax.set_title("side information: must-link (green), cannot-link (red)")
axes[1].scatter(X[:, 0], X[:, 1], c=kmeans.labels_, cmap="coolwarm", s=8)
axes[1].set_title(f"k-means on X (Rand {rand_score(y, kmeans.labels_):.2f})")
axes[2].contourf(xx, yy, regions, alpha=0.15, cmap="coolwarm")
axes[2].scatter(X[:, 0], X[:, 1], c=model.labels_, cmap="coolwarm", s=8)
axes[2].set_title(f"ConstrainedClustering (Rand {rand_score(y, model.labels_):.2f})")
fig.tight_layout()
plt.show()
