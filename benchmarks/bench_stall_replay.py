"""BCD's stall rule replayed on long fine-level histories: where it stops, and how far above
the optimum, for several window lengths and thresholds.

Run (from the repository root): ``PYTHONPATH=src:. python benchmarks/bench_stall_replay.py
[--histories PATH] [--name NAME]``. Reads ``benchmarks/results/stall_replay_histories.json``
(``{"histories": {n: [f_0, f_1, ...]}}``: the objective after each sweep of a run that did
not stop, described in its ``"description"``), writes ``benchmarks/results/NAME.{md,json}``
(default ``stall_replay``).

For each history, window length ``W`` and check interval ``e``: the first sweep ``t``, a
multiple of ``e`` with ``t >= 3 W``, at which ``psdlearn.npkl.bcd.stalled`` of
``f[t - 3W], f[t - 2W], f[t - W], f[t]`` holds for the threshold ``stall_tol`` (with
``max_iter = 1000``), and the objective's excess there over the lowest of the history,
``(f_t - f_min) / |f_min|``, in units of ``stall_tol``. A rule that estimates the
remaining decrease well stops at an excess near 1 (below 1: later than needed; far above:
too early).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from _common import RESULTS, write_results

from psdlearn.npkl.bcd import stalled

#: (window, check interval): windows of 25 checked every 25th sweep (before session 14),
#: and shorter ones
RULES = ((25, 25), (10, 10), (10, 1), (8, 8), (5, 5), (5, 1))
THRESHOLDS = (1e-7, 1e-8, 1e-9, 1e-10)
MAX_ITER = 1000


def first_stop(f, window, every, stall_tol):
    """The sweep at which the rule first stops the run ``f`` (None if it never does)."""
    for t in range(3 * window, len(f)):
        if t % every == 0 and stalled([f[t - 3 * window], f[t - 2 * window], f[t - window],
                                       f[t]], (MAX_ITER - t) / window, stall_tol):
            return t
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--histories", default=str(RESULTS / "stall_replay_histories.json"))
    ap.add_argument("--name", default="stall_replay")
    args = ap.parse_args()
    data = json.loads(Path(args.histories).read_text())
    rows = []
    for (window, every) in RULES:
        row = {"window": window, "checked_every": every}
        for n, history in data["histories"].items():
            f = np.asarray(history, dtype=np.float64)
            f_min = f.min()
            for tol in THRESHOLDS:
                t = first_stop(f, window, every, tol)
                row[f"n={int(n):.0e} tol={tol:.0e}"] = (
                    "none" if t is None else f"{(f[t] - f_min) / abs(f_min) / tol:.2f} @ {t}")
        rows.append(row)
    columns = ["window", "checked_every", *[k for k in rows[0] if k.startswith("n=")]]
    notes = ["Cell: the excess over the history's lowest objective at the stop, in units of "
             "the threshold, @ the sweep of the stop ('none': never).",
             "Histories: " + data.get("description", "")]
    write_results(args.name, columns, rows, notes)


if __name__ == "__main__":
    main()
