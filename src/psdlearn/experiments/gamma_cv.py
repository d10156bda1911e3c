"""gamma chosen by constraint cross-validation, beside gamma = 1 and the papers' numbers.

Neither Hu & Kwok 2013 nor Hu & Kwok 2015 gives ``gamma``. On each constraint draw of the
protocol (:mod:`psdlearn.experiments.protocol`: 0.6n must-link + 0.6n cannot-link pairs
from the labels, seed = repetition), :class:`psdlearn.model_selection.NPKLCV` chooses
``gamma`` from those training constraints alone (3 folds of
:class:`~psdlearn.model_selection.ConstraintKFold`, shuffled with the draw's seed; the
default grid of 8 values, a tenth to 100 times ``gamma='auto'`` (3 to 3000 ``gamma_0`` for
the margin losses, 10 to 10^4 ``max L_ii`` for pcp); score: held-out ROC AUC of the
cosine), refits on all of them, and the kernel is clustered and scored by the Rand index
like the ``gamma = 1`` column on the same draws. The labels are used for the Rand index
only.

Two tables: ADMM on the pcp loss (Hu & Kwok 2013 Table 2) and BCD on the hinge and
square losses (Hu & Kwok 2015; our ``bcd-tables`` protocol).
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from psdlearn.cluster import kernel_kmeans
from psdlearn.constraints import PairwiseConstraints
from psdlearn.experiments.protocol import (
    ADULT_SETS,
    SMALL_SETS,
    load_set_with_graph,
    run_repetitions,
    summarize,
)
from psdlearn.experiments.report import write_results
from psdlearn.metrics import pairwise_accuracy
from psdlearn.model_selection import NPKLCV, ConstraintKFold

__all__ = ["cv_cell", "cv_count", "cv_records", "cv_reduced_note", "run"]


def cv_records(y, laplacian, reps, *, folds=3, groups="pairs", **npkl_params):
    """NPKLCV on the protocol draws of seeds ``0 .. reps - 1``.

    Returns a list of dict with keys rand, gamma, gamma0, cpu_s.
    """
    out = []
    n_classes = len(np.unique(y))
    for seed in range(reps):
        C = PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=seed)
        cv = ConstraintKFold(folds, shuffle=True, random_state=seed, groups=groups)
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = NPKLCV(graph="precomputed", cv=cv, random_state=seed,
                           **npkl_params).fit(laplacian, C)
        cpu = time.process_time() - c0
        labels = kernel_kmeans(model.embedding_, n_classes, n_init=20, random_state=seed)
        out.append({"rand": pairwise_accuracy(y, labels), "gamma": model.gamma_,
                    "gamma0": model.gamma0_, "cpu_s": cpu})
    return out


def cv_cell(records):
    """``mean ± std (gamma median)`` of :func:`cv_records`, Rand in %."""
    s = summarize(records)
    return (f"{s['rand_mean']:.2f} ± {s['rand_std']:.2f} "
            f"(gamma {np.median([r['gamma'] for r in records]):.3g})")


def cv_count(name, cv_reps, adult_cv_reps, quick):
    """Draws of the CV column on set ``name``: 5 (3 on adult, 1 with ``quick``) unless
    overridden; ``adult_cv_reps`` (an int, or a mapping set -> int) overrides the adult
    sets only; 0: the cell is not run."""
    adult = name in ADULT_SETS
    if adult and adult_cv_reps is not None:
        if isinstance(adult_cv_reps, dict):
            if name in adult_cv_reps:
                return int(adult_cv_reps[name])
        else:
            return int(adult_cv_reps)
    return int(cv_reps) if cv_reps else (1 if quick else 3 if adult else 5)


def cv_reduced_note(cv_counts, quick):
    """' Reduced run: ...' when a set's CV column has fewer draws than the protocol's 5 / 3."""
    if quick:
        return ""
    short = [f"{name} {n}" for name, n in cv_counts.items()
             if n < (3 if name in ADULT_SETS else 5)]
    if not short:
        return ""
    return (" Reduced run, for the time on a shared 2-core machine: CV draws "
            + ", ".join(short) + " (0: not run; the protocol of this column: 5 on the small "
            "sets, 3 on adult).")


def _table(name, sets, reps, params, paper, log, adult_params=None, groups="pairs"):
    rows, raw = [], {}
    for data in sets:
        loaded = load_set_with_graph(data)
        if loaded is None:
            continue
        X, y, k, L = loaded
        kw = {**params, **(adult_params if data in ADULT_SETS and adult_params else {})}
        base = run_repetitions(X, y, n_neighbors=k, reps=reps, laplacian=L, **kw)
        cv = cv_records(y, L, reps, groups=groups, **kw)
        b, c = summarize(base), summarize(cv)
        rows.append({
            "dataset": data, "n": len(y), "loss": kw.get("loss", "hinge"),
            "gamma = 1 rand %": f"{b['rand_mean']:.2f} ± {b['rand_std']:.2f}",
            "gamma by constraint CV rand %": cv_cell(cv),
            "CV - (gamma = 1)": f"{c['rand_mean'] - b['rand_mean']:+.2f}",
            "paper %": paper(data, kw.get("loss")),
            "gamma_0": ("-" if cv[0]["gamma0"] is None
                        else f"{np.median([r['gamma0'] for r in cv]):.3g}"),
            "CV CPU s / fit CPU s": f"{c['cpu_mean']:.1f} / {b['cpu_mean']:.2f}",
            "reps": reps,
        })
        raw[f"{data}/{kw.get('loss')}"] = {"gamma1": base, "cv": cv}
        log(f"{name} {data}: {rows[-1]}")
    return rows, raw


def run(out_dir, quick=False, log=print, *, reps=None, adult_reps=None, admm_sets=None,
        bcd_sets=None, bcd_losses=("hinge", "square"), groups="pairs"):
    """Write ``gamma_cv_admm.*`` and ``gamma_cv_bcd.*`` in ``out_dir``."""
    from psdlearn.experiments.admm_table2 import PAPER_TABLE2
    from psdlearn.experiments.bcd_tables import JMLR_TABLE2

    reps = (2 if quick else 5) if reps is None else int(reps)
    adult_reps = min(reps, 3) if adult_reps is None else int(adult_reps)
    load0 = os.getloadavg()[1]
    notes = [
        "Same constraint draws (seeds 0 .. reps - 1) in both columns. gamma by CV: "
        "NPKLCV, 3 shuffled ConstraintKFold folds "
        f"(groups={groups!r}), 8 gammas from a tenth to 100 times gamma='auto' (3 to 3000 "
        "gamma_0 for the margin losses, 10 to 10^4 max L_ii for pcp), fold fits to tol 1e-3 "
        "warm-started along the path, refit at the protocol's tol; the chosen gamma's "
        "median over the draws in brackets. Chosen on the training constraints only.",
        "CV CPU s: the whole NPKLCV (24 fold fits + refit); fit CPU s: one gamma = 1 fit.",
    ]

    def admm_paper(data, loss):
        p = PAPER_TABLE2.get(data)
        return "-" if p is None else f"{p[0]:.2f} ± {p[1]:.2f}"

    def bcd_paper(data, loss):
        col = {"hinge": 2, "linear": 1}.get(loss)
        ref = JMLR_TABLE2.get(data)
        return "-" if ref is None or col is None else f"{ref[col]:.1f} (JMLR 2011)"

    admm_sets = (("iris", "a1a") if quick else SMALL_SETS + ADULT_SETS) \
        if admm_sets is None else tuple(admm_sets)
    rows, raw = [], {}
    for data in admm_sets:
        r = adult_reps if data in ADULT_SETS else reps
        part, praw = _table("admm", (data,), r, {"loss": "pcp", "solver": "admm",
                                                 "max_iter": 500}, admm_paper, log,
                            adult_params={"max_iter": 100}, groups=groups)
        rows += part
        raw.update(praw)
    if rows:
        write_results(out_dir, "gamma_cv_admm", list(rows[0]), rows, notes + [
            "ADMM, pcp loss, Hu & Kwok 2013 protocol (max_iter 500, 100 on adult); paper: "
            "Hu & Kwok 2013 Table 2, KL_ADMM (gamma not given).",
            f"Machine load (5-min average) at start / end: {load0:.1f} / "
            f"{os.getloadavg()[1]:.1f} on 2 cores."],
            title="gamma by constraint CV: NPKL-ADMM (pcp)", extra={"raw": raw})
    bcd_sets = (("iris", "sonar") if quick else SMALL_SETS) if bcd_sets is None \
        else tuple(bcd_sets)
    rows, raw = [], {}
    for loss in bcd_losses:
        for data in bcd_sets:
            r = adult_reps if data in ADULT_SETS else reps
            part, praw = _table("bcd", (data,), r, {"loss": loss, "max_iter": 1000},
                                bcd_paper, log, adult_params={"max_iter": 800},
                                groups=groups)
            rows += part
            raw.update(praw)
    if rows:
        write_results(out_dir, "gamma_cv_bcd", list(rows[0]), rows, notes + [
            "BCD, Hu & Kwok 2015 protocol (max_iter 1000, 800 on adult, tol 1e-5). paper: "
            "the SDPT3 NPKL column of SimpleNPKL JMLR 2011 Table 2 (another constraint "
            "protocol and a tuned C: a reference only).",
            f"Machine load (5-min average) at start / end: {load0:.1f} / "
            f"{os.getloadavg()[1]:.1f} on 2 cores."],
            title="gamma by constraint CV: NPKL-BCD", extra={"raw": raw})
    return rows
