"""NPKL ``rank="adaptive"`` against the ``r (r + 1) / 2 <= m`` rule, with the duality certificate.

Run: ``python benchmarks/bench_npkl_certificate.py [--data small,a1a,a9a,gauss10]
[--losses ...] [--gauss-n N] [--name NAME] [--append] [--rule-from NAME] [--no-rule]
[--graph-cache DIR]``;
``--summary`` only writes ``results/npkl_certificate_summary.{md,json}``, the issue's table
(data, loss, rule rank, certified rank, CPU time both ways) from the result files above.

For every data set and loss, two BCD fits of the same problem (same seed, ``tol = 1e-5``,
800 sweeps per stage as in ``bench_npkl_bcd.py``): ``rank="auto"`` (the rule) and
``rank="adaptive"`` (``rank_init = 8``, grown by rank escalation until the certificate holds
at ``certificate_tol = 1e-4``). Reported: both ranks, both objectives and their relative
difference, the certified relative gap of each fit (``certificate_.relative_gap``), the
wall and CPU seconds of each fit (the certificates included), the CPU ratio, and the wall
seconds of the certificates (and escalations) within each fit. Protocol sets: the eight
small sets of the reproductions (k = 5), adult a1a and a9a (k = 50), all with 0.6 n
must-link + 0.6 n cannot-link pairs from the labels (seed 0), and the 10-d two-Gaussian
set (k = 10, 500 + 500 pairs), as in ``bench_npkl_bcd.py``.

``--rule-from NAME`` skips the rule fit and copies its columns from the row of the same data,
n and loss in ``results/NAME.json`` (valid only while the fixed-rank code path, solver and
certificate, is unchanged since that run: the rule fits cost 300-490 CPU s each on a9a);
``--no-rule`` runs the adaptive fit alone (its certified gap and rank; rule columns n/a).

Results: ``benchmarks/results/<name>.{md,json}`` (default ``npkl_certificate``). The fits
are single-threaded here, so the CPU time is the load-robust measure on a shared machine;
the load is noted.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import scipy.sparse as sp
from _common import RESULTS, load_note, median_wall_cpu, write_results

import psdlearn as pl
from psdlearn.graph import knn_laplacian
from reproductions.experiments.protocol import SMALL_SETS, load_set_with_graph

LOSSES = ("hinge", "squared_hinge", "square", "linear")
COLUMNS = ["data", "n", "m", "loss", "rule_rank", "certified_rank", "rule_gap", "adaptive_gap",
           "rule_obj", "adaptive_obj", "rel_obj_diff", "rule_s", "adaptive_s", "rule_cpu_s",
           "adaptive_cpu_s", "cpu_ratio", "rule_cert_s", "adaptive_cert_s", "rank_path",
           "load_start", "load_end"]
#: The rule fit's columns (copied by --rule-from).
RULE_COLUMNS = ("rule_rank", "rule_gap", "rule_obj", "rule_s", "rule_cpu_s", "rule_cert_s")


NOTES = [
    "rule_rank: r (r + 1) / 2 <= m (rank='auto'); certified_rank: where rank='adaptive' "
    "(rank_init = 8) stopped, in brackets when its certificate does not hold at 1e-4 (the "
    "escalation stops when its columns buy no decrease: the gap is then the fit's "
    "first-order residual, not missing rank). rank_path: rank:relative gap of every round, "
    "the intermediate ones (stopped at 30 tol, cheap bound; the hinge's on its smoothed "
    "problem at mu = 1e-2) then the final one at tol (the last rank twice).",
    "rule_gap / adaptive_gap: certificate_.relative_gap, a bound on (f - f*) / |f| with f* "
    "the optimum of the convex problem over K >= 0; rel_obj_diff = (f_adaptive - f_rule) / "
    "|f_rule|. The hinge is never certified at the default tol = 1e-5: on chessboard and "
    "double-spiral (seed 0, chessboard on the 3x3 board) the SDP (cvxpy) puts those fits "
    "7.5e-5 and 1.9e-4 above the optimum (bound 1.1e-3, 5.7e-4); at tol = 1e-7 they are "
    "5.4e-7 and 2.2e-6 above it and the bound is 4.1e-5 and 1.1e-5, certified.",
    "cpu_ratio = adaptive_cpu_s / rule_cpu_s (process CPU time, both fits single-threaded, "
    "certificates included); rule_cert_s / adaptive_cert_s: wall seconds of the "
    "certificates and escalations inside the fit (wall times are inflated by the load).",
    "gamma = 1 (the reproductions' protocol) unless the file name ends in _auto "
    "(gamma='auto', the estimator's default).",
    "rule_obj / adaptive_obj: the final objectives (n/a in rows whose rule columns were "
    "copied by --rule-from from a run that did not record them).",
    "load_start / load_end: 1-minute load average (2 cores) before the row's first fit and "
    "after its last.",
]


GAMMA = {"value": 1.0}  # --gamma: 1 (the protocols') or "auto"


def fit(L, C, loss, rank, max_iter=800):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pl.NPKL(loss=loss, graph="precomputed", rank=rank, rank_init=8,
                       gamma=GAMMA["value"], max_iter=max_iter, random_state=0).fit(L, C)


def compare(data, L, C, loss, repeats, rule_row=None):
    """One row; ``rule_row``: the rule fit's columns from an earlier run (not refitted)."""
    models = {}
    times = {}
    load_start = os.getloadavg()[0]
    for rank in ("adaptive",) if rule_row else ("auto", "adaptive"):
        out = []
        times[rank] = median_wall_cpu(lambda rank=rank, out=out: out.append(fit(L, C, loss, rank)),
                                      repeats=repeats)
        models[rank] = out[-1]
    ada = models["adaptive"]
    if rule_row is None:
        rule = models["auto"]
        rule_row = {"rule_rank": rule.rank_, "rule_gap": rule.certificate_.relative_gap,
                    "rule_obj": rule.objective_history_[-1], "rule_s": times["auto"][0],
                    "rule_cpu_s": times["auto"][1], "rule_cert_s": rule.certificate_time_}
    f_rule, f_ada = rule_row.get("rule_obj", float("nan")), ada.objective_history_[-1]
    return {"data": data, "n": L.shape[0], "m": C.n_pairs, "loss": loss,
            **{k: rule_row.get(k, float("nan")) for k in RULE_COLUMNS},
            "certified_rank": ada.rank_ if ada.certificate_.certified
            else f"({ada.rank_}, not certified)",
            "adaptive_gap": ada.certificate_.relative_gap, "adaptive_obj": f_ada,
            "rel_obj_diff": (f_ada - f_rule) / abs(f_rule),
            "adaptive_s": times["adaptive"][0], "adaptive_cpu_s": times["adaptive"][1],
            "cpu_ratio": times["adaptive"][1] / rule_row["rule_cpu_s"],
            "adaptive_cert_s": ada.certificate_time_,
            "rank_path": " ".join(f"{r}:{g:.1e}" for r, g in ada.rank_path_),
            "load_start": load_start, "load_end": os.getloadavg()[0]}


