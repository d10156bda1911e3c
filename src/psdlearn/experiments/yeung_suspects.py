"""Yeung, Chang & Dai (2007) Table 1 at large m: the suspects of our gap (3.52 against 4.75).

XOR, n = 8,000, ``|S| = 50`` similar pairs, m = 800 landmarks, 3 iterations of the
extension (:mod:`psdlearn.experiments.yeung_xor`). One suspect at a time is moved away from
our default (every eigenvalue above ``1e-10 lambda_max``, the median-heuristic width,
``K = 10`` neighbours):

- the eigenvalue cut-off ``EIGEN_RTOL`` of :mod:`psdlearn.kml.beta` (patched for the fit):
  ``1e-14`` and ``1e-6`` instead of ``1e-10`` (an integer ``n_components`` cannot raise
  ``q``: it keeps at most the eigenpairs above the cut-off);
- the RBF width: ``kernel_gamma`` times ``1/4`` and ``4``;
- ``K``: 5 and 40.

J (eq. 17) uses every label, so it only reports. The setting is chosen by a criterion that
uses S alone: the model is refit on 40 of the 50 pairs, and scored by the ratio of the mean
distance between random pairs of points to the mean distance within the 10 held-out
similar pairs (large = held-out similar pairs are close relative to the data's spread).
"""

from __future__ import annotations

import os
from unittest import mock

import numpy as np

from psdlearn.constraints import PairwiseConstraints
from psdlearn.datasets import make_xor
from psdlearn.experiments.report import write_results
from psdlearn.experiments.yeung_xor import N_ITER, PAPER_TABLE1
from psdlearn.kml import KernelMetricLearner, beta
from psdlearn.kml.estimator import median_heuristic_kernel_gamma
from psdlearn.metrics import class_separation

__all__ = ["SETTINGS", "heldout_ratio", "run"]

#: name -> changes to the default of the Table 1 reproduction.
SETTINGS = {
    "default": {},
    "cut-off 1e-14": {"eigen_rtol": 1e-14},
    "cut-off 1e-6": {"eigen_rtol": 1e-6},
    "gamma x 1/4": {"gamma_factor": 0.25},
    "gamma x 4": {"gamma_factor": 4.0},
    "K = 5": {"n_neighbors": 5},
    "K = 40": {"n_neighbors": 40},
}
M = 800
HELD_OUT = 10


def heldout_ratio(Z, pairs, rng, n_random=20000):
    """Mean distance of random point pairs over that of the held-out similar ``pairs``."""
    i, j = rng.integers(0, len(Z), (2, n_random))
    spread = np.linalg.norm(Z[i] - Z[j], axis=1).mean()
    within = np.linalg.norm(Z[pairs[:, 0]] - Z[pairs[:, 1]], axis=1).mean()
    return float(spread / within)


def _fit(X, C, gamma, setting, seed):
    params = dict(setting)
    factor = params.pop("gamma_factor", 1.0)
    rtol = params.pop("eigen_rtol", beta.EIGEN_RTOL)
    model = KernelMetricLearner(kernel_gamma=gamma * factor, n_landmarks=M, n_iter=N_ITER,
                                n_components=None, random_state=seed, **params)
    with mock.patch.object(beta, "EIGEN_RTOL", rtol):
        return model.fit(X, C)


def run(out_dir, quick=False, log=print):
    """J and the held-out S criterion per setting; write ``yeung_suspects.{md,json}``."""
    reps = 1 if quick else 2
    settings = {k: SETTINGS[k] for k in ("default", "cut-off 1e-14")} if quick else SETTINGS
    X, y = make_xor(8000, random_state=0)
    gamma = median_heuristic_kernel_gamma(X, random_state=0)
    load = [os.getloadavg()[1]]
    raw = {name: {"J": [], "criterion": [], "q": []} for name in settings}
    for rep in range(reps):
        C = PairwiseConstraints.from_labels(y, n_must=50, n_cannot=0, random_state=rep)
        rng = np.random.default_rng(rep)
        held = rng.permutation(C.n_pairs)
        train = PairwiseConstraints(C.pairs[held[HELD_OUT:]], C.signs[held[HELD_OUT:]],
                                    n_samples=len(y))
        for name, setting in settings.items():
            model = _fit(X, C, gamma, setting, rep)
            raw[name]["J"].append(class_separation(model.embedding_, y))
            raw[name]["q"].append(int(model.n_components_))
            part = _fit(X, train, gamma, setting, rep)
            raw[name]["criterion"].append(
                heldout_ratio(part.embedding_, C.pairs[held[:HELD_OUT]], rng))
            log(f"rep {rep} {name}: J {raw[name]['J'][-1]:.3f} q {raw[name]['q'][-1]} "
                f"criterion {raw[name]['criterion'][-1]:.3f}")
    load.append(os.getloadavg()[1])
    chosen = max(settings, key=lambda k: np.mean(raw[k]["criterion"]))
    rows = [{"setting": name, "q (mean)": f"{np.mean(r['q']):.0f}",
             "J (ours)": f"{np.mean(r['J']):.4f} ± {np.std(r['J']):.2f}",
             "held-out S criterion": f"{np.mean(r['criterion']):.3f}",
             "chosen by S": "yes" if name == chosen else ""}
            for name, r in raw.items()]
    paper = PAPER_TABLE1[M]
    notes = [
        f"m = {M}, n = 8000, |S| = 50, {reps} random S (seeds 0..{reps - 1}; Table 1: 10), "
        f"{N_ITER} iterations of the extension; median-heuristic kernel_gamma = {gamma:.4g}.",
        f"Paper, m = {M}: J = {paper[0]:.4f} ± {paper[1]:.2f}; our Table 1 run: 3.5211 ± 0.77.",
        f"Held-out S criterion: refit on {50 - HELD_OUT} pairs, mean distance of 20,000 random "
        f"point pairs over the mean distance of the {HELD_OUT} held-out similar pairs; the "
        "setting with the largest mean is 'chosen by S'. J uses all labels and only reports.",
        "Machine load (5-minute average) at start and end: "
        + ", ".join(f"{v:.1f}" for v in load) + " on 2 cores.",
    ]
    text = write_results(out_dir, "yeung_suspects", list(rows[0].keys()), rows, notes,
                         title="Yeung et al. (2007) Table 1, m = 800: J against the eigenvalue "
                         "cut-off, the RBF width and K", extra={"raw": raw})
    log(text)
    return rows
