"""gamma="auto" (30 gamma_0) against gamma = 1: protocol sets, and few pairs among many points.

Run: ``python benchmarks/bench_gamma_auto.py [--quick] [--graph-cache DIR] [--max-n N]
[--skip-protocol | --skip-gaussians | --only-pcp] [--rerun-sets A,B --why TEXT]``. Writes
``benchmarks/results/npkl_gamma_auto.{md,json}`` (protocol sets),
``npkl_gamma_auto_large.{md,json}`` (Gaussians) and ``npkl_gamma_auto_pcp.{md,json}``
(``--only-pcp``), after every row.

- Protocol sets (Hu & Kwok 2015: 0.6n + 0.6n pairs, k = 5, 50 on adult), NPKL-BCD with the
  hinge loss, 3 constraint draws: ``gamma_0``, the ``gamma`` used, the fraction of the
  training constraints on the right side (``T_ij K_ij > 0``) and with margin
  (``T_ij K_ij >= 0.9``), the mean ``K_ii``, and the Rand index of kernel k-means (reported,
  never used to choose anything).
- 10-d two Gaussians N(+1, I) / N(-1, I), k = 10, n = 5e4 and 1e6 (the graph of
  ``bench_npkl_bcd.py``), 300 and 1000 pairs: the same columns; K = 0 shows as mean
  ``K_ii`` = 0.

- ``--only-pcp``: NPKL-ADMM with the pcp loss on the Hu & Kwok (2013) Table 2 protocol
  (the same pairs; at most 500 iterations, 100 on adult), 3 draws: gamma = 1 against
  ``gamma="auto"`` (``100 max_i L_ii``): the mean ``K_ii`` (target 1), the mean ``K_ij`` over
  the training must-links (target 1) and cannot-links (target 0), and the Rand index.

- ``--rerun-sets``: only the rows of those protocol sets, put in place of theirs in the
  protocol table (``--only-pcp``: the pcp table); the other rows and the notes are kept.

``gamma_0 = 1 / lambda_max(G, L)`` is the largest ``gamma`` at which ``K = 0`` is optimal
(:mod:`psdlearn.npkl.gamma`); its time is the LOBPCG solve (a dense one up to n = 400).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import RESULTS, load_note, write_results

import psdlearn as pl
from psdlearn.cluster import kernel_kmeans
from psdlearn.graph import knn_laplacian
from psdlearn.metrics import pairwise_accuracy
from psdlearn.npkl.gamma import critical_gamma
from reproductions.experiments.protocol import ADULT_SETS, SMALL_SETS, load_set_with_graph

COLUMNS = ["data", "n", "m", "gamma", "gamma_0", "gamma used", "gamma_0 s", "fit s",
           "sweeps", "mean K_ii", "right side %", "margin >= 0.9 %", "rand %", "draws"]


def one_fit(L, y, C, gamma, seed, n_init=20):
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pl.NPKL(graph="precomputed", gamma=gamma, random_state=seed,
                        max_iter=800).fit(L, C)
    cpu = time.process_time() - c0
    E = model.embedding_
    margins = C.signs * np.einsum("ij,ij->i", E[C.pairs[:, 0]], E[C.pairs[:, 1]])
    labels = kernel_kmeans(E, len(np.unique(y)), n_init=n_init, random_state=seed)
    return {"gamma_used": model.gamma_, "fit_s": cpu, "sweeps": model.n_iter_,
            "kii": float(np.mean(np.einsum("ij,ij->i", E, E))),
            "right": float(np.mean(margins > 0)), "margin": float(np.mean(margins >= 0.9)),
            "rand": pairwise_accuracy(y, labels)}


def rows_for(name, L, y, draws, n_pairs=None, n_init=20):
    out = []
    recs = {g: [] for g in (1.0, "auto")}
    g0s, g0_time = [], []
    for seed in range(draws):
        if n_pairs is None:
            C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=seed)
        else:
            C = pl.PairwiseConstraints.from_labels(y, n_pairs // 2, n_pairs // 2,
                                                   random_state=seed)
        t0 = time.process_time()
        g0s.append(critical_gamma(L, C.pairs, C.signs, "hinge"))
        g0_time.append(time.process_time() - t0)
        for g in recs:
            recs[g].append(one_fit(L, y, C, g, seed, n_init))
    for g, rs in recs.items():
        def mean(key, rs=rs):
            return float(np.mean([r[key] for r in rs]))
        out.append({
            "data": name, "n": len(y), "m": C.n_pairs, "gamma": str(g),
            "gamma_0": f"{np.mean(g0s):.4g}", "gamma used": f"{mean('gamma_used'):.4g}",
            "gamma_0 s": f"{np.mean(g0_time):.2f}", "fit s": f"{mean('fit_s'):.2f}",
            "sweeps": f"{mean('sweeps'):.0f}", "mean K_ii": f"{mean('kii'):.3g}",
            "right side %": f"{100 * mean('right'):.1f}",
            "margin >= 0.9 %": f"{100 * mean('margin'):.1f}",
            "rand %": f"{100 * mean('rand'):.1f} ± {100 * np.std([r['rand'] for r in rs]):.1f}",
            "draws": draws,
        })
        print(out[-1], flush=True)
    return out


PCP_COLUMNS = ["data", "n", "gamma", "gamma used", "mean K_ii", "must-link K_ij",
               "cannot-link K_ij", "rand %", "fit s", "iterations", "draws"]


def pcp_rows(name, L, y, draws, max_iter):
    out = []
    for g in (1.0, "auto"):
        recs = []
        for seed in range(draws):
            C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=seed)
            c0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = pl.NPKL(graph="precomputed", loss="pcp", solver="admm", gamma=g,
                                max_iter=max_iter, random_state=seed).fit(L, C)
            cpu = time.process_time() - c0
            E = model.embedding_
            kij = np.einsum("ij,ij->i", E[C.pairs[:, 0]], E[C.pairs[:, 1]])
            labels = kernel_kmeans(E, len(np.unique(y)), n_init=20, random_state=seed)
            recs.append({"g": model.gamma_, "kii": np.mean(np.einsum("ij,ij->i", E, E)),
                         "must": np.mean(kij[C.signs > 0]), "cannot": np.mean(kij[C.signs < 0]),
                         "rand": pairwise_accuracy(y, labels), "cpu": cpu,
                         "it": model.n_iter_})
        mean = {k: float(np.mean([r[k] for r in recs])) for k in recs[0]}
        out.append({
            "data": name, "n": len(y), "gamma": str(g), "gamma used": f"{mean['g']:.4g}",
            "mean K_ii": f"{mean['kii']:.3f}", "must-link K_ij": f"{mean['must']:.3f}",
            "cannot-link K_ij": f"{mean['cannot']:.3f}",
            "rand %": f"{100 * mean['rand']:.1f} ± {100 * np.std([r['rand'] for r in recs]):.1f}",
            "fit s": f"{mean['cpu']:.2f}", "iterations": f"{mean['it']:.0f}", "draws": draws,
        })
        print(out[-1], flush=True)
    return out


def gaussian(n, cache):
    path = None if cache is None else Path(cache) / f"gauss10_{n}.npz"
    _, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=0)
    if path is not None and path.exists():
        return sp.load_npz(path).tocsr(), y
    X, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=0)
    L = knn_laplacian(X, n_neighbors=10, n_jobs=-1, random_state=0)
    if path is not None:
        sp.save_npz(path, L)
    return L, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--graph-cache", default=None)
    parser.add_argument("--max-n", type=int, default=1_000_000)
    parser.add_argument("--skip-protocol", action="store_true")
    parser.add_argument("--skip-gaussians", action="store_true")
    parser.add_argument("--min-n", type=int, default=0)
    parser.add_argument("--large-name", default="npkl_gamma_auto_large")
    parser.add_argument("--only-pcp", action="store_true")
    parser.add_argument("--rerun-sets", default=None,
                        help="comma-separated protocol sets: rerun their rows only and put "
                        "them in place of theirs in the protocol table (npkl_gamma_auto, or "
                        "npkl_gamma_auto_pcp with --only-pcp)")
    parser.add_argument("--why", default="", help="reason of --rerun-sets, for the note")
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    if args.rerun_sets:
        rerun(args.rerun_sets.split(","), args.only_pcp, args.why, start_load)
        return
    if args.only_pcp:
        rows = []
        for name in ("iris", "a1a") if args.quick else SMALL_SETS + ADULT_SETS:
            loaded = load_set_with_graph(name)
            if loaded is not None:
                adult = name in ADULT_SETS
                rows += pcp_rows(name, loaded[3], loaded[1], 1 if args.quick else 3,
                                 100 if adult else 500)
                write_results("npkl_gamma_auto_pcp", PCP_COLUMNS, rows, [
                    "NPKL-ADMM, pcp loss (Hu & Kwok 2013 eq. 1: targets K_ij = 1 on "
                    "must-links, 0 on cannot-links, K_ii = 1), the Table 2 protocol (0.6n + "
                    "0.6n pairs, k = 5, 50 on adult; at most 500 iterations, 100 on adult); "
                    "gamma='auto' is 100 max_i L_ii (psdlearn.npkl.gamma.PCP_AUTO_FACTOR). "
                    "K_ij: means over the training pairs. rand: kernel k-means, 20 "
                    "restarts, reported only (never used to choose anything). CPU seconds "
                    "of the fit, graph excluded.",
                    load_note(start_load)])
        return
    if not args.skip_protocol:
        rows = []
        sets = ("iris", "sonar", "a1a") if args.quick else SMALL_SETS + ADULT_SETS[:3]
        for name in sets:
            loaded = load_set_with_graph(name)
            if loaded is not None:
                rows += rows_for(name, loaded[3], loaded[1], 1 if args.quick else 3)
                write(rows, "npkl_gamma_auto", start_load)
    if not args.skip_gaussians:
        rows = []
        for n in (1_000_000, 50_000):  # the slow, decisive case first
            if not args.min_n <= n <= args.max_n:
                continue
            L, y = gaussian(n, args.graph_cache)
            for m in ((300,) if args.quick else (1000, 300)):
                rows += rows_for("gauss10", L, y, 1, n_pairs=m, n_init=3)
                write(rows, args.large_name, start_load)


def rerun(sets, pcp, why, start_load):
    """The rows of ``sets`` in place of theirs (3 draws, as the table), other rows kept."""
    from reproductions.experiments._partial import replace_rows

    # compile the solvers' kernels before any timed fit
    X, y = pl.datasets.make_two_gaussians(60, random_state=0)
    L = knn_laplacian(X)
    if pcp:
        pcp_rows("warm-up", L, y, 1, 5)
    else:
        rows_for("warm-up", L, y, 1)
    rows, c0, w0 = [], time.process_time(), time.perf_counter()
    for name in sets:
        _, y, _, L = load_set_with_graph(name)
        rows += (pcp_rows(name, L, y, 3, 100 if name in ADULT_SETS else 500) if pcp
                 else rows_for(name, L, y, 3))
    note = (f"Rows rerun on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
            f"{', '.join(sets)} ({why}); {time.process_time() - c0:.1f} CPU s in "
            f"{time.perf_counter() - w0:.1f} wall s. {load_note(start_load)}")
    replace_rows(RESULTS, "npkl_gamma_auto_pcp" if pcp else "npkl_gamma_auto",
                 lambda r: r["data"] in sets, rows, note, label=("data", "gamma"),
                 show=("rand %",))


def write(rows, name, start_load):
    write_results(name, COLUMNS, rows, [
        "NPKL-BCD, hinge loss, at most 800 sweeps per stage, tol 1e-5; gamma='auto' is "
        "30 gamma_0 (psdlearn.npkl.gamma.AUTO_GAMMA_FACTOR). right side: T_ij K_ij > 0 on "
        "the training pairs; margin: T_ij K_ij >= 0.9. rand: kernel k-means with the true "
        "number of classes (20 restarts; 3 on the Gaussians), reported only.",
        "gauss10: 10-d N(+1, I) / N(-1, I), k = 10, approximate kNN graph (HNSW), pairs "
        "drawn at random (half must-link); one draw. CPU seconds, graph excluded.",
        load_note(start_load),
    ])


if __name__ == "__main__":
    main()
