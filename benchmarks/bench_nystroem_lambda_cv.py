"""GeneralizedNystroem: lambda by criterion (15) against lambda by cross-validation.

Run: ``python benchmarks/bench_nystroem_lambda_cv.py [--reps R] [--sets a,b]``. Writes
``benchmarks/results/nystroem_lambda_cv.{md,json}``.

The protocol of ``python -m reproductions nystrom-table1`` (Lan et al. 2017 §6.1: 100 labelled
points evenly over the classes, m = 10% of n landmarks, the paper's beta (8), the lambda
grid 1e-5 .. 1e5, a linear SVM with C = 1 on the features of the labelled points, error on
the unlabelled ones), on the same labelled draws with ``lambda_selection="alignment"``
(criterion (15), the paper) and ``"cv"`` (3-fold accuracy of the same linear SVM on the
labelled points only). The unlabelled points' labels score the result only.
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
from _common import load_note, write_results

from psdlearn.nystroem import GeneralizedNystroem
from reproductions.experiments.nystrom_table1 import (
    N_LABELLED,
    PAPER_SETTINGS,
    labelled_split,
    load_protocol_set,
    n_landmarks_for,
    svm_error,
)

COLUMNS = ["data", "n", "reps", "criterion (15) err %", "lambda (15) median",
           "CV err %", "lambda CV median", "CV - (15)", "CV better on"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sets", default="g241c,digit1,german.numer,usps49,a1a,dna")
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    rows = []
    for name in args.sets.split(","):
        loaded = load_protocol_set(name)
        if loaded is None:
            continue
        X, y = loaded
        m = n_landmarks_for(name, len(y))
        err = {"alignment": [], "cv": []}
        lam = {"alignment": [], "cv": []}
        for seed in range(args.reps):
            yp = labelled_split(y, N_LABELLED, np.random.default_rng(seed))
            for how in err:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    g = GeneralizedNystroem(n_landmarks=m, random_state=seed,
                                            **{**PAPER_SETTINGS, "lambda_selection": how}
                                            ).fit(X, yp)
                err[how].append(svm_error(g.transform(X), y, yp))
                lam[how].append(g.lambda_)
        a, c = np.array(err["alignment"]), np.array(err["cv"])
        rows.append({
            "data": name, "n": len(y), "reps": args.reps,
            "criterion (15) err %": f"{a.mean():.2f} ± {a.std():.2f}",
            "lambda (15) median": f"{np.median(lam['alignment']):.3g}",
            "CV err %": f"{c.mean():.2f} ± {c.std():.2f}",
            "lambda CV median": f"{np.median(lam['cv']):.3g}",
            "CV - (15)": f"{c.mean() - a.mean():+.2f}",
            "CV better on": f"{int(np.sum(c < a))}/{args.reps} draws",
        })
        print(rows[-1], flush=True)
        write_results("nystroem_lambda_cv", COLUMNS, rows, [  # after every set
            "Error % on the unlabelled points (lower is better), mean ± std over the draws "
            "(seeds 0 .. reps-1, the same draws for both columns); beta by eq. (8) "
            "(the reproduction's PAPER_SETTINGS).",
            load_note(start_load),
        ])


if __name__ == "__main__":
    main()
