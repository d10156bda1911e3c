"""The chessboard set: which generator design the papers' numbers support.

The NPKL papers' "chessboard" (100 points, 2-D, 2 classes; Zhuang et al. JMLR 2011 Table 1)
is not available; :func:`psdlearn.datasets.make_chessboard` builds a board with points
uniform in the squares of their colour. The designs compared, all consistent with that
description:

- ``b x b`` boards, ``b = 2, 3, 4, 5``, 100 points uniform in squares of their colour
  (about ``100 / b^2`` per square);
- the ``10 x 10`` lattice: one point at the centre of every square of a 10 x 10 board.

Each design is scored under both papers' protocols, with each protocol's own ``gamma``:

- Hu & Kwok 2013 (:mod:`reproductions.experiments.admm_table2`): pcp loss, ``0.6 n`` must-link
  and ``0.6 n`` cannot-link pairs, ``gamma = 1``; ADMM (paper: 91.28) and MFPC (71.09);
- Zhuang et al. JMLR 2011 Table 2: pairs "randomly generated ... controlled by the resulted
  amount of connected components", ``r = 70% N`` components (Hoi et al. 2007, Xing et al.
  2003), read here as uniformly drawn pairs, each a must-link or cannot-link by the labels,
  added until the graph of the drawn pairs has ``0.7 n`` components
  (:func:`component_constraints`; about ``0.3 n`` pairs); SimpleNPKL with ``B = 1``, ``p =
  2``, the linear loss (paper: 60.2) and the squared hinge loss (58.8), at the ends and
  middle of the paper's range ``C in (0, 1]`` (``C = 0.1, 0.5, 1``; ``gamma = C / 2``, see
  :mod:`psdlearn.npkl.simplenpkl`). The paper chose ``C`` per set in that range without
  saying which; a method's reported number with a tuned ``C`` is read as its best over the
  range, so the cell compared is the best of the three.

Plain k-means scores chance on every board (both papers: 49.8-50.2), so it separates
nothing. Criterion for the design, fixed before the full run (after one smoke run of one
instance and two draws): the smallest mean absolute gap to the four non-chance numbers
(ADMM 91.28, MFPC 71.09, SimpleNPKL+LL 60.2, SimpleNPKL+SHL 58.8).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
from sklearn.cluster import KMeans

from psdlearn.cluster import kernel_kmeans
from psdlearn.constraints import PairwiseConstraints
from psdlearn.datasets import make_chessboard
from psdlearn.graph import knn_laplacian
from psdlearn.metrics import pairwise_accuracy
from psdlearn.npkl.estimator import NPKL
from reproductions.experiments.protocol import run_repetitions, summarize
from reproductions.experiments.report import write_results

__all__ = ["PAPER", "component_constraints", "lattice_chessboard", "run"]

BOARDS = (2, 3, 4, 5)
#: Generated instances per random design (seeds 0 .. INSTANCES - 1).
INSTANCES = 3
#: Constraint draws per instance and protocol (the papers: 20).
DRAWS = 10
#: JMLR 2011: components of the constraint graph as a fraction of n.
COMPONENT_RATIO = 0.7
#: JMLR 2011's range of C for the small sets, C = 2 gamma.
JMLR_C = (0.1, 0.5, 1.0)
#: The papers' chessboard numbers (Rand %): Hu & Kwok 2013 Table 2, Zhuang et al. 2011 Table 2.
PAPER = {"admm": 91.28, "mfpc": 71.09, "simplenpkl_linear": 60.2,
         "simplenpkl_squared_hinge": 58.8}


def lattice_chessboard(side=10):
    """One point at the centre of every square of a ``side x side`` board; colour labels."""
    ii, jj = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    X = (np.column_stack([ii.ravel(), jj.ravel()]) + 0.5) / side
    return X, ((ii + jj).ravel() % 2).astype(np.int64)


def component_constraints(y, ratio=COMPONENT_RATIO, random_state=None):
    """Random pairs labelled by ``y`` until their graph has ``ratio * n`` components.

    Pairs ``i < j`` are drawn uniformly without repetition; each is a must-link when
    ``y_i = y_j`` and a cannot-link otherwise; drawing stops as soon as the graph whose
    edges are the drawn pairs has at most ``round(ratio * n)`` connected components (a
    pair that joins two components lowers the count by one, so about ``(1 - ratio) n``
    pairs are drawn).

    Parameters
    ----------
    y : array-like of shape (n,)
    ratio : float, default=0.7
    random_state : int or None

    Returns
    -------
    PairwiseConstraints
    """
    y = np.asarray(y)
    n = len(y)
    rng = np.random.default_rng(random_state)
    target = int(round(ratio * n))
    parent = np.arange(n)

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    seen, components = set(), n
    while components > target:
        i, j = sorted(rng.choice(n, 2, replace=False).tolist())
        if (i, j) in seen:
            continue
        seen.add((i, j))
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[ri] = rj
            components -= 1
    pairs = np.array(sorted(seen))
    return PairwiseConstraints(pairs, np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1),
                               n_samples=n)


def _jmlr(y, L, draws):
    """SimpleNPKL Rand % per ``(loss, C)`` over ``draws`` component-controlled draws."""
    out = {}
    for seed in range(draws):
        C = component_constraints(y, random_state=seed)
        for loss in ("linear", "squared_hinge"):
            for c in JMLR_C:
                model = NPKL(solver="simplenpkl", loss=loss, gamma=c / 2,
                             solver_options={"B": 1.0},
                             graph="precomputed", random_state=seed).fit(L, C)
                labels = kernel_kmeans(model.embedding_, 2, n_init=20, random_state=seed)
                out.setdefault(f"simplenpkl_{loss}", {}).setdefault(c, []).append(
                    100.0 * pairwise_accuracy(y, labels))
        out.setdefault("pairs", []).append(C.n_pairs)
    return out


def _evaluate(X, y, draws):
    L = knn_laplacian(X, n_neighbors=5)
    kmeans = KMeans(2, n_init=20, random_state=0).fit_predict(X)
    out = {"kmeans": 100.0 * pairwise_accuracy(y, kmeans)}
    for solver in ("admm", "mfpc"):
        recs = run_repetitions(X, y, n_neighbors=5, reps=draws, laplacian=L, loss="pcp",
                               solver=solver, max_iter=500 if solver == "admm" else 1000)
        out[solver] = summarize(recs)["rand_mean"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # k-means on a collapsed kernel: fewer clusters
        jmlr = _jmlr(y, L, draws)
    out["pairs"] = float(np.mean(jmlr.pop("pairs")))
    for key, by_c in jmlr.items():
        out[key] = {str(c): float(np.mean(v)) for c, v in by_c.items()}
    return out


def _best(by_c):
    """The ``C`` of the range with the highest mean, and that mean (a tuned ``C``)."""
    c = max(by_c, key=by_c.get)
    return c, by_c[c]


def _row(name, results):
    row = {"design": name}
    gaps = []
    for key, label in (("kmeans", "k-means"), ("admm", "ADMM"), ("mfpc", "MFPC")):
        v = np.array([r[key] for r in results])
        row[f"{label} rand %"] = f"{v.mean():.1f}" + (f" ± {v.std():.1f}" if len(v) > 1 else "")
        if key in PAPER:
            gaps.append(abs(v.mean() - PAPER[key]))
    for key, label in (("simplenpkl_linear", "SimpleNPKL+LL"),
                       ("simplenpkl_squared_hinge", "SimpleNPKL+SHL")):
        by_c = {c: float(np.mean([r[key][c] for r in results])) for c in results[0][key]}
        row[f"{label} rand % (C = {'/'.join(by_c)})"] = " / ".join(f"{v:.1f}"
                                                                 for v in by_c.values())
        c, v = _best(by_c)
        row[f"{label} best C"] = f"{v:.1f} (C = {c})"
        gaps.append(abs(v - PAPER[key]))
    row["JMLR pairs"] = f"{np.mean([r['pairs'] for r in results]):.0f}"
    row["mean |gap|"] = f"{np.mean(gaps):.1f}"
    return row


def run(out_dir, quick=False, log=print, instances=None, draws=None):
    """Write ``admm_chessboard.{md,json}``."""
    draws = 2 if quick else (draws or DRAWS)
    instances = 1 if quick else (instances or INSTANCES)
    designs = {f"{b}x{b} board, uniform in squares": b for b in BOARDS}
    designs["10x10 lattice, one point per square"] = None
    load = [os.getloadavg()[1]]
    rows, raw = [], {}
    for name, board in designs.items():
        results = []
        for seed in range(1 if board is None else instances):
            X, y = (lattice_chessboard() if board is None
                    else make_chessboard(100, n_squares=board, random_state=seed))
            results.append(_evaluate(X, y, draws))
        raw[name] = results
        rows.append(_row(name, results))
        log(f"{name}: {rows[-1]}")
        _write(out_dir, rows, raw, draws, instances, load + [os.getloadavg()[1]])
    rows.append({"design": "papers", "k-means rand %": "49.8 (JMLR 2011)",
                 "ADMM rand %": f"{PAPER['admm']} (Hu & Kwok 2013)",
                 "MFPC rand %": f"{PAPER['mfpc']}",
                 "SimpleNPKL+LL best C": f"{PAPER['simplenpkl_linear']} (JMLR 2011)",
                 "SimpleNPKL+SHL best C": f"{PAPER['simplenpkl_squared_hinge']}"})
    load.append(os.getloadavg()[1])
    text = _write(out_dir, rows, raw, draws, instances, load)
    log(text)
    return rows


def _write(out_dir, rows, raw, draws, instances, load):
    best = min((r for r in rows if "mean |gap|" in r), key=lambda r: float(r["mean |gap|"]))
    notes = [
        f"Random designs: {instances} instances (seeds 0..{instances - 1}; ± over instances), "
        f"each scored over {draws} constraint draws per protocol (seeds 0..{draws - 1}); the "
        "lattice is deterministic. load('chessboard') is make_chessboard's default board, "
        "seed 0.",
        "ADMM / MFPC: Hu & Kwok 2013 protocol (pcp, 0.6 n + 0.6 n pairs, gamma = 1, 5-NN "
        "graph, kernel k-means, 20 restarts).",
        "SimpleNPKL: JMLR 2011 protocol (pairs drawn until 70% n components of their graph, "
        "'JMLR pairs' on average; B = 1, p = 2, 5-NN graph, gamma = C / 2), at C = 0.1 / 0.5 "
        "/ 1; 'best C': the best of the three (the paper tuned C in (0, 1]).",
        "k-means: sklearn KMeans on the raw points, 20 restarts.",
        "mean |gap|: mean absolute gap to ADMM 91.28, MFPC 71.09, SimpleNPKL+LL 60.2, "
        f"SimpleNPKL+SHL 58.8 (the criterion fixed before the run). Smallest: {best['design']} "
        f"({best['mean |gap|']}).",
        "Machine load (5-minute average) along the run: "
        + ", ".join(f"{v:.1f}" for v in load) + " on 2 cores shared with other jobs.",
    ]
    columns = list(dict.fromkeys(c for r in rows for c in r))
    return write_results(out_dir, "admm_chessboard", columns, rows, notes,
                         title="Chessboard generator designs against the papers' numbers",
                         extra={"raw": raw, "paper": PAPER})
