"""Hu & Kwok 2015 Tables III-VI and Figs. 2-3: NPKL by BCD, clustering accuracy and CPU time.

Protocol of Hu & Kwok 2015 section IV-A (see :mod:`reproductions.experiments.protocol`): 0.6n
must-link + 0.6n cannot-link pairs, rank ``r (r + 1) / 2 <= m``, kNN graph k = 5 (50 on
adult), 20 repetitions, kernel k-means with 20 restarts, Rand index; BCD with at most
1000 sweeps (800 on adult) and ``tol = 1e-5``, random initialisation, ``b = 1``.

Our copy of Hu & Kwok 2015 lacks the numbers of Tables III-VI, so the table prints, next to
ours, the accuracies of SimpleNPKL's JMLR 2011 Table 2 for the same data sets (NPKL solved
by SDPT3 with linear / hinge loss, SimpleNPKL with linear / squared hinge loss). Those
used a different constraint protocol (pairs until about 70% n connected components
remain) and a tuned C, so they are a reference point, not a target.

SimpleNPKL (Hu & Kwok 2015's baseline) runs beside BCD on the same constraint draws:
``NPKL(solver="simplenpkl")``, ``p = 2``, ``B = 100`` on the small sets and ``100 n`` on
adult (Hu & Kwok 2015 IV-A.2), same rank, iteration cap and ``tol``. As in Hu & Kwok 2015 Table V,
the iterative losses are not run on the sets with more than
:data:`SIMPLENPKL_MAX_N` samples (a4a, a6a here): "n/a (time)".
"""

from __future__ import annotations

import os
import time

import numpy as np

from psdlearn.npkl.bcd import BCD_LOSSES
from reproductions.experiments import bcd_convergence
from reproductions.experiments._partial import replace_rows
from reproductions.experiments.protocol import (
    ADULT_SETS,
    SMALL_SETS,
    certified_gap_cell,
    cvxpy_available,
    load_set_with_graph,
    run_repetitions,
    sdp_records,
    summarize,
)
from reproductions.experiments.report import write_results

__all__ = ["JMLR_TABLE2", "SIMPLENPKL_MAX_N", "rerun_rows", "run"]

#: Largest n on which SimpleNPKL runs its iterative losses, for the time of this run: on
#: a4a (n = 4781, rank 106, squared hinge) 50 steps took 91 s CPU without converging
#: (about 1.1 s per Lanczos eigendecomposition, 1.7 per step), i.e. 3 losses x 3 draws
#: well over half an hour on a4a alone. The linear loss (one eigendecomposition) runs on all.
SIMPLENPKL_MAX_N = 3500

#: SimpleNPKL JMLR 2011 Table 2, Rand index in %: k-means, NPKL+LL, NPKL+HL (SDPT3),
#: SimpleNPKL+LL, SimpleNPKL+SHL.
JMLR_TABLE2 = {
    "chessboard": (49.8, 61.1, 56.3, 60.2, 58.8),
    "glass": (69.7, 74.4, 79.1, 73.0, 73.5),
    "heart": (51.5, 86.0, 86.2, 86.8, 89.4),
    "iris": (84.5, 96.0, 97.4, 97.4, 97.4),
    "sonar": (50.2, 76.8, 64.5, 70.2, 78.0),
    "soybean": (82.1, 90.2, 100.0, 95.3, 95.4),
    "double-spiral": (50.1, 86.5, 94.1, 92.2, 94.1),
    "wine": (71.2, 78.1, 85.5, 83.7, 85.0),
}
#: Which JMLR column is the closest counterpart of each loss.
_JMLR_COLUMN = {"linear": (1, "NPKL+LL (SDPT3)"), "hinge": (2, "NPKL+HL (SDPT3)"),
                "squared_hinge": (4, "SimpleNPKL+SHL"), "square": (None, "-")}
