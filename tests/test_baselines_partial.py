"""Reproductions run in pieces: draws merged by seed under a lock, rows replaced in place."""

from __future__ import annotations

import json
import multiprocessing

import numpy as np
import pytest

from reproductions.experiments import _partial, admm_mfpc, nystrom_baselines
from reproductions.experiments.report import write_results


def test_merge_by_seed_is_the_union_ordered_by_seed_and_new_draws_win():
    saved = [{"v": 0}, {"v": 1}, {"v": 2}]  # no seed key: the position is the seed
    new = [{"seed": 4, "v": 40}, {"seed": 1, "v": 10}]
    out = _partial.merge_by_seed(saved, new)
    assert [r["seed"] for r in out] == [0, 1, 2, 4]
    assert [r["v"] for r in out] == [0, 10, 2, 40]


def _add_draws(path, key, seeds):
    for s in seeds:
        with _partial.locked(path):
            raw = _partial.merge_saved(path, {key: [{"seed": s, "v": s}]})
            path.write_text(json.dumps({"raw": raw}))


def test_merge_saved_under_the_lock_loses_no_draw_of_concurrent_pieces(tmp_path):
    path = tmp_path / "t.json"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_add_draws, args=(path, f"set{i}", range(15)))
             for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    raw = json.loads(path.read_text())["raw"]
    assert sorted(raw) == ["set0", "set1", "set2", "set3"]
    for recs in raw.values():
        assert [r["seed"] for r in recs] == list(range(15))


def test_merge_saved_ignores_a_file_the_key_rejects(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"rule": "old", "raw": {"a": [{"seed": 0}]}}))
    raw = _partial.merge_saved(path, {"b": [{"seed": 0}]}, key_fn=lambda p: p["rule"] == "new")
    assert sorted(raw) == ["b"]


def test_replace_rows_keeps_other_rows_and_the_markdown_notes(tmp_path):
    rows = [{"set": s, "x": i} for i, s in enumerate("abcd")]
    write_results(tmp_path, "t", ["set", "x"], rows, ["first note"], title="T",
                  extra={"raw": {"a": 1, "b": 2}})
    md = tmp_path / "t.md"
    md.write_text(md.read_text().replace("- first note", "- first note, edited by hand\n"
                                         "  over two lines"))
    text = _partial.replace_rows(tmp_path, "t", lambda r: r["set"] in ("b", "c"),
                                 [{"set": "b", "x": 10}, {"set": "c", "x": 20}], "Rerun b, c.",
                                 raw={"b": 3}, show=("x",), label=("set",))
    payload = json.loads((tmp_path / "t.json").read_text())
    assert [(r["set"], r["x"]) for r in payload["rows"]] == [("a", 0), ("b", 10), ("c", 20),
                                                            ("d", 3)]
    assert payload["raw"] == {"a": 1, "b": 3}
    assert payload["notes"][0] == "first note, edited by hand over two lines"
    assert payload["notes"][1].startswith("Rerun b, c. Old -> new: b: x 1 -> 10; c: x 2 -> 20. "
                                          "The other rows are from the run of")
    assert text.startswith("# T\n") and "| c | 20 |" in text


def _fake_rep(X, y, name, seed):
    """A Table 1 record whose errors encode the set and the seed."""
    base = 10.0 * (name == "digit1") + seed
    return {"seed": seed, "ours_s": 0.0, "lambda": 1.0, "ours_converged": True,
            "ours": base, "ours_cv": base, "ours_C": 1.0, "nystrom": base + 1,
            "nystrom_cv": base - 1, "nystrom_C": 1.0}