#: The result files of the summary table, in its row order.
SUMMARY_SOURCES = ("npkl_certificate", "npkl_certificate_a9a", "npkl_certificate_1e6_auto")
SUMMARY_COLUMNS = ["data", "n", "gamma", "loss", "rule_rank", "certified_rank", "adaptive_gap",
                   "rule_cpu_s", "adaptive_cpu_s", "cpu_ratio", "rel_obj_diff", "source"]


def summary():
    """The issue's table from the committed results (no fit): one row per data and loss."""
    rows = []
    for name in SUMMARY_SOURCES:
        for r in json.loads((RESULTS / f"{name}.json").read_text())["rows"]:
            rows.append({**{k: r.get(k) for k in SUMMARY_COLUMNS},
                         "gamma": "auto" if name.endswith("_auto") else 1, "source": name})
    notes = [
        "Rows copied from the files in the source column (their notes give the load and the "
        "runs); certified_rank: in brackets when the final certificate does not hold at "
        "1e-4; adaptive_gap: certificate_.relative_gap of the adaptive fit; cpu_ratio = "
        "adaptive_cpu_s / rule_cpu_s (n/a: no rule fit); rel_obj_diff = (f_adaptive - "
        "f_rule) / |f_rule|.",
    ]
    write_results("npkl_certificate_summary", SUMMARY_COLUMNS, rows, notes)