#: The JMLR Table 2 SimpleNPKL column of each loss (linear: +LL, squared hinge: +SHL).
_JMLR_SIMPLENPKL = {"linear": 3, "squared_hinge": 4}


def run(out_dir, quick=False, log=print, *, reps=None, adult_reps=None, sdp_reps=None,
        simplenpkl_reps=None, companions=True, cv_reps=None, adult_cv_reps=None,
        simplenpkl_max_n=None):
    """Run the tables; write ``bcd_tables.{md,json}`` (and the gamma table) in ``out_dir``.

    ``reps``, ``adult_reps``, ``sdp_reps`` and ``simplenpkl_reps`` override the protocol's
    repetitions (20 on the small sets, 3 on adult, 3 SDP draws; SimpleNPKL on every draw)
    for a shorter run: SDP and SimpleNPKL then run on the first draws only, and the notes
    of the table say so. ``companions=False`` skips the gamma table and the convergence
    figures. ``cv_reps``: draws of the "gamma by constraint CV" column (default 5, 3 on
    adult, 1 with ``quick``; :mod:`reproductions.experiments.gamma_cv`); ``adult_cv_reps`` (an
    int, or a mapping set -> int; 0 skips the cell) overrides it on the adult sets only.
    ``simplenpkl_max_n``: largest n for SimpleNPKL's iterative losses (default
    :data:`SIMPLENPKL_MAX_N`; a smaller value is named a reduced run).
    """
    from reproductions.experiments.gamma_cv import cv_count, cv_reduced_note

    have_sdp = cvxpy_available()
    sets = ("iris", "soybean", "wine") if quick else SMALL_SETS + ADULT_SETS
    full = (3, 3, 1) if quick else (20, 3, 3)
    max_n = SIMPLENPKL_MAX_N if simplenpkl_max_n is None else int(simplenpkl_max_n)
    reduced = (any(v is not None for v in (reps, adult_reps, sdp_reps, simplenpkl_reps))
               or max_n < SIMPLENPKL_MAX_N)
    reps = full[0] if reps is None else int(reps)
    adult_reps = min(reps, full[1]) if adult_reps is None else int(adult_reps)
    sdp_reps = full[2] if sdp_reps is None else int(sdp_reps)
    rows, raw, missing, cv_counts = [], {}, [], {}
    load_start = os.getloadavg()[1]

    def write(partial_after=None):
        """The table so far; ``partial_after``: the last set done, the run not finished."""
        notes = [
            f"Repetitions: {reps} on the small sets, {adult_reps} on adult; SDP (cvxpy + "
            f"Clarabel) on the first {sdp_reps} constraint draws where n <= 200 (size guard)"
            + (f"; SimpleNPKL on the first {simplenpkl_reps} draws (BCD obj beside it on the "
               "same draws)" if simplenpkl_reps is not None else "") + "."
            + (f" Reduced run (the protocol: {full[0]}, {full[1]} and {full[2]}, SimpleNPKL on "
               "every draw), for the time left on a 2-core machine." if reduced else ""),
            "BCD-SDP obj gap: (BCD objective - SDP optimum) / |SDP optimum| on the same draws.",
            "certified gap: the largest over the draws of the duality bound on (objective - "
            "convex optimum) / |objective| (certificate_.relative_gap, psdlearn.npkl."
            "certificate), and how many draws it certifies at 1e-4; it needs no SDP solve.",
            "protein (Hu & Kwok 2015 Table II) is not available anywhere to this project; a5a "
            "and a7a neither." + (f" Missing here: {', '.join(missing)}." if missing else ""),
            "SimpleNPKL: p = 2, B = 100 (small sets) / 100 n (adult), Hu & Kwok 2015 IV-A.2; "
            "obj = mean objective (10) of the returned kernel, BCD's beside it (SimpleNPKL's "
            "kernel is confined to tr K^2 <= B; for the linear loss it ignores ||v_i|| <= b, hence "
            "lower values there). Iterative losses not run above n = "
            f"{max_n} (n/a (time): about 1.7 s CPU per step on a4a, hundreds of "
            "steps per fit, beyond the budget of this run"
            + ("" if max_n >= SIMPLENPKL_MAX_N else f"; the protocol of this table runs them up "
               f"to n = {SIMPLENPKL_MAX_N}, lowered for the time of this run") + ").",
            "SimpleNPKL fits stopped at the iteration cap (draws of the cell): "
            + (", ".join(f"{key.rsplit('/', 1)[0]} ({sum(not r['converged'] for r in recs)}/"
                         f"{len(recs)})" for key, recs in raw.items()
                         if key.endswith("/simplenpkl")
                         and not all(r["converged"] for r in recs))
               or "none") + ".",
            "JMLR ref: SimpleNPKL JMLR 2011 Table 2 (different constraint protocol: pairs until "
            "~70% n components; C tuned in (0, 1]); a reference, not a target.",
            "gamma = 1 throughout (the paper does not give it); see bcd_gamma.md for its effect."
            " gamma by constraint CV: NPKLCV on each draw's training constraints only (3 folds,"
            " 8 gammas from 3 to 3000 gamma_0, i.e. a tenth to 100 times gamma='auto'), the "
            "chosen gamma's median in brackets, on the "
            "first draws (count in the cell; see gamma_cv.md)."
            + cv_reduced_note(cv_counts, quick),
        ]
        if not companions:
            notes.append("Companions skipped for time (companions=False): bcd_gamma.md and the "
                         "bcd_convergence figures are not regenerated by this run.")
        notes.append(f"Machine load (5-minute average) at the start and end of the table: "
                     f"{load_start:.1f}, {os.getloadavg()[1]:.1f} on 2 cores; CPU times are "
                     "inflated by other jobs.")
        if partial_after is not None:
            notes.append(f"Partial table, written after {partial_after}: the run was stopped "
                         "before the remaining sets.")
        return write_results(out_dir, "bcd_tables", list(rows[0].keys()) if rows else [], rows,
                             notes, title="Hu & Kwok 2015 Tables III-VI: NPKL-BCD clustering "
                             "accuracy and CPU time", extra={"raw": raw})

    for name in sets:
        if load_set_with_graph(name) is None:
            missing.append(name)
            continue
        n_cv = cv_count(name, cv_reps, adult_cv_reps, quick)
        cv_counts[name] = n_cv
        part_rows, part = _set_rows(name, adult_reps if name in ADULT_SETS else reps,
                                    sdp_reps, simplenpkl_reps, max_n, n_cv, have_sdp)
        rows.extend(part_rows)
        raw.update(part)
        for row in part_rows:
            log(f"{name:14s} {row['loss']:14s} rand {row['BCD rand %']:>14s}  "
                f"cpu {row['BCD CPU s']}  simplenpkl {row['SimpleNPKL rand %']}  "
                f"sdp {row['SDP rand %']}  cv {row['gamma by constraint CV %']}  "
                f"cert {row['certified gap']}")
        write(partial_after=name)  # partial results survive an interruption
    text = write()
    log(text)
    if companions:
        _gamma_table(out_dir, quick, log)
        bcd_convergence.run(out_dir, quick=quick, log=log)
    return rows


