"""Peer of ``bench_active.py``: active-semi-supervised-clustering's own Explore &
Consolidate feeding its PCKMeans, run in the peers' interpreter (see ``_peers.py`` on how
that environment is built; this module imports nothing from psdlearn).

``python _active_peer.py DATA.npz SEEDS CHECKPOINTS...`` reads ``X`` and ``y`` from the
file and prints JSON ``{seed: {checkpoint: rand index, null (PCKMeans failed) or the error of
ExploreConsolidate}}``. For each seed and
budget ``q`` the package's ``ExploreConsolidate(n_clusters).fit(X, oracle)`` asks its
``ExampleOracle(y, max_queries_cnt=q)`` (the package's protocol, with the queries
stopping at the budget), and ``PCKMeans(n_clusters).fit(X, ml=..., cl=...)`` clusters with
the constraints it returns (the package derives them from its neighbourhoods). NumPy's
global random state is seeded with the seed before each run; an empty-cluster failure of
PCKMeans is retried up to three times, as a user would.
"""

import json
import sys

import numpy as np

_DEFAULT_ERR = np.geterr()
from active_semi_clustering.active.pairwise_constraints import (  # noqa: E402
    ExampleOracle,
    ExploreConsolidate,
)
from active_semi_clustering.exceptions import EmptyClustersException  # noqa: E402
from active_semi_clustering.semi_supervised.pairwise_constraints import (  # noqa: E402
    PCKMeans,
)
from sklearn.metrics import rand_score  # noqa: E402

np.seterr(**_DEFAULT_ERR)


def run(X, y, seed, budget):
    k = len(np.unique(y))
    np.random.seed(seed)  # noqa: NPY002 (the package draws from the global state)
    try:
        active = ExploreConsolidate(n_clusters=k).fit(X, oracle=ExampleOracle(y, budget))
    except ValueError as exc:
        # the package's consolidation draws from an empty set once every point is placed
        return f"ExploreConsolidate failed: {exc}"
    ml, cl = active.pairwise_constraints_
    for _ in range(3):
        try:
            model = PCKMeans(n_clusters=k).fit(X, ml=ml, cl=cl)
        except EmptyClustersException:
            continue
        return float(rand_score(y, model.labels_))
    return None


def main():
    data = np.load(sys.argv[1])
    X, y = data["X"], data["y"]
    seeds = int(sys.argv[2])
    checkpoints = [int(c) for c in sys.argv[3:]]
    out = {s: {c: run(X, y, s, c) for c in checkpoints} for s in range(seeds)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