def test_nystrom_baselines_pieces_per_set_add_up_to_one_table(tmp_path, monkeypatch):
    monkeypatch.setattr(nystrom_baselines, "_table1_rep", _fake_rep)
    monkeypatch.setattr(nystrom_baselines, "load_protocol_set",
                        lambda name: (np.zeros((3, 1)), np.zeros(3)))
    log = []
    nystrom_baselines.run(tmp_path, reps=3, tables=(1,), sets=["digit1"], log=log.append)
    nystrom_baselines.run(tmp_path, reps=2, tables=(1,), sets=["g241c"], log=log.append)
    # a later piece extends g241c; resume draws only the missing seeds
    nystrom_baselines.run(tmp_path, reps=4, tables=(1,), sets=["g241c"], resume=True,
                          log=log.append)
    payload = json.loads((tmp_path / "nystrom_baselines1.json").read_text())
    assert {k: [r["seed"] for r in v] for k, v in payload["raw"].items()} == {
        "digit1": [0, 1, 2], "g241c": [0, 1, 2, 3]}
    rows = {r["data"]: r for r in payload["rows"]}
    assert list(rows) == ["g241c", "digit1"]  # the paper's order
    assert rows["g241c"]["reps"] == 4 and rows["digit1"]["reps"] == 3
    assert rows["g241c"]["ours C=1"] == f"1.50 ± {np.std([0, 1, 2, 3]):.2f}"
    # C = 1: ours below Nystrom on both sets; C = CV: above on both
    assert any("on 2 of 2 sets with C = 1 and on 0 of 2 with C by CV" in n
               for n in payload["notes"])
    assert [r["draws"] for r in payload["runs"]] == [3, 2, 2]


def test_lambda_cv_column_is_added_to_saved_draws_and_paired_on_them(tmp_path, monkeypatch):
    monkeypatch.setattr(nystrom_baselines, "_table1_rep", _fake_rep)
    monkeypatch.setattr(nystrom_baselines, "load_protocol_set",
                        lambda name: (np.zeros((3, 1)), np.zeros(3)))
    calls = []

    def fake_cells(X, y, name, seed):  # 3 points below ours_cv (= nystrom_cv + 1)
        calls.append(seed)
        return {"ours_lcv": 0.0, "ours_lcv_cv": seed - 3.0, "ours_lcv_C": 1.0,
                "lambda_lcv": 10.0 ** seed, "lcv_cpu_s": 0.0}

    monkeypatch.setattr(nystrom_baselines, "lambda_cv_cells", fake_cells)
    nystrom_baselines.run(tmp_path, reps=3, tables=(1,), sets=["g241c"], log=print)
    assert calls == []
    # saved draws 0, 1 gain the column only; draw 3 is new with it; 2 and 4 stay without
    nystrom_baselines.run(tmp_path, reps=5, tables=(1,), sets=["g241c"], resume=True,
                          lambda_cv=2, log=print)
    assert calls == [0, 1]
    nystrom_baselines.run(tmp_path, reps=5, tables=(1,), sets=["g241c"], resume=True,
                          lambda_cv=4, log=print)
    assert calls == [0, 1, 2, 3]
    payload = json.loads((tmp_path / "nystrom_baselines1.json").read_text())
    recs = payload["raw"]["g241c"]
    assert [r["seed"] for r in recs] == [0, 1, 2, 3, 4]
    assert [("ours_lcv" in r) for r in recs] == [True, True, True, True, False]
    assert all(r["ours"] == r["seed"] for r in recs)  # the saved columns are kept
    row, = payload["rows"]
    assert row["λ-CV draws"] == 4
    # paired over draws 0..3 only: (s - 3) - (s - 1) = -2 and (s - 3) - s = -3, se 0
    assert row["ours λ-CV - Nys C=CV (paired ± se)"] == "-2.00 ± 0.00"
    assert row["ours λ-CV - ours C=CV (paired ± se)"] == "-3.00 ± 0.00"
    assert row["λ-CV lambda (median)"] == f"{np.median([1, 10, 100, 1000]):g}"
    assert row["ours - Nys C=CV (paired ± se)"] == "+1.00 ± 0.00"  # all five draws
    assert any("lower mean error on 1 of 1 sets (g241c)" in n for n in payload["notes"])


def test_admm_mfpc_draws_run_one_per_call_merge_by_seed(tmp_path):
    admm_mfpc.run(tmp_path, sets=["soybean"], seeds=[1], rank_sets=(), log=lambda *a: None)
    admm_mfpc.run(tmp_path, sets=["soybean"], seeds=[0, 1], resume=True, rank_sets=(),
                  log=lambda *a: None)
    payload = json.loads((tmp_path / "admm_mfpc.json").read_text())
    raw = payload["raw"]["soybean"]
    assert [r["seed"] for r in raw["mfpc"]] == [0, 1] == [r["seed"] for r in raw["admm"]]
    assert [r["draws"] for r in payload["runs"]] == [1, 1]  # seed 1 was not run again
    # the draws are those of the protocol: seed 0 alone gives the same record
    one = admm_mfpc.run_repetitions(*admm_mfpc.load_set_with_graph("soybean")[:2],
                                    n_neighbors=5, reps=1, seed0=0,
                                    laplacian=admm_mfpc.load_set_with_graph("soybean")[3],
                                    loss="pcp", solver="mfpc", max_iter=1000)[0]
    assert raw["mfpc"][0]["objective"] == pytest.approx(one["objective"], rel=1e-12)
    assert payload["rows"][0]["reps"] == 2


