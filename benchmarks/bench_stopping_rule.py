"""Default NPKL fits before and after a change of BCD's stopping rule, on the bundled sets.

Run (from the repository root): ``PYTHONPATH=src:. python benchmarks/bench_stopping_rule.py
--before REF [--seeds 3] [--name NAME]``. Writes ``benchmarks/results/NAME.{md,json}``
(default ``stopping_rule``).

The same fits run in two source trees, each in a process of its own: ``before``, the
``src`` of the commit ``REF`` (``git archive``), and ``after``, this checkout's.
Protocol: the six small bundled sets of ``bench_float32.py`` (``BUNDLED``), the losses
``"hinge"`` and ``"square"``, seeds ``0 .. seeds - 1``;
``PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=seed)`` and
``NPKL(loss=loss, random_state=seed)`` with every other parameter at its default (the
certificate on); ``kernel_kmeans(embedding_, n_clusters=classes, random_state=0)``
against the classes for the Rand index. A row is a fit whose sweeps or objective differ
between the two trees; the notes count the fits that are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from _common import write_results
from bench_defaults_cost import REPO, _extract, short_ref
from bench_float32 import BUNDLED

COLUMNS = ["set", "loss", "seed", "sweeps_before", "sweeps_after", "objective_change",
           "gap_before", "gap_after", "certified_before", "certified_after", "rand_before",
           "rand_after"]


def worker(seeds):
    """The fits of the protocol in the tree on ``sys.path``; one JSON list on stdout."""
    import warnings

    import numpy as np
    from sklearn.metrics import rand_score

    import psdlearn as pl

    out = []
    for name in BUNDLED:
        X, y = pl.datasets.load(name)
        for loss in ("hinge", "square"):
            for seed in range(seeds):
                C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6,
                                                       random_state=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # an uncertified fit is in the table
                    model = pl.NPKL(loss=loss, random_state=seed).fit(X, C)
                    cert = model.certificate_
                labels = pl.kernel_kmeans(model.embedding_, n_clusters=len(np.unique(y)),
                                          random_state=0)
                out.append({"set": name, "loss": loss, "seed": seed,
                            "sweeps": int(model.n_iter_), "objective": float(model.objective()),
                            "gap": float(cert.relative_gap), "certified": bool(cert.certified),
                            "rand": float(rand_score(y, labels))})
    print(json.dumps(out))


def _run(src, seeds):
    env = {**os.environ, "PYTHONPATH": str(src)}
    res = subprocess.run([sys.executable, __file__, "--worker", str(seeds)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--before", required=False, default="main")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--name", default="stopping_rule")
    args = ap.parse_args()
    if args.worker is not None:
        return worker(args.worker)
    ref = short_ref(args.before)
    with tempfile.TemporaryDirectory() as tmp:
        before = _run(_extract(ref, tmp), args.seeds)
    after = _run(REPO / "src", args.seeds)
    rows, same = [], 0
    for b, a in zip(before, after, strict=True):
        if b["sweeps"] == a["sweeps"] and b["objective"] == a["objective"]:
            same += 1
            continue
        rows.append({"set": b["set"], "loss": b["loss"], "seed": b["seed"],
                     "sweeps_before": b["sweeps"], "sweeps_after": a["sweeps"],
                     "objective_change": (a["objective"] - b["objective"]) / abs(b["objective"]),
                     "gap_before": b["gap"], "gap_after": a["gap"],
                     "certified_before": b["certified"], "certified_after": a["certified"],
                     "rand_before": b["rand"], "rand_after": a["rand"]})
    flips = sum(r["certified_before"] != r["certified_after"] for r in rows)
    rand = sum(r["rand_before"] != r["rand_after"] for r in rows)
    notes = [
        f"before = {ref}, after = this checkout. {len(after)} fits: {same} with the same "
        f"sweeps and objective in both trees, {len(rows)} listed (objective_change = "
        f"relative change of objective(), after minus before); {flips} changed certified "
        f"flag, {rand} changed Rand index.",
        f"Protocol: {', '.join(BUNDLED)}; hinge and square; seeds 0-{args.seeds - 1}; "
        "0.6n + 0.6n pairs from the labels; NPKL(loss=..., random_state=seed) with its "
        "defaults; Rand index of kernel_kmeans on the embedding (random_state=0)."]
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
