"""
=============================================
From a few pairs to clusters: NPKL vs k-means
=============================================

k-means cuts the plane into convex cells, so it cannot separate two interleaved moons or
two concentric circles. A handful of must-link and cannot-link pairs, together with the
neighbourhood graph of the points, is enough for :class:`~psdlearn.NPKL` to learn a kernel
in which the groups are far apart; k-means on its embedding (kernel k-means) then finds
them.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_circles, make_moons
from sklearn.metrics import rand_score

import psdlearn as pl

datasets = {
    "moons": make_moons(n_samples=400, noise=0.07, random_state=0),
    "circles": make_circles(n_samples=400, noise=0.05, factor=0.5, random_state=0),
}

fig, axes = plt.subplots(2, 2, figsize=(8, 7.5), layout="constrained")
for row, (name, (X, y)) in zip(axes, datasets.items(), strict=True):
    # 20 must-links and 20 cannot-links: 40 pairs among 79,800.
    C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=20, random_state=0)

    km = KMeans(n_clusters=2, n_init=10, random_state=0).fit_predict(X)
    E = pl.NPKL(random_state=0).fit_transform(X, C)
    npkl = pl.kernel_kmeans(E, n_clusters=2, random_state=0)

    panels = [(row[0], km, "k-means on X"), (row[1], npkl, "NPKL + kernel k-means")]
    for ax, labels, title in panels:
        ax.scatter(X[:, 0], X[:, 1], c=labels, cmap="coolwarm", s=10)
        for (i, j), sign in zip(C.pairs, C.signs, strict=True):
            ax.plot(X[[i, j], 0], X[[i, j], 1], "-" if sign > 0 else ":",
                    color="green" if sign > 0 else "black", lw=0.8, alpha=0.6)
        ax.set_title(f"{name}: {title}\nRand index {rand_score(y, labels):.2f}")
        ax.set_xticks([])
        ax.set_yticks([])

fig.suptitle("must-links: green lines, cannot-links: dotted black lines")
plt.show()

# %%
# The pairs cover only a few points. NPKL spreads what they say along the data's
# neighbourhood graph: the learned kernel is smooth on the graph (the term
# ``tr(K L)``) and pulls must-linked points together and cannot-linked points apart.
# The embedding has a few columns (``rank``):
print(np.shape(E))
