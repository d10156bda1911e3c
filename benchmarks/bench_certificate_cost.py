"""What the duality certificate of a default NPKL fit costs at 10^5-10^6 points.

A fit at a fixed rank gives its certificate at most a fifth of the solve's CPU seconds
(ten seconds at least); past that the bound is skipped and ``certificate_.note`` says so,
and the seconds already spent are lost. This script reports, per ``n``:

- the default fit (``NPKL(loss=..., rank=50, random_state=0)``, the certificate on at its
  default ``certificate_tol=1e-4``): wall and CPU seconds of the whole fit, the
  certificate's seconds inside it (``certificate_time_``), whether it certified, its
  relative gap, and its note when it was skipped;
- the same bound without a budget (``psdlearn.npkl.certificate.certify`` on the fitted
  embedding, the problem rebuilt from ``laplacian_``, ``side_info_`` and ``gamma_``, with
  ``laplacian_min_eig=delta`` as the fit passes it): its CPU and wall seconds and gap.
  For the square loss that is the work the fit's bound needs, against the budget the fit
  gives it; the hinge's bound in the fit also uses BCD's dual candidates, which
  ``certify`` does not get here (it fits multipliers by least squares instead).

Data: 10-d two Gaussians (``psdlearn.datasets.make_two_gaussians``, seed 0), 500
must-links and 500 cannot-links from the labels (``PairwiseConstraints.from_labels``,
seed 0), the default kNN graph. One fit at 2,000 points first compiles the kernels.

Run: ``python benchmarks/bench_certificate_cost.py [--ns 1e5 3e5 1e6] [--losses square
hinge] [--label after] [--append] [--name NAME]``. ``--label`` names the tree in the
table (run the script once per tree, the second time with ``--append``, to compare a
change: ``PYTHONPATH=<other tree>/src``). Writes ``results/<name>.{md,json}`` (default
``certificate_cost``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np
from _common import RESULTS, load_note, write_results

import psdlearn as pl
from psdlearn.npkl.certificate import certify
from psdlearn.npkl.problem import NPKLProblem

COLUMNS = ["tree", "n", "loss", "fit_s", "fit_cpu_s", "cert_in_fit_s", "certified", "gap",
           "skipped", "bound_cpu_s", "bound_s", "bound_gap", "sweeps"]


def _data(n):
    X, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=0)
    return X, pl.PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)


def run(n, loss, tree):
    X, C = _data(n)
    t0, c0 = time.perf_counter(), time.process_time()
    model = pl.NPKL(loss=loss, rank=50, random_state=0).fit(X, C)
    fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    cert = model.certificate_
    problem = NPKLProblem(model.laplacian_, model.side_info_.pairs,
                          model.side_info_.signs.astype(np.float64), loss, model.gamma_,
                          float(model.b))
    t0, c0 = time.perf_counter(), time.process_time()
    bound = certify(problem, model.embedding_, tol=model.certificate_tol,
                    laplacian_min_eig=model.delta)
    return {"tree": tree, "n": n, "loss": loss, "fit_s": round(fit_s, 1),
            "fit_cpu_s": round(fit_cpu, 1),
            "cert_in_fit_s": round(float(model.certificate_time_), 2),
            "certified": bool(cert.certified), "gap": float(cert.relative_gap),
            "skipped": cert.note or "", "bound_cpu_s": round(time.process_time() - c0, 2),
            "bound_s": round(time.perf_counter() - t0, 2),
            "bound_gap": float(bound.relative_gap), "sweeps": int(model.n_iter_)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", nargs="+", type=float, default=[1e5, 3e5, 1e6])
    ap.add_argument("--losses", nargs="+", default=["square", "hinge"])
    ap.add_argument("--label", default="after", help="the tree's name in the table")
    ap.add_argument("--append", action="store_true", help="add to the results already there")
    ap.add_argument("--name", default="certificate_cost", help="results file name")
    args = ap.parse_args()
    start_load = os.getloadavg()[0]
    warnings.simplefilter("ignore")  # an uncertified fit's ConvergenceWarning is a result
    X, C = _data(2000)
    pl.NPKL(rank=50, random_state=0).fit(X, C)  # numba compilation
    rows, earlier = [], []
    if args.append and (RESULTS / f"{args.name}.json").exists():
        payload = json.loads((RESULTS / f"{args.name}.json").read_text())
        rows, earlier = payload["rows"], payload["notes"][1:]
    for n in (int(v) for v in args.ns):
        for loss in args.losses:
            rows.append(run(n, loss, args.label))
            print(rows[-1], flush=True)
    notes = [
        "fit_s / fit_cpu_s: the default fit, graph and certificate included (CPU: the "
        "process's, both cores); cert_in_fit_s: certificate_time_ (wall); gap: "
        "certificate_.relative_gap (NaN when skipped: the note in 'skipped'); bound_*: "
        "certify() on the fitted embedding without a budget (the work the bound needs). "
        "The fit's budget: 0.2 of the solve's CPU seconds, at least 10. For the hinge, "
        "certify() without the fit's dual candidates (BCD's stages, internal to the fit) "
        "fits its multipliers by least squares, a costlier computation than the fit's: its "
        "bound_* columns are not the fit's certificate run to the end (the square's are).",
        *earlier, f"Tree '{args.label}': {load_note(start_load)}"]
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
