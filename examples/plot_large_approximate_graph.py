"""
=========================================================
100,000 points: approximate neighbours and a progress bar
=========================================================

NPKL's cost grows with the number of points times the rank: the neighbourhood graph is
sparse and the embedding has ``rank`` columns. Here 10^5 points on two moons with 1,000
must-links and 1,000 cannot-links. ``knn_method="approximate"`` builds the graph with
HNSW (faiss, the ``ann`` extra), which the default ``"auto"`` also picks above 20,000
points when faiss is installed. The ``square`` loss has a closed-form row update, the
fastest of the losses.

``verbose=1`` draws progress bars on stderr: one for the neighbour search, one for the
sweeps. Below they are captured in a buffer so that this page can show their last state;
in a terminal or a notebook they update in place. A Ctrl-C during the fit stops it
within a sweep and keeps the last complete iterate.
"""

import contextlib
import io
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import rand_score

import psdlearn as pl

X, y = make_moons(n_samples=100_000, noise=0.06, random_state=0)
C = pl.PairwiseConstraints.from_labels(y, n_must=1000, n_cannot=1000, random_state=0)

model = pl.NPKL(
    loss="square", rank=4, knn_method="approximate", max_iter=120,
    gamma=0.6,  # "auto" solves an eigenproblem on the whole graph, as long as the search here
    certificate_tol=None,  # skip the duality certificate: it costs more than the fit here
    random_state=0, verbose=1,
)
log = io.StringIO()
start = time.perf_counter()
with contextlib.redirect_stderr(log), warnings.catch_warnings():
    # 120 sweeps is a budget, not convergence to tol: say so once, below.
    warnings.simplefilter("ignore", ConvergenceWarning)
    model.fit(X, C)
elapsed = time.perf_counter() - start

# The last state of each progress bar (tqdm redraws a line with "\r").
for line in log.getvalue().split("\n"):
    if line.strip():
        print(line.split("\r")[-1].strip())
print(f"fit: {elapsed:.1f} s, of which the graph {model.graph_time_:.1f} s; "
      f"{model.n_iter_} sweeps, converged: {model.converged_}")
print("graph:", model.graph_info_)

# %%
# Clustering the embedding recovers the moons; k-means on the coordinates cannot.

labels = pl.kernel_kmeans(model.embedding_, n_clusters=2, n_init=3, random_state=0)
km = KMeans(n_clusters=2, n_init=3, random_state=0).fit_predict(X)

show = np.random.default_rng(0).choice(len(X), 5000, replace=False)
fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
for ax, lab, title in [(axes[0], km, "k-means on X"), (axes[1], labels, "NPKL + kernel k-means")]:
    ax.scatter(X[show, 0], X[show, 1], c=lab[show], cmap="coolwarm", s=3)
    ax.set_title(f"{title}: Rand index {rand_score(y, lab):.3f}")
    ax.set_xticks([])
    ax.set_yticks([])
fig.suptitle("100,000 points (5,000 shown), 2,000 pairs")
plt.show()