def _set_rows(name, reps, sdp_reps, simplenpkl_reps, max_n, n_cv, have_sdp, cv_rule=None):
    """The four loss rows of one set and their per-draw records: ``(rows, {key: records})``.

    ``reps`` BCD draws; SDP on the first ``sdp_reps`` where n <= 200; SimpleNPKL on the
    first ``simplenpkl_reps`` (all with None) where its loss runs at this n (``max_n``);
    ``n_cv`` draws of the gamma-by-CV cell (0: not run), chosen by ``cv_rule`` (a dict of
    ``cv_records``' ``scoring`` and ``selection``; default the protocol's rule).
    """
    from reproductions.experiments.gamma_cv import cv_cell, cv_records

    X, y, k, L = load_set_with_graph(name)
    adult = name in ADULT_SETS
    rows, raw = [], {}
    for loss in BCD_LOSSES:
        protocol = dict(n_neighbors=k, reps=reps, laplacian=L, loss=loss,
                        max_iter=800 if adult else 1000, tol=1e-5)
        recs = run_repetitions(X, y, **protocol)
        s = summarize(recs)
        col, col_name = _JMLR_COLUMN[loss]
        ref = JMLR_TABLE2.get(name)
        row = {
            "dataset": name, "n": len(y), "loss": loss, "rank": recs[0]["rank"],
            "BCD rand %": f"{s['rand_mean']:.1f} ± {s['rand_std']:.1f}",
            "BCD CPU s": f"{s['cpu_mean']:.3f} ± {s['cpu_std']:.3f}",
            "sweeps": f"{s['iters_mean']:.0f}",
            "certified gap": certified_gap_cell(recs),
            **_simplenpkl_cells(X, y, protocol, recs, raw, f"{name}/{loss}",
                                simplenpkl_reps, max_n),
            "JMLR SimpleNPKL %": ("-" if ref is None or loss not in _JMLR_SIMPLENPKL
                                  else f"{ref[_JMLR_SIMPLENPKL[loss]]:.1f}"),
            "SDP rand %": "not run", "SDP CPU s": "-",
            "JMLR ref %": "-" if ref is None or col is None else f"{ref[col]:.1f}",
            "JMLR column": col_name if ref is not None else "-",
        }
        raw[f"{name}/{loss}/bcd"] = recs
        row["gamma by constraint CV %"] = "not run (time)"
        if n_cv > 0:
            cv_recs = cv_records(y, L, n_cv, loss=loss, max_iter=protocol["max_iter"],
                                 tol=1e-5, **(cv_rule or {}))
            row["gamma by constraint CV %"] = f"{cv_cell(cv_recs)} ({n_cv} reps)"
            raw[f"{name}/{loss}/bcd-gamma-cv"] = cv_recs
        if have_sdp and len(y) <= 200:
            srecs = sdp_records(y, L, loss, sdp_reps)
            ss = summarize(srecs)
            row["SDP rand %"] = f"{ss['rand_mean']:.1f} ({sdp_reps} reps)"
            row["SDP CPU s"] = f"{ss['cpu_mean']:.2f}"
            gaps = [(b["objective"] - a["objective"]) / max(abs(a["objective"]), 1e-12)
                    for a, b in zip(srecs, recs[:sdp_reps], strict=True)]
            row["BCD-SDP obj gap"] = f"{np.mean(gaps):+.2e}"
            raw[f"{name}/{loss}/sdp"] = srecs
        elif len(y) > 200:
            row["SDP rand %"] = "too large"
        rows.append(row)
    return rows, raw


