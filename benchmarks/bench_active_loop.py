"""The query loop at 10^5 points: ConstrainedClustering updated by partial_fit or refitted.

Run: ``python benchmarks/bench_active_loop.py [--n 100000] [--budget 300] [--batch 20]
[--strategy uncertainty] [--seeds 0] [--name active_loop]`` writes
``results/<name>.{md,json}``.

The user of issue 37: many unlabelled points and a few hundred answers. Problem:
``make_two_gaussians(n, n_features=10, random_state=seed)``, a clean
:class:`psdlearn.active.LabelOracle` on the true classes, ``active_learning(
ConstrainedClustering(2, random_state=seed), X, oracle, strategy=..., budget=300,
batch_size=20)``. Two variants of the same loop, one after the other in this process:

- ``partial_fit``: the estimator as shipped; each round updates the clustering by
  ``ConstrainedClustering.partial_fit`` (the learner keeps its graph and ``gamma_``);
- ``refit``: the same class with ``partial_fit`` hidden, so the loop refits on all the
  answers every round (the behaviour before ``partial_fit``).

Columns: the loop's wall and CPU seconds, the first round's fit (the graph is built there
in both), the median fit and select seconds of the later rounds, the rounds, and the
Rand index of the final ``labels_`` against the true classes. Numba compilation is done
beforehand on a small problem. One BLAS / numba thread (set before the imports).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from _common import load_note, write_results  # noqa: E402
from sklearn.metrics import rand_score  # noqa: E402

import psdlearn as pl  # noqa: E402
from psdlearn.active import LabelOracle, active_learning  # noqa: E402

COLUMNS = ["n", "seed", "variant", "strategy", "rounds", "loop_s", "loop_cpu_s", "first_fit_s",
           "later_fit_s", "later_select_s", "rand"]


class RefitEachRound(pl.ConstrainedClustering):
    """ConstrainedClustering without ``partial_fit``: the loop refits every round."""

    @property
    def partial_fit(self):
        raise AttributeError("partial_fit is hidden: refit every round")


def _loop(cls, X, y, seed, strategy, budget, batch):
    oracle = LabelOracle(y, random_state=seed)
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = active_learning(cls(2, random_state=seed), X, oracle, strategy=strategy,
                              budget=budget, batch_size=batch, random_state=seed)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    later = res.history[1:]
    return {"rounds": len(res.history), "loop_s": wall, "loop_cpu_s": cpu,
            "first_fit_s": res.history[0]["fit_time"],
            "later_fit_s": statistics.median(h["fit_time"] for h in later),
            "later_select_s": statistics.median(h["select_time"] for h in later),
            "rand": rand_score(y, res.estimator.labels_)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--strategy", default="uncertainty")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--name", default="active_loop", help="results file name")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    Xw, yw = pl.datasets.make_two_gaussians(3000, n_features=10, random_state=0)
    for cls in (pl.ConstrainedClustering, RefitEachRound):  # compile the kernels
        _loop(cls, Xw, yw, 0, args.strategy, 60, 20)
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        X, y = pl.datasets.make_two_gaussians(args.n, n_features=10, random_state=seed)
        for variant, cls in (("partial_fit", pl.ConstrainedClustering),
                             ("refit", RefitEachRound)):
            row = {"n": args.n, "seed": seed, "variant": variant, "strategy": args.strategy}
            row.update(_loop(cls, X, y, seed, args.strategy, args.budget, args.batch))
            rows.append(row)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()},
                  flush=True)
    notes = [f"Loop: budget {args.budget} questions in rounds of {args.batch}, strategy "
             f"'{args.strategy}', clean oracle; ConstrainedClustering(2) with its default "
             "learner (NPKL(certificate_tol=None, tol=1e-3)).",
             "first_fit_s: the first round (a fit in both variants: the kNN graph and "
             "gamma_0 are computed there); later_fit_s / later_select_s: medians over the "
             "other rounds.",
             "One BLAS / numba thread per process; numba compiled before timing.",
             load_note(load)]
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