class NoRule(dict):
    """``--no-rule``: every lookup gives a rule row of n/a (only the CPU time is needed,
    as the ratio's denominator: NaN)."""

    def get(self, key, default=None):
        return {"rule_cpu_s": float("nan")}


def _add(rows, row):
    """``rows`` with ``row`` replacing the one of the same data, n and loss."""
    print(row, flush=True)
    key = (row["data"], row["n"], row["loss"])
    return [r for r in rows if (r["data"], r["n"], r["loss"]) != key] + [row]


def _graph(data, X, cache):
    """The k = 50 kNN Laplacian of ``X``, from ``cache/<data>_L.npz`` when there (an
    exclusive timing run then spends none of its time on the graph)."""
    if cache is None:
        return knn_laplacian(X, n_neighbors=50)
    path = Path(cache) / f"{data}_L.npz"
    if path.exists():
        return sp.load_npz(path)
    L = knn_laplacian(X, n_neighbors=50)
    sp.save_npz(path, L)
    return L


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="small,a1a,a9a",
                    help="comma-separated: small (the eight small protocol sets), a1a, a9a, "
                    "gauss10")
    ap.add_argument("--losses", default=",".join(LOSSES))
    ap.add_argument("--gauss-n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--gamma", default="1", help="1 (the protocols', default) or 'auto'")
    ap.add_argument("--name", default="npkl_certificate", help="results file name")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of the existing results (replacing equal data/loss)")
    ap.add_argument("--rule-from", default=None,
                    help="results name whose rule-fit columns are reused (no rule fit)")
    ap.add_argument("--no-rule", action="store_true", help="no rule fit (adaptive only)")
    ap.add_argument("--graph-cache", default=None,
                    help="folder: reuse <data>_L.npz there (else build it and save it there)")
    ap.add_argument("--summary", action="store_true",
                    help="only write npkl_certificate_summary from the result files")
    args = ap.parse_args()
    if args.summary:
        summary()
        return
    rule_rows = {}
    if args.no_rule:
        rule_rows = NoRule()
    elif args.rule_from:
        for r in json.loads((RESULTS / f"{args.rule_from}.json").read_text())["rows"]:
            rule_rows[(r["data"], r["n"], r["loss"])] = {
                k: r[k] for k in RULE_COLUMNS if k in r and r[k] is not None}
    GAMMA["value"] = args.gamma if args.gamma == "auto" else float(args.gamma)
    start_load = os.getloadavg()[0]
    rows, notes = [], list(NOTES)
    if args.append and (RESULTS / f"{args.name}.json").exists():
        previous = json.loads((RESULTS / f"{args.name}.json").read_text())
        rows, notes = previous["rows"], previous["notes"][:-1]
    losses = args.losses.split(",")
    warm_X, warm_y = pl.datasets.make_two_gaussians(200, random_state=0)
    for loss in losses:  # compile every kernel once
        fit(knn_laplacian(warm_X), pl.PairwiseConstraints.from_labels(warm_y, random_state=0),
            loss, "adaptive")
    for data in args.data.split(","):
        t0 = time.perf_counter()
        if data == "gauss10":
            X, y = pl.datasets.make_two_gaussians(args.gauss_n, n_features=10, random_state=0)
            L = knn_laplacian(X, n_neighbors=10, n_jobs=1)  # single-threaded, like the fits
            C = pl.PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)
        elif data == "small":
            for name in SMALL_SETS:
                _, y, _, L = load_set_with_graph(name)
                C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6,
                                                       random_state=0)
                for loss in losses:
                    rows = _add(rows, compare(name, L, C, loss, args.repeats,
                                              rule_rows.get((name, L.shape[0], loss))))
                write_results(args.name, COLUMNS, rows, [*notes, load_note(start_load)])
            continue
        else:
            X, y = pl.datasets.load(data)
            L = _graph(data, X, args.graph_cache)
            C = pl.PairwiseConstraints.from_labels(y, random_state=0)
        print(f"{data}: graph {time.perf_counter() - t0:.1f} s", flush=True)
        for loss in losses:
            rows = _add(rows, compare(data, L, C, loss, args.repeats,
                                      rule_rows.get((data, L.shape[0], loss))))
            write_results(args.name, COLUMNS, rows, [*notes, load_note(start_load)])
    notes.append(load_note(start_load))
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
