"""Shen, Welsh & Wang (2008), section 6: Pendigits 1, 5, 7, 9, 1-NN error, and Fig. 1 (right).

Protocol (the paper's section 6): digits 1, 5, 7 and 9 of UCI Pendigits (16-d), 80 training
and 500 test samples per digit; the metric is learned by PSDBoost from the label triplets
of the training samples (nearest same-class and nearest other-class neighbour of each of
the 320 points, all kept) and by the SDP (3) (cvxpy), and each is scored by the 1-NN
error on the test samples, next to the Euclidean 1-NN error.

Our choices where the paper is silent: the test split of Pendigits holds only 336-364
samples per digit, so each repetition draws the 80 + 500 samples per digit without
overlap from train and test pooled (``split="all"``, LIBSVM ``pendigits.scale``:
Euclidean and trace-one metrics are scale invariant); the paper's one triplet per point
and ``C = 1 / (0.1 t)`` (the former ``"auto"`` default, ``LPBOOST_NU``); 10 random draws
(3 with ``quick``). Fig. 1 (right) is the dual objective of the first draw.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier

from psdlearn import datasets
from psdlearn.constraints import Triplets, triplets_from_labels
from psdlearn.psdboost import PSDBoost
from psdlearn.psdboost.estimator import LPBOOST_NU
from reproductions.experiments._plot import plot_lines
from reproductions.experiments.report import write_results

__all__ = ["run", "write_run"]

DIGITS = (1, 5, 7, 9)
N_TRAIN, N_TEST = 80, 500
#: Shen et al. (2008), section 6: 1-NN test error of PSDBoost and of the SDP solver, both 1.3%.
PAPER_ERROR = {"PSDBoost": 1.3, "SDP (3)": 1.3, "Euclidean": None}
#: Sensitivity rows (not the protocol): ``C = 1 / (nu t)``. ``nu = 1`` forces uniform
#: ``w`` (the mean margin is maximized); ``nu <= 1 / t`` would be the hard margin.
SENSITIVITY_NU = (0.02, 0.1, 0.3, 1.0)


def _error(Z_train, y_train, Z_test, y_test):
    knn = KNeighborsClassifier(n_neighbors=1).fit(Z_train, y_train)
    return 100.0 * float(np.mean(knn.predict(Z_test) != y_test))


def _draw(X, y, rng):
    train, test = [], []
    for d in DIGITS:
        idx = rng.permutation(np.flatnonzero(y == d))
        train.append(idx[:N_TRAIN])
        test.append(idx[N_TRAIN:N_TRAIN + N_TEST])
    return np.concatenate(train), np.concatenate(test)


def run(out_dir, quick=False, log=print):
    """Write ``psdboost_pendigits.{md,json}`` and ``psdboost_pendigits.png``."""
    load_start = os.getloadavg()[0]
    try:
        X, y = datasets.load("pendigits", split="all")
    except FileNotFoundError as err:
        log(f"pendigits absent, skipped: {err}")
        return []
    try:
        from psdlearn.psdboost.sdp import solve_sdp
    except ImportError:
        solve_sdp = None
    reps = 3 if quick else 10
    errors = {"PSDBoost": [], "SDP (3)": [], "Euclidean": []}
    sensitivity = {nu: [] for nu in SENSITIVITY_NU}
    per_rep, fig = [], None
    for rep in range(reps):
        rng = np.random.default_rng(rep)
        tr, te = _draw(X, y, rng)
        T = triplets_from_labels(X[tr], y[tr], random_state=rep)
        C = 1.0 / (LPBOOST_NU * len(T))  # the C of the committed tables
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            m = PSDBoost(C=C, random_state=rep).fit(X[tr], Triplets(T))
            boost_s = time.perf_counter() - t0
        errors["PSDBoost"].append(_error(m.transform(X[tr]), y[tr], m.transform(X[te]), y[te]))
        errors["Euclidean"].append(_error(X[tr], y[tr], X[te], y[te]))
        eig = np.linalg.eigvalsh(m.metric_)
        dj = X[tr][T[:, 0]] - X[tr][T[:, 1]]
        dk = X[tr][T[:, 0]] - X[tr][T[:, 2]]
        record = {"rep": rep, "triplets": len(T), "boost_iterations": m.n_iter_,
                  "boost_objective": m.objective_, "boost_s": boost_s,
                  "boost_converged": m.converged_,
                  # Protocol diagnostics: the margin of (3) only sees the hardest triplets.
                  "rank_1e-3": int(np.sum(eig > 1e-3 * eig[-1])),
                  # An interior-point w is positive everywhere: count the non-negligible.
                  "weighted_triplets": int(np.sum(m.dual_weights_ > 1e-6 * m.C_)),
                  "euclidean_satisfied": float(np.mean((dk**2).sum(1) > (dj**2).sum(1)))}
        if solve_sdp is not None:
            ref = solve_sdp(X[tr], T, m.C_)
            vals, vecs = np.linalg.eigh(ref.metric)
            L = (vecs * np.sqrt(np.clip(vals, 0, None))).T
            errors["SDP (3)"].append(_error(X[tr] @ L.T, y[tr], X[te] @ L.T, y[te]))
            record.update(sdp_objective=ref.objective, sdp_s=ref.solve_time,
                          metric_difference=float(np.linalg.norm(ref.metric - m.metric_)))
            if fig is None:
                fig = ref.objective
        for nu in SENSITIVITY_NU:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                alt = PSDBoost(C=1.0 / (nu * len(T)), random_state=rep).fit(X[tr], Triplets(T))
            sensitivity[nu].append(_error(alt.transform(X[tr]), y[tr], alt.transform(X[te]),
                                          y[te]))
        record.update({f"error {k}": v[-1] for k, v in errors.items() if v})
        per_rep.append(record)
        if rep == 0:
            # Fig. 1 (right) is the dual objective per column-generation iteration.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                h = PSDBoost(C=C, solver="column-generation", random_state=rep).fit(
                    X[tr], Triplets(T)).objective_history_
            plot_lines(out_dir / "psdboost_pendigits.png",
                       {"PSDBoost": (list(range(1, len(h) + 1)), h)}, xlabel="iterations",
                       ylabel="Opt(D1)", title="Pendigits 1/5/7/9, 320 triplets",
                       hlines={} if fig is None else {"SDP (3) optimum, cvxpy": fig})
        log(f"rep {rep}: " + ", ".join(f"{k} {v[-1]:.2f}%" for k, v in errors.items() if v))
    rows = []
    for name, errs in errors.items():
        if errs:
            rows.append({"metric": name, "1-NN test error % (mean)": float(np.mean(errs)),
                         "std": float(np.std(errs)), "paper %": PAPER_ERROR[name],
                         "draws": len(errs)})
    for nu, errs in sensitivity.items():
        rows.append({"metric": f"PSDBoost, C = 1/({nu:g} t) (sensitivity, not protocol)",
                     "1-NN test error % (mean)": float(np.mean(errs)),
                     "std": float(np.std(errs)), "paper %": None, "draws": len(errs)})
    notes = [
        "Paper: 1.3% test error for both PSDBoost and the SDP metric (one draw, protocol "
        "otherwise unstated); no Euclidean figure is given.",
        f"Mean PSDBoost iterations {np.mean([r['boost_iterations'] for r in per_rep]):.0f}, "
        f"time {np.mean([r['boost_s'] for r in per_rep]):.2f} s per fit"
        + ("" if solve_sdp is None else
           f"; SDP solve {np.mean([r['sdp_s'] for r in per_rep]):.2f} s, mean "
           f"|objective difference| "
           f"{np.mean([abs(r['sdp_objective'] - r['boost_objective']) for r in per_rep]):.2e}"
           f", mean ||X_sdp - X_boost||_F "
           f"{np.mean([r['metric_difference'] for r in per_rep]):.2e}") + ".",
        "PSDBoost fits use the default solver (solver='auto': the interior-point method at "
        "320 triplets); the figure is the column generation's Opt(D1) on the first draw.",
        "Samples: 80 train + 500 test per digit drawn from train and test pooled "
        "(the test split alone has fewer than 500 per digit).",
        "Protocol diagnostics (means over draws): the Euclidean metric already satisfies "
        f"{100 * np.mean([r['euclidean_satisfied'] for r in per_rep]):.1f}% of the "
        "nearest-neighbour triplets; only "
        f"{np.mean([r['weighted_triplets'] for r in per_rep]):.0f} of 320 triplets carry "
        "dual weight, and the learned metric has "
        f"{np.mean([r['rank_1e-3'] for r in per_rep]):.1f} of 16 eigenvalues above 1e-3 "
        "of the largest: (3) maximizes the margin of the hardest triplets and drops the "
        "directions that do not serve them, which 1-NN on the test digits still uses. "
        "Since the SDP metric gives the same error, the gap to the paper's single-draw "
        "1.3% is not the solver; the paper's C and draw are unstated (the data scaling "
        "is not a cause: pendigits.scale is the raw data / 100, a uniform factor that "
        "neither the trace-one metric nor 1-NN sees).",
    ]
    return write_run(out_dir, "psdboost_pendigits", rows, notes, load_start, log,
                     title="Shen, Welsh & Wang (2008), section 6: Pendigits 1/5/7/9, 1-NN "
                           "test error", extra={"per_draw": per_rep})


def write_run(out_dir, name, rows, notes, load_start, log, *, title, extra):
    """Write ``name.{md,json}`` (:func:`~reproductions.experiments.report.write_results`) with
    the machine's load as the last note, log the text and return ``rows``."""
    notes = [*notes,
             "Times are wall-clock; 1-minute load average at the start / end of the run: "
             f"{load_start:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (above "
             "about 1, other jobs shared the machine and the times are inflated)."]
    log(write_results(out_dir, name, list(rows[0].keys()), rows, notes, title=title,
                      extra=extra))
    return rows