def rerun_rows(out_dir, sets, why, log=print, *, sdp_reps=1, simplenpkl_reps=1,
               cv_rule=(("scoring", "auc"), ("selection", "best"))):
    """Rerun the rows of ``sets`` and put them in place of theirs in ``out_dir/bcd_tables.*``,
    keeping the other rows and the notes; ``why`` names the reason in the note added.

    The defaults are those of the table as it stands: 20 draws (3 on adult), SDP and
    SimpleNPKL on the first draw, 5 CV draws (3 on adult) by the column's rule (the held-out
    cosine AUC, best mean).
    """
    from reproductions.experiments.gamma_cv import cv_count

    _warm_up()
    have_sdp = cvxpy_available()
    rows, raw = [], {}
    c0, w0, load0 = time.process_time(), time.perf_counter(), os.getloadavg()[1]
    for name in sets:
        part_rows, part = _set_rows(name, 3 if name in ADULT_SETS else 20, sdp_reps,
                                    simplenpkl_reps, SIMPLENPKL_MAX_N,
                                    cv_count(name, None, None, False), have_sdp,
                                    dict(cv_rule))
        rows.extend(part_rows)
        raw.update(part)
        log(f"{name}: {part_rows}")
    rule = ", ".join(f"{k} {v}" for k, v in cv_rule)
    note = (f"Rows rerun on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
            f"{', '.join(sets)} ({why}), SDP and SimpleNPKL on the first {sdp_reps} and "
            f"{simplenpkl_reps} draws as the other rows, CV by {rule}; "
            f"{time.process_time() - c0:.0f} CPU s in {time.perf_counter() - w0:.0f} wall s, "
            f"load {load0:.1f} / {os.getloadavg()[1]:.1f}.")
    text = replace_rows(out_dir, "bcd_tables", lambda r: r["dataset"] in sets, rows, note,
                        raw=raw, label=("dataset", "loss"),
                        show=("BCD rand %", "SimpleNPKL rand %", "SDP rand %",
                              "gamma by constraint CV %"))
    log(text)
    return rows


