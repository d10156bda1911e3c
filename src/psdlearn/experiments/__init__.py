"""Reproductions of the papers' tables and figures (``psdlearn reproduce NAME``).

Each module holds one protocol with the paper's numbers beside ours; ``run(out_dir,
quick=False, log=print)`` writes markdown, JSON and figures under ``out_dir``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

__all__ = ["REPRODUCTIONS", "reproduce"]

#: name -> (module, description)
REPRODUCTIONS = {
    "bcd-tables": ("bcd_tables", "seed 000 Tables III-VI (+ gamma effect, Figs. 2-3)"),
    "bcd-scaling": ("bcd_scaling", "seed 000 Fig. 4 / Table VII: time vs n"),
    "bcd-out-of-sample": ("bcd_out_of_sample", "seed 000 Fig. 5: out-of-sample accuracy"),
    "bcd-convergence": ("bcd_convergence", "seed 000 Figs. 2-3: objective vs sweeps/time"),
    "admm-table2": ("admm_table2", "seed 001 Table 2 and Figs. 1-2 (+ ADMM start study)"),
    "admm-scaling": ("admm_scaling", "seed 001 Figs. 3-4: time vs n and vs constraints"),
    "nystrom-table1": ("nystrom_table1", "seed 003 Table 1 (+ Table A1): single kernel"),
    "nystrom-table2": ("nystrom_table2", "seed 003 Table 2: multiple kernels"),
    "nystrom-labels": ("nystrom_labels", "seed 003 Fig. 1 (alignment vs lambda), Fig. 2 "
                       "(mnist, labels)"),
    "yeung-xor": ("yeung_xor", "seed 004 Fig. 1 and Table 1: XOR embeddings, J vs m"),
    "yeung-table2": ("yeung_table2", "seed 004 Table 2: J on MNIST digit sets"),
    "psdboost-synthetic": ("psdboost_synthetic", "seed 002 Fig. 1 (left): Opt(D1) vs "
                           "iterations, 600 points in 24-d"),
    "psdboost-pendigits": ("psdboost_pendigits", "seed 002 Pendigits 1-NN error and "
                           "Fig. 1 (right)"),
}


def reproduce(name, out_dir="reproductions", quick=False, log=print):
    """Run the reproduction ``name`` and write its results under ``out_dir``.

    ``quick=True`` runs a reduced protocol (fewer sets and repetitions) in about a minute;
    its results go to ``out_dir/quick``.
    """
    if name not in REPRODUCTIONS:
        raise ValueError(f"unknown reproduction {name!r}; choose from {sorted(REPRODUCTIONS)}.")
    out = Path(out_dir) / ("quick" if quick else "")
    out.mkdir(parents=True, exist_ok=True)
    module = importlib.import_module(f"psdlearn.experiments.{REPRODUCTIONS[name][0]}")
    return module.run(out, quick=quick, log=log)
