"""
=========================
Fitting on a Dask cluster
=========================

With ``X`` a row-chunked :mod:`dask.array`, :meth:`NPKL.fit <psdlearn.NPKL.fit>` runs on
the current ``dask.distributed`` cluster: every worker holds blocks of rows of ``X``, of
the graph Laplacian and of the embedding, and no process ever holds all of them. The
fit converges to the same solution as on one machine: a distributed sweep is again a
Gauss-Seidel pass over all rows, in another order.

This example starts a small in-process cluster (two workers of one thread) and compares
the objective of each sweep with the single-machine fit. On a real cluster, create the
``Client`` with the scheduler's address instead (the ``dask`` extra installs what is
needed).
"""

import warnings

import dask.array as da
import matplotlib.pyplot as plt
from distributed import Client, LocalCluster
from sklearn.datasets import make_moons
from sklearn.metrics import rand_score

import psdlearn as pl

X, y = make_moons(n_samples=2000, noise=0.06, random_state=0)
C = pl.PairwiseConstraints.from_labels(y, n_must=50, n_cannot=50, random_state=0)
params = dict(loss="square", rank=4, tol=1e-3, certificate_tol=None, random_state=0)

# One machine first; its gamma="auto" is reused below (the automatic gamma of the square
# loss needs a computation on the whole graph that a distributed fit does not do).
local = pl.NPKL(**params).fit(X, C)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                           dashboard_address=None)
client = Client(cluster)

X_dask = da.from_array(X, chunks=(500, 2))          # 4 blocks of 500 rows
model = pl.NPKL(**params, gamma=local.gamma_).fit(X_dask, C)
E = model.embedding_.compute()                       # a dask array, in X's row chunks
print(type(model.embedding_).__name__, E.shape)
print("blocks:", model.partition_info_["block_sizes"],
      f"edge cut {model.partition_info_['edge_cut']:.3f}")

client.close()
cluster.close()

labels = pl.kernel_kmeans(E, n_clusters=2, random_state=0)
print(f"Rand index: Dask {rand_score(y, labels):.3f}, one machine "
      f"{rand_score(y, pl.kernel_kmeans(local.embedding_, 2, random_state=0)):.3f}")

# %%
# ``comm_history_`` records, per sweep, the wall time of the client split into the
# kernels (the slowest block of each phase) and the rest: halo transfers, reductions and
# Dask's scheduling. On a machine this small the scheduling dominates; on a cluster the
# kernels of large blocks do.

compute = [h["compute_s"] * 1e3 for h in model.comm_history_]
comm = [h["comm_s"] * 1e3 for h in model.comm_history_]
sweeps = range(1, len(compute) + 1)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
axes[0].plot(local.objective_history_, "o-", ms=3, label="one machine")
axes[0].plot(model.objective_history_, "x--", ms=5, label="Dask, 4 blocks")
axes[0].set_xlabel("sweep")
axes[0].set_ylabel("objective")
axes[0].set_yscale("log")
axes[0].legend()
axes[0].set_title("objective per sweep")
axes[1].bar(sweeps, compute, label="kernels")
axes[1].bar(sweeps, comm, bottom=compute, label="communication and scheduling")
axes[1].set_xlabel("sweep")
axes[1].set_ylabel("milliseconds")
axes[1].legend()
axes[1].set_title("time per distributed sweep")
plt.show()
