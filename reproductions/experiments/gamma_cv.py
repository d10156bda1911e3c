"""gamma chosen by constraint cross-validation, beside gamma = 1 and the papers' numbers.

Neither Hu & Kwok 2013 nor Hu & Kwok 2015 gives ``gamma``. On each constraint draw of the
protocol (:mod:`reproductions.experiments.protocol`: 0.6n must-link + 0.6n cannot-link pairs
from the labels, seed = repetition), :class:`psdlearn.model_selection.NPKLCV` chooses
``gamma`` from those training constraints alone (3 folds of
:class:`~psdlearn.model_selection.ConstraintKFold`, shuffled with the draw's seed; the
default grid of 8 values, a tenth to 100 times ``gamma='auto'`` (3 to 3000 ``gamma_0`` for
the margin losses, 10 to 10^4 ``max L_ii`` for pcp)), refits on all of them, and the
kernel is clustered and scored by the Rand index like the ``gamma = 1`` column on the
same draws. The labels are used for the Rand index only.

**The protocol's rule** (:data:`CV_SCORING`, :data:`CV_SELECTION`): the held-out score
is :class:`~psdlearn.model_selection.ClusteringScorer` (the balanced accuracy, on the
held-out pairs, of the k-means partition into the protocol's number of clusters: an
estimate of the quantity the table reports, the partition's Rand index), and ``gamma`` is
the best mean score (:func:`~psdlearn.model_selection.select_gamma`). The previous score,
the AUC of the cosine (:meth:`psdlearn.NPKL.score`), ranks pairs rather than partitioning
them; where the two disagree (heart: the AUC often peaks at the grid's bottom, near
``gamma_0``, where the kernel is nearly of rank one and the partition is worst) it chose
badly. The one-standard-error rule toward smaller ``gamma`` was measured too and is not
used: with 3 folds the standard error is wide and the rule reaches down to that same
degenerate bottom (heart; chessboard too on the former 4 x 4 board, not on the 3 x 3 one).
``run(compare=True)`` scores the four combinations (AUC or clustering, best or one-SE) on
the same fold fits and refits each chosen ``gamma`` with the protocol's fit, so that the
rules are compared on the same draws (``reproductions/gamma_cv_bcd.md``).

Two tables: ADMM on the pcp loss (Hu & Kwok 2013 Table 2) and BCD on the margin losses
(Hu & Kwok 2015; our ``bcd-tables`` protocol).
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from psdlearn.constraints import PairwiseConstraints
from psdlearn.model_selection import NPKLCV, ClusteringScorer, ConstraintKFold, select_gamma
from reproductions.experiments.protocol import (
    ADULT_SETS,
    SMALL_SETS,
    load_set_with_graph,
    run_repetitions,
    summarize,
)
from reproductions.experiments.report import write_results

__all__ = ["BCD_TABLES", "CV_REQUIRE_CONVERGENCE", "CV_SCORING", "CV_SELECTION", "RULES",
           "cv_cell", "cv_count", "cv_records", "cv_reduced_note", "rerun_rows", "run"]

#: Held-out score of the CV column: "clustering" (ClusteringScorer with the protocol's
#: number of clusters) or "auc" (NPKL.score).
CV_SCORING = "clustering"
#: Selection rule of the CV column (select_gamma): "best" or "one_se".
CV_SELECTION = "best"
#: NPKLCV(require_convergence=...) of the CV column: choose among the gammas whose fold
#: fits converged (to cv_tol) within the protocol's max_iter.
CV_REQUIRE_CONVERGENCE = True
#: The rules compared by ``compare=True``: name -> (score, selection).
RULES = {"auc best": ("auc", "best"), "auc one-SE": ("auc", "one_se"),
         "clustering best": ("clustering", "best"),
         "clustering one-SE": ("clustering", "one_se")}


class _Scores:
    """Scorer for NPKLCV that returns ``primary`` and records the other score too."""

    def __init__(self, primary, n_clusters, both):
        self.primary = primary
        self.both = both
        self.clustering = ClusteringScorer(n_clusters)
        self.values = {"auc": [], "clustering": []}

    def __call__(self, estimator, X, constraints):
        for name in ("auc", "clustering"):
            if name == self.primary or self.both:
                value = (estimator.score(X, constraints) if name == "auc"
                         else self.clustering(estimator, X, constraints))
                self.values[name].append(value)
        return self.values[self.primary][-1]

    def table(self, name, n_gammas):
        """(n_gammas, n_folds) table; NPKLCV scores fold by fold, gamma within fold."""
        return np.asarray(self.values[name]).reshape(-1, n_gammas).T


def cv_records(y, laplacian, reps, *, folds=3, groups="pairs", scoring=None, selection=None,
               compare=False, **npkl_params):
    """NPKLCV on the protocol draws of seeds ``0 .. reps - 1``.

    ``scoring`` ("clustering" or "auc") and ``selection`` ("one_se" or "best") default to
    :data:`CV_SCORING` and :data:`CV_SELECTION`. With ``compare=True`` both scores are
    recorded on the same fold fits, and every rule of :data:`RULES` chooses a ``gamma``
    that is refit by the protocol's own fit (:func:`run_repetitions`, one draw).

    Returns a list of dict with keys rand, gamma, gamma0, cpu_s, gammas, scores (the table
    that chose), edge (the choice is an end of the grid), and with ``compare`` auc_scores,
    clustering_scores and rules (name -> {"gamma", "rand"}).
    """
    scoring = CV_SCORING if scoring is None else scoring
    selection = CV_SELECTION if selection is None else selection
    if scoring not in ("clustering", "auc"):
        raise ValueError(f"scoring must be 'clustering' or 'auc', got {scoring!r}.")
    out = []
    n_classes = len(np.unique(y))
    from psdlearn.cluster import kernel_kmeans
    from psdlearn.metrics import pairwise_accuracy

    for seed in range(reps):
        C = PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=seed)
        cv = ConstraintKFold(folds, shuffle=True, random_state=seed, groups=groups)
        scorer = _Scores(scoring, n_classes, compare)
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = NPKLCV(graph="precomputed", cv=cv, random_state=seed, scoring=scorer,
                           selection=selection, require_convergence=CV_REQUIRE_CONVERGENCE,
                           **npkl_params).fit(laplacian, C)
        cpu = time.process_time() - c0
        labels = kernel_kmeans(model.embedding_, n_classes, n_init=20, random_state=seed)
        grid = model.gammas_
        rec = {"rand": pairwise_accuracy(y, labels), "gamma": model.gamma_,
               "gamma0": model.gamma0_, "cpu_s": cpu, "gammas": grid.tolist(),
               "scores": model.scores_.tolist(),
               "converged": model.cv_converged_.tolist(),
               "edge": bool(model.gamma_ in (grid[0], grid[-1]))}
        if compare:
            tables = {name: scorer.table(name, len(grid)) for name in ("auc", "clustering")}
            rec.update(auc_scores=tables["auc"].tolist(),
                       clustering_scores=tables["clustering"].tolist(), rules={})
            fits = {}
            ok = model.cv_converged_.all(axis=1)
            rows = (np.flatnonzero(ok) if CV_REQUIRE_CONVERGENCE and ok.any()
                    else np.arange(len(grid)))
            for rule, (score, sel) in RULES.items():
                g = float(grid[rows[select_gamma(tables[score][rows], sel)]])
                if g not in fits:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        fits[g] = run_repetitions(None, y, n_neighbors=0, reps=1, seed0=seed,
                                                  laplacian=laplacian,
                                                  **{**npkl_params, "gamma": g})[0]["rand"]
                rec["rules"][rule] = {"gamma": g, "rand": fits[g]}
        out.append(rec)
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


def _rule_cell(records, rule):
    rands = 100 * np.array([r["rules"][rule]["rand"] for r in records])
    gammas = [r["rules"][rule]["gamma"] for r in records]
    return f"{rands.mean():.2f} ± {rands.std():.2f} (gamma {np.median(gammas):.3g})"


def _table(name, sets, reps, params, paper, log, adult_params=None, groups="pairs",
           compare=False, scoring=None, selection=None):
    rows, raw = [], {}
    for data in sets:
        loaded = load_set_with_graph(data)
        if loaded is None:
            continue
        X, y, k, L = loaded
        kw = {**params, **(adult_params if data in ADULT_SETS and adult_params else {})}
        base = run_repetitions(X, y, n_neighbors=k, reps=reps, laplacian=L, **kw)
        cv = cv_records(y, L, reps, groups=groups, compare=compare, scoring=scoring,
                        selection=selection, **kw)
        b, c = summarize(base), summarize(cv)
        diff = c["rand_mean"] - b["rand_mean"]
        row = {
            "dataset": data, "n": len(y), "loss": kw.get("loss", "hinge"),
            "gamma = 1 rand %": f"{b['rand_mean']:.2f} ± {b['rand_std']:.2f}",
            "gamma by constraint CV rand %": cv_cell(cv),
            "CV - (gamma = 1)": f"{diff:+.2f}",
            "within std": "yes" if diff >= -b["rand_std"] - 1e-9 else "NO",
            "paper %": paper(data, kw.get("loss")),
        }
        if compare:
            row.update({f"{rule} %": _rule_cell(cv, rule) for rule in RULES})
        row.update({
            "gamma_0": ("-" if cv[0]["gamma0"] is None
                        else f"{np.median([r['gamma0'] for r in cv]):.3g}"),
            "chosen at grid end": f"{sum(r['edge'] for r in cv)}/{len(cv)}",
            "CV CPU s / fit CPU s": f"{c['cpu_mean']:.1f} / {b['cpu_mean']:.2f}",
            "reps": reps,
        })
        rows.append(row)
        raw[f"{data}/{kw.get('loss')}"] = {"gamma1": base, "cv": cv}
        log(f"{name} {data}: {row}")
    return rows, raw


def _notes(groups, compare, cv_desc):
    notes = [
        "Same constraint draws (seeds 0 .. reps - 1) in every column. gamma by CV: NPKLCV, 3 "
        f"shuffled ConstraintKFold folds (groups={groups!r}), 8 gammas from a tenth to 100 "
        "times gamma='auto' (3 to 3000 gamma_0 for the margin losses, 10 to 10^4 max L_ii "
        "for pcp), fold fits to tol 1e-3 warm-started along the path, refit at the "
        f"protocol's tol; {cv_desc}; the chosen gamma's median over the draws in brackets. "
        "Chosen on the training constraints only; the labels score the Rand index only.",
        "within std: CV - (gamma = 1) >= -(std of gamma = 1 over the same draws), the "
        "target of issue 17.",
        "chosen at grid end: draws whose gamma is the smallest or largest of the grid.",
        "CV CPU s: the whole NPKLCV (24 fold fits, their scores, refit); fit CPU s: one "
        "gamma = 1 fit.",
    ]
    if compare:
        notes.append(
            "Rule columns: the four (held-out score, selection) rules chose on the same fold "
            "fits of each draw (auc = NPKL.score, the cosine AUC; clustering = "
            "ClusteringScorer; best = the best mean, ties to the largest gamma; one-SE = the "
            "smallest gamma within one standard error of the best), each choice refit by the "
            "protocol's own cold fit (run_repetitions), so they differ from the CV column "
            "(NPKLCV's refit starts from a fold fit) by the start only. Every rule chooses "
            "among the gammas whose fold fits converged (to tol 1e-3 within max_iter) when "
            f"the run requires it (require_convergence={CV_REQUIRE_CONVERGENCE}). 'auc best' "
            "without that requirement is the rule before issue 17's second pass.")
    return notes


def _cv_desc(scoring, selection):
    score = ("ClusteringScorer (balanced held-out pair accuracy of the k-means partition)"
             if scoring == "clustering" else "NPKL.score (cosine AUC)")
    rule = ("one-standard-error rule toward smaller gamma" if selection == "one_se"
            else "best mean")
    only = ("only gammas whose fold fits all converged are candidates; "
            if CV_REQUIRE_CONVERGENCE else "")
    return f"{only}held-out score: {score}, selection: {rule}"


def run(out_dir, quick=False, log=print, *, reps=None, adult_reps=None, admm_sets=None,
        bcd_sets=None, bcd_losses=("hinge", "squared_hinge", "square", "linear"),
        groups="pairs", compare=True, adult_compare=False, tables=("admm", "bcd"),
        name_suffix=""):
    """Write ``gamma_cv_admm.*`` and ``gamma_cv_bcd.*`` (``name_suffix`` appended) in
    ``out_dir``.

    ``reps``: draws on the small sets (default 5, 2 with ``quick``); ``adult_reps``: on
    adult (default ``min(reps, 3)``; a mapping set -> draws sets them one by one).
    ``compare``: the rule columns on the small sets; ``adult_compare`` (a bool, or the
    names of the adult sets) on adult (one protocol refit per distinct chosen gamma and
    draw).
    ``tables``: which of "admm", "bcd" to run. Each table is rewritten after every set.
    """
    from reproductions.experiments.admm_table2 import PAPER_TABLE2

    reps = (2 if quick else 5) if reps is None else int(reps)
    if not isinstance(adult_reps, dict):
        adult_reps = min(reps, 3) if adult_reps is None else int(adult_reps)

    def draws(data):
        if data not in ADULT_SETS:
            return reps
        return adult_reps.get(data, min(reps, 3)) if isinstance(adult_reps, dict) \
            else adult_reps

    def compared(data):
        if data not in ADULT_SETS:
            return compare
        return data in adult_compare if not isinstance(adult_compare, bool) else adult_compare
    load0 = os.getloadavg()[1]
    notes = _notes(groups, compare, _cv_desc(CV_SCORING, CV_SELECTION))

    def admm_paper(data, loss):
        p = PAPER_TABLE2.get(data)
        return "-" if p is None else f"{p[0]:.2f} ± {p[1]:.2f}"

    def write(kind, rows, raw, extra_notes, title):
        load = f"Machine load (5-min average) at start / now: {load0:.1f} / " \
               f"{os.getloadavg()[1]:.1f} on 2 cores."
        write_results(out_dir, f"gamma_cv_{kind}{name_suffix}", list(rows[0]), rows,
                      notes + extra_notes + [load], title=title, extra={"raw": raw})

    out = []
    if "admm" in tables:
        admm_sets = (("iris", "a1a") if quick else SMALL_SETS + ADULT_SETS) \
            if admm_sets is None else tuple(admm_sets)
        rows, raw = [], {}
        for data in admm_sets:
            part, praw = _table("admm", (data,), draws(data),
                                {"loss": "pcp", "solver": "admm", "max_iter": 500},
                                admm_paper, log, adult_params={"max_iter": 100},
                                groups=groups, compare=compared(data))
            rows += part
            raw.update(praw)
            if rows:
                write("admm", rows, raw, [
                    "ADMM, pcp loss, Hu & Kwok 2013 protocol (max_iter 500, 100 on adult); "
                    "paper: Hu & Kwok 2013 Table 2, KL_ADMM (gamma not given)."],
                    "gamma by constraint CV: NPKL-ADMM (pcp)")
        out += rows
    if "bcd" in tables:
        bcd_sets = (("iris", "sonar") if quick else SMALL_SETS) if bcd_sets is None \
            else tuple(bcd_sets)
        rows, raw = [], {}
        for data in bcd_sets:
            for loss in bcd_losses:
                part, praw = _table("bcd", (data,), draws(data),
                                    {"loss": loss, "max_iter": 1000, "tol": 1e-5},
                                    _bcd_paper, log, adult_params={"max_iter": 800},
                                    groups=groups, compare=compared(data))
                rows += part
                raw.update(praw)
            if rows:
                write("bcd", rows, raw, [
                    "BCD, Hu & Kwok 2015 protocol (max_iter 1000, 800 on adult, tol 1e-5). "
                    "paper: the SimpleNPKL JMLR 2011 Table 2 column of the loss (hinge: "
                    "NPKL+HL, linear: NPKL+LL, squared hinge: SimpleNPKL+SHL; another "
                    "constraint protocol and a tuned C: a reference only)."],
                    "gamma by constraint CV: NPKL-BCD")
        out += rows
    return out


def _bcd_paper(data, loss):
    from reproductions.experiments.bcd_tables import JMLR_TABLE2

    col = {"hinge": 2, "linear": 1, "squared_hinge": 4}.get(loss)
    ref = JMLR_TABLE2.get(data)
    return "-" if ref is None or col is None else f"{ref[col]:.1f} (JMLR 2011)"


#: The BCD tables of this reproduction as they were run: file -> (draws, losses, groups,
#: rule columns, CV column's score, its selection).
BCD_TABLES = {
    "gamma_cv_bcd": (10, ("hinge", "squared_hinge", "square", "linear"), "pairs", True,
                     "clustering", "one_se"),
    "gamma_cv_bcd_npklcv": (10, ("hinge", "squared_hinge", "square", "linear"), "pairs",
                            False, "clustering", "best"),
    "gamma_cv_bcd_components": (3, ("hinge",), "components", False,
                                "auc", "best"),
}


def rerun_rows(out_dir, table, sets, why, log=print):
    """Rerun the rows of ``sets`` in the BCD table ``table`` (a key of :data:`BCD_TABLES`,
    with the draws, losses, split and rule it was run with) and put them in place of
    theirs, keeping the other rows and the notes; ``why`` names the reason in the note."""
    from reproductions.experiments._partial import replace_rows
    from reproductions.experiments.bcd_tables import _warm_up

    reps, losses, groups, compare, scoring, selection = BCD_TABLES[table]
    _warm_up()
    rows, raw = [], {}
    c0, w0, load0 = time.process_time(), time.perf_counter(), os.getloadavg()[1]
    for data in sets:
        for loss in losses:
            part, praw = _table("bcd", (data,), reps, {"loss": loss, "max_iter": 1000,
                                                       "tol": 1e-5},
                                _bcd_paper, log, groups=groups, compare=compare,
                                scoring=scoring, selection=selection)
            rows += part
            raw.update(praw)
    note = (f"Rows rerun on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
            f"{', '.join(sets)} ({why}); {reps} draws, CV column by the {scoring} score "
            f"and the {selection} selection as the other rows (require_convergence="
            f"{CV_REQUIRE_CONVERGENCE}: BCD fold fits converge, it changes nothing here); "
            f"{time.process_time() - c0:.0f} CPU s in {time.perf_counter() - w0:.0f} wall s, "
            f"load {load0:.1f} / {os.getloadavg()[1]:.1f}.")
    text = replace_rows(out_dir, table, lambda r: r["dataset"] in sets, rows, note, raw=raw,
                        label=("dataset", "loss"),
                        show=("gamma = 1 rand %", "gamma by constraint CV rand %"))
    log(text)
    return rows
