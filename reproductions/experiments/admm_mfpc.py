"""Hu & Kwok 2013 Table 2, the MFPC column, and its claim that a larger ``U`` does not help.

MFPC (Shang, Jiao & Wang 2012; :mod:`psdlearn.npkl.mfpc`) learns ``K = Q U Q^T`` with ``Q``
the ``r`` trailing eigenvectors of the kNN Laplacian, on the protocol of
:mod:`reproductions.experiments.admm_table2` (the pcp objective, ``0.6 n`` must-link and
``0.6 n`` cannot-link pairs, kernel k-means, Rand index, same constraint draws). ADMM is
rerun on the same draws for the side-by-side comparison. The paper says MFPC "cannot be
improved even by increasing the size of U": the rank study measures the Rand index and the
objective against ``r``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import numpy as np

from psdlearn.constraints import PairwiseConstraints
from psdlearn.npkl.estimator import auto_rank
from reproductions import RESULTS_DIR
from reproductions.experiments._partial import add_run, locked, merge_by_seed, runs_note
from reproductions.experiments.protocol import (
    ADULT_SETS,
    SMALL_SETS,
    load_set,
    load_set_with_graph,
    run_repetitions,
    summarize,
)
from reproductions.experiments.report import write_results

__all__ = ["MFPC_SETS", "mfpc_cells", "run"]

#: Sets of the MFPC column of admm_table2 (a6a: one fit takes minutes with r = 275 on this
#: machine) ...
MFPC_SETS = SMALL_SETS + ("a1a", "a2a", "a3a", "a4a")
#: ... and of this table.
TABLE_SETS = MFPC_SETS + ("a6a",)
#: Paper's MFPC (Rand %, CPU s), Hu & Kwok 2013 Table 2.
PAPER_MFPC = {
    "chessboard": (71.09, 4.87, 1.22), "double-spiral": (99.68, 2.31, 1.32),
    "glass": (77.25, 1.39, 4.03), "heart": (58.34, 4.09, 5.64), "iris": (97.36, 0.88, 1.90),
    "sonar": (71.84, 3.39, 3.39), "soybean": (93.80, 5.85, 0.20), "wine": (76.37, 2.69, 2.82),
    "a1a": (66.29, 1.83, 120.42), "a2a": (65.46, 1.07, 157.08), "a3a": (62.07, 2.31, 332.34),
    "a4a": (61.94, 2.82, 821.76), "a6a": (65.17, 1.62, 4786.6),
}
#: Repetitions (the paper: 20), for time on the shared 2-core machine: small sets, and
#: per adult set (one MFPC fit takes about 6 CPU s on a1a, 70 on a4a, minutes on a6a).
SMALL_REPS = 10
ADULT_REPS = {"a1a": 10, "a2a": 5, "a3a": 3, "a4a": 2, "a6a": 1}
#: Sets of the rank study.
RANK_SETS = ("chessboard", "glass", "heart", "iris", "sonar", "wine")
#: Multiples of the protocol rank in the rank study (capped at n).
RANK_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


def _fmt(mean, std):
    return f"{mean:.2f} ± {std:.2f}"


def mfpc_cells(X, y, k, L, reps, **params):
    """The MFPC cells of a Table 2 row: ``({column: text}, records)``."""
    recs = run_repetitions(X, y, n_neighbors=k, reps=reps, laplacian=L, loss="pcp",
                           solver="mfpc", max_iter=1000, **params)
    s = summarize(recs)
    return {"MFPC rand %": _fmt(s["rand_mean"], s["rand_std"]),
            "MFPC CPU s": _fmt(s["cpu_mean"], s["cpu_std"])}, recs


def _row(name, y, recs, admm):
    paper = PAPER_MFPC[name]
    s_m, s_a = summarize(recs), summarize(admm)
    ratio = np.mean([a["objective"] / b["objective"] for a, b in zip(recs, admm, strict=True)])
    return {"dataset": name, "n": len(y), "r": recs[0]["rank"], "reps": len(recs),
            "MFPC rand %": _fmt(s_m["rand_mean"], s_m["rand_std"]),
            "MFPC CPU s": _fmt(s_m["cpu_mean"], s_m["cpu_std"]),
            "paper MFPC %": _fmt(paper[0], paper[1]), "paper MFPC s": f"{paper[2]:g}",
            "ADMM rand % (same draws)": _fmt(s_a["rand_mean"], s_a["rand_std"]),
            "ADMM CPU s": _fmt(s_a["cpu_mean"], s_a["cpu_std"]),
            "MFPC obj / ADMM obj": f"{ratio:.3f}",
            "MFPC converged": f"{sum(r['converged'] for r in recs)}/{len(recs)}"}


def run(out_dir, quick=False, log=print, sets=None, reps=None, resume=False,
        rank_sets=None, seeds=None):
    """MFPC beside the paper and beside ADMM; the rank study. Writes ``admm_mfpc.*``.

    Every draw is merged by seed, under a file lock, into the records saved in
    ``out_dir/admm_mfpc.json`` (other sets and other seeds are kept), so a long row can be
    run one draw per process (``seeds``) and the pieces add up to one table.

    Parameters
    ----------
    out_dir : path-like
    quick : bool
    log : callable
    sets : sequence of str, optional
        Sets to (re)run; default :data:`TABLE_SETS`.
    reps : int or dict, optional
        Repetitions (per set with a dict), seeds ``0 .. reps - 1``; default
        :data:`SMALL_REPS` / :data:`ADULT_REPS`.
    resume : bool
        Keep the saved draws; only the seeds not saved yet are run. Without it the
        requested draws are recomputed (and the saved draws of other seeds are dropped for
        the sets run, as before merging existed, unless ``seeds`` is given).
    rank_sets : sequence of str, optional
        Sets of the rank study (default: six small sets; ``()`` skips it).
    seeds : sequence of int, optional
        Run exactly these constraint draws (overrides ``reps``), merged with the saved ones.
    """
    sets = ("iris", "soybean") if quick else (sets or TABLE_SETS)
    path = Path(out_dir) / "admm_mfpc.json"
    piece = {"id": uuid.uuid4().hex, "sets": list(sets),
             "load_start": os.getloadavg()[1], "cpu_s": 0.0, "wall_s": 0.0, "draws": 0}
    raw = {}
    for name in sets:
        loaded = load_set_with_graph(name)
        if loaded is None:
            continue
        X, y, k, L = loaded
        adult = name in ADULT_SETS
        if seeds is not None:
            todo = list(seeds)
        else:
            n_reps = (2 if quick else reps.get(name) if isinstance(reps, dict) else reps
                      ) or (ADULT_REPS.get(name, 1) if adult else SMALL_REPS)
            todo = list(range(n_reps))
        if resume:
            with locked(path):  # not while another piece writes it
                have = _saved_raw(out_dir).get(name, {}).get("mfpc", [])
            todo = [s for s in todo if s not in {r.get("seed", i) for i, r in enumerate(have)}]
        new = {"mfpc": [], "admm": []}
        if todo:
            from reproductions.experiments.admm_table2 import _warm_up
            _warm_up()  # no draw is timed with the JIT compilation of ADMM's kernels
        for seed in todo:
            c0, w0 = time.process_time(), time.perf_counter()
            for kind, params in (("mfpc", {"solver": "mfpc", "max_iter": 1000}),
                                 ("admm", {"solver": "admm",
                                           "max_iter": 100 if adult else 500})):
                rec, = run_repetitions(X, y, n_neighbors=k, reps=1, seed0=seed, laplacian=L,
                                       loss="pcp", **params)
                new[kind].append({**rec, "seed": seed})
            piece["cpu_s"] += time.process_time() - c0
            piece["wall_s"] += time.perf_counter() - w0
            piece["draws"] += 1
            piece["load_end"] = os.getloadavg()[1]
            # after every draw: a stopped run loses at most one
            replace = not resume and seeds is None
            raw = _merge_write(out_dir, path, name, new, piece, replace)
            log(f"{name:14s} seed {seed}: mfpc {new['mfpc'][-1]['rand']:.4f} "
                f"({new['mfpc'][-1]['cpu_s']:.1f} CPU s), admm {new['admm'][-1]['rand']:.4f}")
    if raw:
        log(_write(out_dir, raw, _saved_runs(path)))
    rank_study(out_dir, quick, log, sets=rank_sets, resume=resume)
    return raw


def _saved_raw(out_dir, name="admm_mfpc"):
    path = Path(out_dir) / f"{name}.json"
    return json.loads(path.read_text())["raw"] if path.exists() else {}


def _saved_runs(path):
    return json.loads(path.read_text()).get("runs", []) if path.exists() else []


def _merge_write(out_dir, path, name, new, piece, replace):
    """Merge one set's new draws into the saved records (under the lock) and write."""
    with locked(path):
        raw = _saved_raw(out_dir)
        saved = {} if replace else raw.get(name, {})
        raw[name] = {kind: merge_by_seed(saved.get(kind, []), recs)
                     for kind, recs in new.items()}
        _write(out_dir, raw, add_run(_saved_runs(path), piece))
    return raw