def test_admm_table2_mfpc_cells_from_saved_draws_count_them_and_keep_one_note(tmp_path):
    from reproductions.experiments import admm_table2

    cols = ["dataset", "ADMM rand %", "MFPC rand %", "MFPC CPU s"]
    rows = [{"dataset": d, "ADMM rand %": "x", "MFPC rand %": "not run (time)",
             "MFPC CPU s": "-"} for d in ("glass", "a1a", "a2a")]
    write_results(tmp_path, "admm_table2", cols, rows, ["a note"], title="T",
                  extra={"raw": {"glass/admm": [1]}})
    rand, cpu = [0.60, 0.70, 0.65], [5.0, 7.0, 6.0]
    recs = [{"rand": r, "cpu_s": c, "seed": s}
            for s, (r, c) in enumerate(zip(rand, cpu, strict=True))]
    (tmp_path / "admm_mfpc.json").write_text(json.dumps(
        {"raw": {"a1a": {"mfpc": recs}, "glass": {"mfpc": recs[:1]}}}))
    for _ in range(2):  # a second fill replaces its note, it does not add one
        counts = admm_table2.mfpc_from_saved(tmp_path, ["a1a", "a2a"], log=lambda *a: None)
    assert counts == {"a1a": (3, True)}
    payload = json.loads((tmp_path / "admm_table2.json").read_text())
    got = {r["dataset"]: r for r in payload["rows"]}
    assert got["a1a"]["MFPC rand %"] == f"65.00 ± {np.std(rand) * 100:.2f} (3 draws)"
    assert got["a1a"]["MFPC CPU s"] == f"6.00 ± {np.std(cpu):.2f}"
    # not asked for (glass) or nothing saved (a2a): unchanged
    assert got["glass"]["MFPC rand %"] == got["a2a"]["MFPC rand %"] == "not run (time)"
    assert payload["raw"]["a1a/mfpc"] == recs and payload["raw"]["glass/admm"] == [1]
    assert payload["notes"][0] == "a note"
    assert sum(n.startswith(admm_table2.MFPC_SAVED_NOTE) for n in payload["notes"]) == 1


def _fake_rep2(X, y, name, seed):
    """A Table 2 record: ours MKL 1 point below Nystrom 9 with C = 1 on every draw, and
    ``seed`` points above it with C by CV."""
    rec = {"seed": seed, "ours_s": 0.0, "abmkl_s": 0.0, "cabmkl_s": 0.0}
    for key in ("ours", "nystrom", "abmkl", "cabmkl"):
        rec[key], rec[f"{key}_cv"], rec[f"{key}_C"] = 10.0, 10.0, 1.0
    rec["ours"], rec["ours_cv"] = 9.0, 10.0 + seed
    return rec


def test_nystrom_baselines_table2_pairs_ours_with_nystrom9_per_draw(tmp_path, monkeypatch):
    monkeypatch.setattr(nystrom_baselines, "_table2_rep", _fake_rep2)
    monkeypatch.setattr(nystrom_baselines, "load_protocol_set",
                        lambda name: (np.zeros((3, 1)), np.zeros(3)))
    nystrom_baselines.run(tmp_path, reps=3, tables=(2,), sets=["g241c"], log=lambda *a: None)
    payload = json.loads((tmp_path / "nystrom_baselines2.json").read_text())
    row, = payload["rows"]
    assert row["ours - Nys C=1 (paired ± se)"] == "-1.00 ± 0.00"  # beyond 2 se: better
    se = np.std([0, 1, 2], ddof=1) / np.sqrt(3)
    assert row["ours - Nys C=CV (paired ± se)"] == f"+1.00 ± {se:.2f}"  # within 2 se
    assert any("C=1: ours better on 1 (g241c), worse on 0 (-); C=CV: ours better on 0 (-), "
               "worse on 0 (-)" in n for n in payload["notes"])
