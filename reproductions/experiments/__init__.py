"""Reproductions of the papers' tables and figures (``python -m reproductions NAME``).

Each module holds one protocol with the paper's numbers beside ours; ``run(out_dir,
quick=False, log=print)`` writes markdown, JSON and figures under ``out_dir``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from reproductions import RESULTS_DIR

__all__ = ["REPRODUCTIONS", "reproduce"]

#: name -> (module, description)
REPRODUCTIONS = {
    "bcd-tables": ("bcd_tables", "Hu & Kwok 2015, Tables III-VI (+ gamma effect, Figs. 2-3)"),
    "bcd-scaling": ("bcd_scaling", "Hu & Kwok 2015, Fig. 4 / Table VII: time vs n"),
    "bcd-out-of-sample": ("bcd_out_of_sample", "Hu & Kwok 2015, Fig. 5: out-of-sample accuracy"),
    "bcd-convergence": ("bcd_convergence", "Hu & Kwok 2015, Figs. 2-3: objective vs sweeps/time"),
    "admm-table2": ("admm_table2", "Hu & Kwok 2013, Table 2 and Figs. 1-2 (+ ADMM start study)"),
    "admm-mfpc": ("admm_mfpc", "Hu & Kwok 2013, Table 2: the MFPC baseline, and MFPC vs the "
                  "size of U"),
    "admm-chessboard": ("admm_chessboard", "Hu & Kwok 2013, chessboard: generator designs "
                        "against the papers' numbers"),
    "gamma-cv": ("gamma_cv", "gamma by constraint cross-validation (NPKLCV) beside gamma = 1, "
                 "ADMM pcp and BCD"),
    "admm-scaling": ("admm_scaling", "Hu & Kwok 2013, Figs. 3-4: time vs n and vs constraints"),
    "nystrom-table1": ("nystrom_table1", "Lan et al. 2017, Table 1 (+ Table A1): single kernel"),
    "nystrom-table2": ("nystrom_table2", "Lan et al. 2017, Table 2: multiple kernels"),
    "nystrom-baselines": ("nystrom_baselines", "Lan et al. 2017, Tables 1-2: Spectral, Cluster, "
                          "ABMKL and CABMKL baselines; SVM C = 1 and by CV"),
    "nystrom-labels": ("nystrom_labels", "Lan et al. 2017, Fig. 1 (alignment vs lambda), Fig. 2 "
                       "(mnist, labels)"),
    "yeung-xor": ("yeung_xor", "Yeung et al. 2007, Fig. 1 and Table 1: XOR embeddings, J vs m"),
    "yeung-suspects": ("yeung_suspects", "Yeung et al. 2007, Table 1: J against m for the "
                       "eigenvalue cut-off and the RBF width, chosen by S alone"),
    "yeung-table2": ("yeung_table2", "Yeung et al. 2007, Table 2: J on MNIST digit sets"),
    "psdboost-synthetic": ("psdboost_synthetic", "Shen et al. 2008, Fig. 1 (left): Opt(D1) vs "
                           "iterations, 600 points in 24-d"),
    "psdboost-readings": ("psdboost_readings", "Shen et al. 2008, Pendigits: k neighbours, C by "
                          "CV and triplet subsamples against the paper's 1.3%"),
    "psdboost-pendigits": ("psdboost_pendigits", "Shen et al. 2008, Pendigits 1-NN error and "
                           "Fig. 1 (right)"),
}


def reproduce(name, out_dir=None, quick=False, log=print):
    """Run the reproduction ``name`` and write its results under ``out_dir``.

    ``out_dir=None`` is the ``reproductions/`` directory of the checkout, whatever the
    working directory.

    ``quick=True`` runs a reduced protocol (fewer sets and repetitions) in about a minute;
    its results go to ``out_dir/quick``.
    """
    if name not in REPRODUCTIONS:
        raise ValueError(f"unknown reproduction {name!r}; choose from {sorted(REPRODUCTIONS)}.")
    out = Path(RESULTS_DIR if out_dir is None else out_dir) / ("quick" if quick else "")
    out.mkdir(parents=True, exist_ok=True)
    module = importlib.import_module(f"reproductions.experiments.{REPRODUCTIONS[name][0]}")
    return module.run(out, quick=quick, log=log)
