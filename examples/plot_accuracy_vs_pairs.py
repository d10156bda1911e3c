"""
============================================
How many pairs are enough? Accuracy vs pairs
============================================

The more pairs, the closer the clustering follows the classes. This example draws an
increasing number of must-link and cannot-link pairs from the labels of the wine data
(178 wines, 13 features, 3 cultivars), learns a kernel with :class:`~psdlearn.NPKL`,
clusters it and reports the Rand index, averaged over three draws of the pairs. Plain
k-means on the features is the baseline.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import rand_score

import psdlearn as pl

X, y = pl.datasets.load("wine")
n_pairs = [5, 10, 25, 100]
seeds = [0, 1, 2]

scores = np.empty((len(n_pairs), len(seeds)))
for a, m in enumerate(n_pairs):
    for b, seed in enumerate(seeds):
        # m must-links and m cannot-links drawn at random from the labels.
        C = pl.PairwiseConstraints.from_labels(y, n_must=m, n_cannot=m, random_state=seed)
        E = pl.NPKL(random_state=seed).fit_transform(X, C)
        labels = pl.kernel_kmeans(E, n_clusters=3, random_state=seed)
        scores[a, b] = rand_score(y, labels)

kmeans = rand_score(y, KMeans(n_clusters=3, n_init=10, random_state=0).fit_predict(X))

# %%
# Each point is the mean over the draws; the band spans the lowest and highest draw.

fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
total = 2 * np.array(n_pairs)
ax.plot(total, scores.mean(axis=1), "o-", label="NPKL + kernel k-means")
ax.fill_between(total, scores.min(axis=1), scores.max(axis=1), alpha=0.2)
ax.axhline(kmeans, color="gray", ls="--", label="k-means on X")
ax.set_xscale("log")
ax.set_xlabel("number of pairs (half must-link, half cannot-link)")
ax.set_ylabel("Rand index")
ax.set_title(f"wine, n = {len(y)}")
ax.legend()
plt.show()

for m, row in zip(total, scores, strict=True):
    print(f"{m:4d} pairs: Rand index {row.mean():.3f}")