def _warm_up():
    """One small BCD fit per loss, so that no timed fit includes the JIT compilation."""
    from psdlearn.datasets import make_two_gaussians

    X, y = make_two_gaussians(60, random_state=0)
    for loss in BCD_LOSSES:
        run_repetitions(X, y, n_neighbors=5, reps=1, loss=loss, max_iter=5)


def _simplenpkl_cells(X, y, protocol, bcd_records, raw, key, max_reps=None,
                      max_n=SIMPLENPKL_MAX_N):
    """SimpleNPKL on the protocol's constraint draws (the first ``max_reps``): rand, CPU,
    objectives beside BCD's on the same draws."""
    if protocol["loss"] != "linear" and len(y) > max_n:
        return {"SimpleNPKL rand %": "n/a (time)", "SimpleNPKL CPU s": "-",
                "SimpleNPKL obj": "-", "BCD obj": "-"}
    if max_reps is not None:
        protocol = {**protocol, "reps": min(protocol["reps"], int(max_reps))}
    recs = run_repetitions(X, y, solver="simplenpkl", **protocol)
    bcd_records = bcd_records[:len(recs)]
    raw[f"{key}/simplenpkl"] = recs
    s = summarize(recs)
    return {
        "SimpleNPKL rand %": f"{s['rand_mean']:.1f} ± {s['rand_std']:.1f}",
        "SimpleNPKL CPU s": f"{s['cpu_mean']:.3f} ± {s['cpu_std']:.3f}",
        "SimpleNPKL obj": f"{np.mean([r['objective'] for r in recs]):.4g}",
        "BCD obj": f"{np.mean([r['objective'] for r in bcd_records]):.4g}",
    }


def _gamma_table(out_dir, quick, log):
    """Effect of gamma (not given by Hu & Kwok 2015) on accuracy, for two losses."""
    sets = ("iris", "soybean") if quick else ("iris", "soybean", "wine", "glass", "sonar")
    gammas = (0.1, 1.0, 10.0)
    reps = 2 if quick else 5
    rows = []
    for name in sets:
        X, y, k, L = load_set_with_graph(name)
        for loss in ("hinge", "square"):
            row = {"dataset": name, "loss": loss}
            for g in gammas:
                s = summarize(run_repetitions(X, y, n_neighbors=k, reps=reps, laplacian=L,
                                              loss=loss, gamma=g))
                row[f"gamma={g:g}"] = f"{s['rand_mean']:.1f} ± {s['rand_std']:.1f}"
            rows.append(row)
    text = write_results(out_dir, "bcd_gamma", list(rows[0].keys()), rows,
                         [f"Rand index (%) of NPKL-BCD, {reps} repetitions per cell."],
                         title="Effect of gamma on NPKL-BCD")
    log(text)
