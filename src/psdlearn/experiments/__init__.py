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
