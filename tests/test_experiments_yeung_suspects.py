"""yeung_suspects: J against m, chosen by S alone, run in pieces merged by seed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from psdlearn.constraints import PairwiseConstraints
from psdlearn.datasets import make_xor
from psdlearn.kml import KernelMetricLearner
from psdlearn.kml.estimator import median_heuristic_kernel_gamma
from psdlearn.metrics import class_separation
from reproductions.experiments import yeung_suspects as ys


def _rec(seed, J, crit):
    return {"seed": seed, "J": J, "q": 1, "criterion": crit}


def test_choices_by_mean_and_per_draw_use_the_criterion_only_on_shared_draws():
    raw = {"a": {"100": [_rec(0, 1.0, 1.0), _rec(1, 2.0, 4.0), _rec(2, 9.0, 9.0)]},
           "b": {"100": [_rec(0, 5.0, 2.0), _rec(1, 6.0, 2.0)]}}
    by_mean, per_draw = ys.choices(raw, 100, ["a", "b"])
    # seed 2 (only in a) is left out: mean criterion a 2.5 > b 2.0, though b has larger J
    assert by_mean == "a"
    assert per_draw == [(0, "b", 5.0), (1, "a", 2.0)]


def test_heldout_ratio_is_large_when_held_out_pairs_are_close():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(200, 2))
    Z[1] = Z[0] + 1e-3
    close = ys.heldout_ratio(Z, np.array([[0, 1]]), np.random.default_rng(1))
    far = ys.heldout_ratio(Z, np.array([[0, int(np.argmax(np.linalg.norm(Z - Z[0], axis=1)))]]),
                           np.random.default_rng(1))
    assert close > 100 > 1 > far


@pytest.fixture
def small_xor(monkeypatch):
    X, y = make_xor(300, random_state=0)
    monkeypatch.setattr(ys, "make_xor", lambda n, random_state: (X, y))
    return X, y


def test_default_cell_is_the_table1_fit_and_the_cutoff_orders_q(small_xor):
    X, y = small_xor
    gamma = median_heuristic_kernel_gamma(X, random_state=0)
    recs = ys._draw_records(X, y, gamma, 3, [("default", 120), ("cut-off 1e-14", 120),
                                              ("cut-off 1e-4", 120)])
    C = PairwiseConstraints.from_labels(y, n_must=50, n_cannot=0, random_state=3)
    table1 = KernelMetricLearner(kernel_gamma=gamma, rank=None, n_landmarks=120,
                                 n_iter=ys.N_ITER, random_state=3).fit(X, C)
    assert recs["default", 120]["J"] == pytest.approx(class_separation(table1.embedding_, y),
                                                     rel=1e-12)
    assert recs["default", 120]["q"] == table1.rank_
    # a larger cut-off keeps fewer landmark directions
    assert recs["cut-off 1e-14", 120]["q"] >= recs["default", 120]["q"] > \
        recs["cut-off 1e-4", 120]["q"]


def test_pieces_by_seed_add_up_and_resume_skips_saved_cells(tmp_path, small_xor,
                                                             monkeypatch):
    calls = []
    fit = ys._fit

    def counting_fit(X, C, gamma, setting, seed, m):
        calls.append((seed, m))
        return fit(X, C, gamma, setting, seed, m)

    monkeypatch.setattr(ys, "_fit", counting_fit)
    log = []
    ys.run(tmp_path, seeds=[1], landmarks=[120], settings=["default"], log=log.append)
    assert len(calls) == 2  # the fit on S and the fit on the 40 training pairs
    raw = ys.run(tmp_path, seeds=[0, 1], landmarks=[120, 150],
                 settings=["default", "gamma x 4"], resume=True, log=log.append)
    # (default, 120, seed 1) was saved: 2 * 4 + 2 * 3 cells' fits
    assert len(calls) == 2 + 2 * 4 + 2 * 3
    seeds = {k: {m: [r["seed"] for r in v] for m, v in by_m.items()} for k, by_m in raw.items()}
    assert seeds == {"default": {"120": [0, 1], "150": [0, 1]},
                     "gamma x 4": {"120": [0, 1], "150": [0, 1]}}
    payload = json.loads((tmp_path / "yeung_suspects.json").read_text())
    assert [r["draws"] for r in payload["runs"]] == [1, 4, 3]
    rows = {(r["setting"], r["row"]): r for r in payload["rows"]}
    by_mean, per_draw = ys.choices(raw, 150, ["default", "gamma x 4"])
    J = [r["J"] for r in raw[by_mean]["150"]]
    assert rows["chosen by S (largest mean criterion)", "J"]["m = 150"] == (
        f"{by_mean}: {np.mean(J):.2f} ± {np.std(J):.2f}")
    assert rows["default", "J (q)"]["m = 120"].endswith("; 2)")