def _write(out_dir, raw, runs):
    rows = []
    for name in TABLE_SETS:
        if name in raw:
            y = load_set(name)[1]  # n only: no graph
            rows.append(_row(name, y, raw[name]["mfpc"], raw[name]["admm"]))
    adult = ", ".join(f"{r['dataset']} {r['reps']}" for r in rows if r["dataset"] in ADULT_SETS)
    missing = [name for name in TABLE_SETS if name not in raw]
    notes = [
        "Same protocol and constraint draws (seeds 0..reps-1) as admm_table2; ADMM rerun on "
        f"the same draws. Repetitions in 'reps' (the paper: 20): {SMALL_REPS} on the small "
        f"sets, on adult {adult or 'none'}, for time on a shared 2-core machine"
        + (f"; not run: {', '.join(missing)}." if missing else "."),
        "Every draw is kept in the JSON and merged by seed: rows are kept from earlier runs "
        "when a run covers other sets or other draws.",
        "MFPC: r = the protocol rank (Hu & Kwok 2013 Table 1), Q by shift-invert Lanczos, U by "
        "accelerated projected gradient to fixed-point residual tol = 1e-5 (at most 1000 "
        "steps). CPU s: process time of basis + U (graph and clustering excluded); the "
        "paper's: MATLAB on an i7-3370.",
        "MFPC obj / ADMM obj: ratio of the pcp objectives on the same draws (>= 1 up to "
        "ADMM's own gap: Q U Q^T is a subset of the rank-r kernels ADMM searches).",
        runs_note(runs, sum(len(v["mfpc"]) for v in raw.values()),
                  " (the small-set rows: load 20-40; the adult rows before this account: "
                  "load 6.9-8.7)"),
    ]
    return write_results(out_dir, "admm_mfpc", list(rows[0].keys()), rows, notes,
                         title="Hu & Kwok 2013 Table 2: MFPC (ours) beside the paper's and "
                         "beside ADMM", extra={"raw": raw, "runs": runs})


