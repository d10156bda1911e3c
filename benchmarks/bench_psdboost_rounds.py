"""Per-round solvers of PSDBoost's re-selection (``impostors="active"``), by measurement.

Run: ``python benchmarks/bench_psdboost_rounds.py [--quick]``. Writes
``benchmarks/results/psdboost_rounds.{md,json}``.

Two studies, one thread (BLAS), medians of repeats:

- ``newton``: the interior-point method on problem (3) with the dense ``t x t`` Newton
  system against the low-rank one (order ``n_s = D (D + 1) / 2``), on random triplets of
  standardized Gaussian points with ``C = 3 / t`` (about the ``1 / C = t / 3`` rows of a
  re-selection round that carry weight), for ``D`` in 13, 20, 30 and ``t / n_s`` from 2
  to 8 (``t <= 2000``, the rows a round's interior-point solve takes): the crossover that
  ``low_rank="auto"`` uses.
- ``first-order``: the last working set of a digits fit (``n = 1,257``, ``D = 64``) and of
  a ``digits-pca20`` fit, solved by the interior-point method and by a first-order method
  on the saddle point ``max_{X in S} min_{w in W} w . A(X)`` of (3) (``S`` the trace-one
  PSD matrices, ``W`` the capped simplex): PDHG (Chambolle & Pock 2011) with the projection
  onto ``S`` by ``scipy.linalg.eigh`` and restarts to the average when the certified gap
  halves (Applegate et al. 2021), step ``0.99 / ||A||``, primal weight 0.1 (the best of
  0.1, 1 and 10 in a trial). Its certified gap
  ``lambda_max(H(w)) - value(X)`` is recorded against time, up to 3,000 iterations.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from _common import load_note, write_results  # noqa: E402
from scipy.linalg import eigh, eigvalsh  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import psdlearn as pl  # noqa: E402
from psdlearn.psdboost.ipm import solve_ipm  # noqa: E402

COLUMNS = ["study", "set", "D", "n_s", "t", "t/n_s", "dense_s", "low-rank_s", "dense/low-rank",
           "dense_steps", "low-rank_steps", "ipm_s", "ipm_steps", "ipm_rel_gap", "optimum",
           "pdhg_s_to_0.01", "pdhg_s_to_0.001", "pdhg_s_to_0.0001", "pdhg_iterations", "pdhg_s",
           "pdhg_final_rel_gap"]


def _median_time(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def newton(quick):
    rows = []
    rng = np.random.default_rng(0)
    for D in (13, 20, 30):
        n_s = D * (D + 1) // 2
        X = rng.standard_normal((400, D))
        for ratio in (2, 3, 4, 6, 8):
            t = ratio * n_s
            if t > 2000 or (quick and ratio not in (2, 6)):
                continue
            T = np.array([rng.choice(400, 3, replace=False) for _ in range(t)])
            C = 3.0 / t
            rec = {"study": "newton", "D": D, "n_s": n_s, "t": t, "t/n_s": ratio}
            for name, lr in (("dense", False), ("low-rank", True)):
                sec, res = _median_time(
                    lambda X=X, T=T, C=C, lr=lr: solve_ipm(X, T, C, tol=1e-6, low_rank=lr),
                    1 if quick else 3)
                rec[f"{name}_s"], rec[f"{name}_steps"] = sec, res.n_iter
                rec[f"{name}_objective"] = res.objective
            rec["dense/low-rank"] = rec["dense_s"] / rec["low-rank_s"]
            rows.append(rec)
            print(rec, flush=True)
    return rows


def _spectraplex(M):
    """Projection onto {X PSD, tr X = 1}: eigen-decomposition, eigenvalues onto the simplex."""
    lam, V = eigh((M + M.T) / 2.0)
    u = lam[::-1]
    css = np.cumsum(u) - 1.0
    k = np.flatnonzero(u - css / np.arange(1, len(u) + 1) > 0)[-1]
    lam = np.maximum(lam - css[k] / (k + 1), 0.0)
    keep = lam > 0
    return (V[:, keep] * lam[keep]) @ V[:, keep].T


def _capped_simplex(v, C):
    """Projection onto {0 <= w <= C, sum w = 1} by bisection on the shift."""
    lo, hi = v.min() - C, v.max()
    for _ in range(60):
        tau = (lo + hi) / 2.0
        if np.clip(v - tau, 0.0, C).sum() > 1.0:
            lo = tau
        else:
            hi = tau
    w = np.clip(v - (lo + hi) / 2.0, 0.0, C)
    return w / w.sum()


def _value(margins, C):
    """min_{w in W} w . margins: the weight C on the smallest margins."""
    s = np.sort(margins)
    q = int(np.floor(1.0 / C + 1e-9))
    return float(C * s[:q].sum() + (1.0 - C * q) * (s[q] if q < len(s) else 0.0))


def pdhg(X, T, C, max_iter, omega=0.1):
    Dk, Dj = X[T[:, 0]] - X[T[:, 2]], X[T[:, 0]] - X[T[:, 1]]
    D, t = X.shape[1], len(T)

    def A(M):
        return np.einsum("ij,ij->i", Dk @ M, Dk) - np.einsum("ij,ij->i", Dj @ M, Dj)

    def As(w):
        return Dk.T @ (w[:, None] * Dk) - Dj.T @ (w[:, None] * Dj)

    v = np.random.default_rng(0).standard_normal((D, D))
    v = (v + v.T) / 2.0
    for _ in range(30):  # power iteration for ||A||
        v = As(A(v))
        v /= np.linalg.norm(v)
    norm = np.sqrt(np.linalg.norm(As(A(v))))
    tau, sigma = 0.99 / norm / omega, 0.99 / norm * omega
    M, w = np.eye(D) / D, np.full(t, 1.0 / t)
    Ms, ws, n, last, best, trace = np.zeros_like(M), np.zeros_like(w), 0, None, np.inf, []
    start = time.perf_counter()
    for it in range(1, max_iter + 1):
        M_new = _spectraplex(M + tau * As(w))
        w = _capped_simplex(w - sigma * A(2.0 * M_new - M), C)
        M = M_new
        Ms += M
        ws += w
        n += 1
        if it % 20 == 0:
            gap = eigvalsh(As(w))[-1] - _value(A(M), C)
            gap_avg = eigvalsh(As(ws / n))[-1] - _value(A(Ms / n), C)
            best = min(best, gap, gap_avg)
            trace.append((it, time.perf_counter() - start, best))
            if last is None or min(gap, gap_avg) < 0.5 * last:
                if gap_avg < gap:
                    M, w = Ms / n, ws / n
                last, n = min(gap, gap_avg), 0
                Ms[:] = 0.0
                ws[:] = 0.0
    return trace


def first_order(quick):
    rows = []
    Xd, yd = load_digits(return_X_y=True)
    sets = {"digits": Xd, "digits-pca20": PCA(20, random_state=0).fit_transform(Xd)}
    for name, X in sets.items():
        X = StandardScaler().fit_transform(X[:1257])
        y = yd[:1257]
        m = pl.PSDBoost(impostors="active", random_state=0).fit(X, y)
        T, C = m.side_info_.triplets, m.C_
        sec, res = _median_time(lambda X=X, T=T, C=C: solve_ipm(X, T, C, tol=1e-6),
                                1 if quick else 3)
        opt = res.objective
        trace = pdhg(X, T, C, 600 if quick else 3000)
        rec = {"study": "first-order", "set": name, "D": X.shape[1], "t": len(T),
               "optimum": opt, "ipm_s": sec, "ipm_steps": res.n_iter,
               "ipm_rel_gap": (res.upper_bound - res.objective) / abs(opt)}
        for rel in (1e-2, 1e-3, 1e-4):
            hit = [(it, s) for it, s, g in trace if g <= rel * abs(opt)]
            rec[f"pdhg_s_to_{rel:g}"] = hit[0][1] if hit else None
            rec[f"pdhg_iter_to_{rel:g}"] = hit[0][0] if hit else None
        rec["pdhg_iterations"], rec["pdhg_s"] = trace[-1][0], trace[-1][1]
        rec["pdhg_final_rel_gap"] = trace[-1][2] / abs(opt)
        rows.append(rec)
        print(rec, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--name", default="psdboost_rounds")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    rows = newton(args.quick) + first_order(args.quick)
    write_results(args.name, COLUMNS, rows, notes=[
        "newton: seconds of solve_ipm(tol=1e-6) with the dense or the low-rank Newton "
        "system (median of 3), C = 3 / t; dense/low-rank > 1: the low-rank system is faster.",
        "first-order: the interior-point method (median of 3) against PDHG on the same "
        "working set; pdhg_s_to_x: seconds until its certified gap is below x times the "
        "optimum (empty: not reached within its iterations).",
        load_note(load)])


if __name__ == "__main__":
    main()