def rank_study(out_dir, quick=False, log=print, sets=None, resume=False):
    """Rand index and objective of MFPC against ``r`` (the paper: no gain from larger U).

    ``sets``: the sets to (re)run (default :data:`RANK_SETS`; ``()`` runs nothing);
    ``resume``: keep the saved rows of the other sets.
    """
    sets = ("iris",) if quick else (RANK_SETS if sets is None else sets)
    if not sets:
        return
    reps = 2 if quick else 3
    saved = {}
    path = Path(out_dir) / "admm_mfpc_rank.json"
    if resume and path.exists():
        saved = {r["dataset"]: r for r in json.loads(path.read_text())["rows"]}
    for name in sets:
        X, y, k, L = load_set_with_graph(name)
        n = len(y)
        C = PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=0)
        base = min(auto_rank(2 * C.n_pairs + n), n)
        row = {"dataset": name, "n": n, "protocol r": base}
        for f in RANK_FACTORS:
            r = min(n, max(2, int(round(f * base))))
            recs = run_repetitions(X, y, n_neighbors=k, reps=reps, laplacian=L, loss="pcp",
                                   solver="mfpc", max_iter=1000, rank=r)
            s = summarize(recs)
            row[f"{f:g} r: rand %"] = f"{_fmt(s['rand_mean'], s['rand_std'])} (r={r})"
            row[f"{f:g} r: obj"] = f"{np.mean([q['objective'] for q in recs]):.4g}"
        admm = run_repetitions(X, y, n_neighbors=k, reps=reps, laplacian=L, loss="pcp",
                               solver="admm", max_iter=500)
        row["ADMM (protocol r) rand %"] = _fmt(summarize(admm)["rand_mean"],
                                               summarize(admm)["rand_std"])
        row["ADMM obj"] = f"{np.mean([q['objective'] for q in admm]):.4g}"
        saved[name] = row
        log(f"rank study {name}: {row}")
        _write_rank(out_dir, [saved[s] for s in RANK_SETS if s in saved], reps)
    log(_write_rank(out_dir, [saved[s] for s in RANK_SETS if s in saved], reps))


def _write_rank(out_dir, rows, reps):
    columns = list(dict.fromkeys(c for r in rows for c in r))
    return write_results(out_dir, "admm_mfpc_rank", columns, rows,
                         [f"{reps} repetitions (the first draws of admm_mfpc); r = "
                          f"{', '.join(f'{f:g}' for f in RANK_FACTORS)} x the protocol rank, "
                          "capped at n (r = n: Q U Q^T spans every PSD K, so MFPC solves the "
                          "NPKL SDP itself).",
                          "obj: mean pcp objective (1) of the learned kernel; it can only fall "
                          "with r (nested bases)."],
                         title="MFPC against the size of U (Hu & Kwok 2013: 'cannot be improved "
                         "even by increasing the size of U')")


def main(argv=None):
    """``python -m reproductions.experiments.admm_mfpc --sets a6a --seeds 0``: MFPC and ADMM on
    the given draws, merged into ``--out/admm_mfpc.*`` (no rank study)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--sets", required=True, help="comma-separated")
    parser.add_argument("--seeds", required=True, help="comma-separated constraint seeds")
    parser.add_argument("--out", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    run(args.out, sets=args.sets.split(","), seeds=[int(s) for s in args.seeds.split(",")],
        resume=True, rank_sets=())


if __name__ == "__main__":
    main()
