import json
import warnings

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.cli import main


def test_help_on_every_command(capsys):
    for cmd in ([], ["datasets"], ["demo"], ["fit"], ["cluster"], ["query"],
                ["suspects"]):
        with pytest.raises(SystemExit) as exc:
            main([*cmd, "--help"])
        assert exc.value.code == 0
    assert "features" in capsys.readouterr().out


def test_datasets_lists_bundled(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    for name in ("iris", "wine", "glass", "heart", "sonar", "soybean", "chessboard", "protein"):
        assert name in out


def test_demo_runs_and_reports(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the README's first command prints no warning
        assert main(["demo", "--dataset", "soybean"]) == 0
        assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "k-means on X" in out and "NPKL-BCD" in out and "Rand index" in out
    assert "data set iris: n=150, d=4, classes=3; 90 must-link + 90 cannot-link" in out


def test_fit_writes_embedding_and_summary(tmp_path, capsys):
    X, y = pl.datasets.load("iris")
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    C.to_csv(tmp_path / "c.csv")
    out = tmp_path / "E.npy"
    assert main(["fit", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "-o", str(out),
                 "--loss", "square", "-q"]) == 0
    E = np.load(out)
    summary = json.loads(out.with_suffix(".json").read_text())
    assert E.shape == (150, summary["rank"])
    model = pl.NPKL(loss="square", random_state=0).fit(X, C)
    assert summary["objective"] == pytest.approx(model.objective(E), rel=1e-9)


def test_fit_malformed_constraints_names_line(tmp_path, capsys):
    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(10, 2)))
    (tmp_path / "c.csv").write_text("i,j,label\n0,1,+1\n2,3,often\n")
    code = main(["fit", str(tmp_path / "X.npy"), str(tmp_path / "c.csv"), "-q",
                 "-o", str(tmp_path / "E.npy")])
    assert code == 2
    err = capsys.readouterr().err
    assert "c.csv:3" in err and "expected label" in err


def test_fit_nan_feature_names_file_and_row(tmp_path, capsys):
    X = np.random.default_rng(0).normal(size=(10, 3))
    X[6, 2] = np.nan
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    (tmp_path / "c.csv").write_text("0,1,+1\n2,3,-1\n")
    code = main(["fit", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "-q",
                 "-o", str(tmp_path / "E.npy")])
    assert code == 2
    err = capsys.readouterr().err
    assert "X.csv: row 7, column 3 is nan" in err
    assert "HistGradientBoosting" not in err


def test_fit_adaptive_rank_reports_certificate(tmp_path, capsys):
    X, y = pl.datasets.load("iris")
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    pl.PairwiseConstraints.from_labels(y, random_state=0).to_csv(tmp_path / "c.csv")
    out = tmp_path / "E.npy"
    assert main(["fit", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "-o", str(out),
                 "--loss", "square", "--rank", "adaptive"]) == 0
    summary = json.loads(out.with_suffix(".json").read_text())
    cert = summary["certificate"]
    assert cert["objective"] == pytest.approx(summary["objective"], rel=1e-9)
    assert cert["gap_bound"] >= 0
    assert cert["relative_gap"] == pytest.approx(cert["gap_bound"] / abs(cert["objective"]))
    assert cert["certified"] == (cert["relative_gap"] <= cert["tol"])
    assert cert["certified"] and summary["rank"] < 18  # below the r(r+1)/2 <= m rule
    assert "certificate at rank" in capsys.readouterr().err  # verbose progress on stderr


def _iris_files(tmp_path, one_based=False):
    X, y = pl.datasets.load("iris")
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    rows = [f"{i + one_based},{j + one_based},{s:+d}"
            for (i, j), s in zip(C.pairs.tolist(), C.signs.tolist(), strict=True)]
    (tmp_path / "c.csv").write_text("i,j,label\n" + "\n".join(rows) + "\n")
    return X, y, C


def _subparsers(parser):
    import argparse

    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def test_commands_are_the_users():
    from psdlearn.cli import _parser

    assert set(_subparsers(_parser())) == {"datasets", "demo", "fit", "cluster",
                                            "query", "suspects"}
    with pytest.raises(SystemExit):
        main(["reproduce", "list"])


def test_top_level_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "``" not in out and ":class:" not in out and ":func:" not in out
    assert "counted from 0" in out and "--one-based" in out
    for cmd in ("datasets", "demo", "fit", "cluster", "query", "suspects"):
        assert f"psdlearn {cmd}" in out  # an example of each command


def test_every_option_has_help_and_every_command_an_example(capsys):
    from psdlearn.cli import _parser

    parser = _parser()
    for name, sub in _subparsers(parser).items():
        for action in sub._actions:
            assert action.help, (name, action.dest)
        assert f"psdlearn {name}" in sub.epilog, name
        with pytest.raises(SystemExit):
            main([name, "--help"])
        out = capsys.readouterr().out
        for internal in ("NPKL_SOLVERS", "psdlearn.npkl", "``", "r(r+1)/2"):
            assert internal not in out, (name, internal)


def test_one_based_file_gives_the_same_fit(tmp_path, capsys):
    zero, one = tmp_path / "zero", tmp_path / "one"
    zero.mkdir()
    one.mkdir()
    _iris_files(zero)
    _iris_files(one, one_based=True)
    assert (zero / "c.csv").read_text() != (one / "c.csv").read_text()
    common = ["--loss", "square", "-q"]
    assert main(["fit", str(zero / "X.csv"), str(zero / "c.csv"), "-o", str(zero / "E.npy"),
                 *common]) == 0
    assert main(["fit", str(one / "X.csv"), str(one / "c.csv"), "-o", str(one / "E.npy"),
                 "--one-based", *common]) == 0
    np.testing.assert_allclose(np.load(zero / "E.npy"), np.load(one / "E.npy"))


def test_index_out_of_range_suggests_one_based(tmp_path, capsys):
    np.savetxt(tmp_path / "X.csv", np.random.default_rng(0).normal(size=(10, 2)),
               delimiter=",")
    (tmp_path / "c.csv").write_text("1,2,+1\n9,10,-1\n")  # a file that counts from 1
    args = ["fit", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "-q",
            "-o", str(tmp_path / "E.npy")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "c.csv:2: index 10 is out of range" in err and "0-based" in err
    assert "--one-based" in err
    (tmp_path / "c.csv").write_text("0,2,+1\n")
    assert main([*args, "--one-based"]) == 2
    err = capsys.readouterr().err
    assert "c.csv:1: index 0 is out of range" in err and "1-based, from 1 to 10" in err


def test_fit_with_n_clusters_writes_labels(tmp_path, capsys):
    X, y, _ = _iris_files(tmp_path)
    out = tmp_path / "E.npy"
    assert main(["fit", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "-o", str(out),
                 "--loss", "square", "-q", "--n-clusters", "3"]) == 0
    summary = json.loads(out.with_suffix(".json").read_text())
    labels_path = tmp_path / "E-labels.csv"
    assert summary["labels"] == str(labels_path) and summary["n_clusters"] == 3
    labels = np.loadtxt(labels_path, dtype=np.int64)
    assert labels.shape == (150,) and set(labels.tolist()) == {0, 1, 2}
    # the clusters follow the classes the constraints were drawn from, better than k-means
    # on the features (Rand index 0.874 on iris)
    assert pl.metrics.pairwise_accuracy(y, labels) > 0.9
    other = tmp_path / "my-labels.csv"
    assert main(["fit", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "-o", str(out),
                 "--loss", "square", "-q", "-k", "3", "--labels", str(other)]) == 0
    np.testing.assert_array_equal(np.loadtxt(other, dtype=np.int64), labels)


needs_constrained_clustering = pytest.mark.skipif(
    not hasattr(pl, "ConstrainedClustering"),
    reason="psdlearn.ConstrainedClustering is not in this tree yet (task-level API, issue 36)")


@needs_constrained_clustering
def test_cluster_writes_the_estimators_labels(tmp_path, capsys):
    X, y, C = _iris_files(tmp_path)
    out = tmp_path / "labels.csv"
    assert main(["cluster", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"),
                 "--n-clusters", "3", "-o", str(out), "-q"]) == 0
    labels = np.loadtxt(out, dtype=np.int64)
    expected = pl.ConstrainedClustering(n_clusters=3, random_state=0).fit(X, C).labels_
    np.testing.assert_array_equal(labels, expected)
    assert pl.metrics.pairwise_accuracy(y, labels) > 0.9
    assert "labels written to" in capsys.readouterr().out


@needs_constrained_clustering
def test_cluster_reads_one_based_files(tmp_path, capsys):
    zero, one = tmp_path / "zero", tmp_path / "one"
    zero.mkdir()
    one.mkdir()
    _iris_files(zero)
    _iris_files(one, one_based=True)
    assert main(["cluster", str(zero / "X.csv"), str(zero / "c.csv"), "-k", "3",
                 "-o", str(zero / "l.csv"), "-q"]) == 0
    assert main(["cluster", str(one / "X.csv"), str(one / "c.csv"), "-k", "3",
                 "-o", str(one / "l.csv"), "-q", "--one-based"]) == 0
    np.testing.assert_array_equal(np.loadtxt(zero / "l.csv"), np.loadtxt(one / "l.csv"))


def test_cluster_needs_n_clusters(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["cluster", "X.csv", "c.csv"])
    assert exc.value.code == 2
    assert "--n-clusters" in capsys.readouterr().err


def _query_files(tmp_path, one_based=False):
    X, y = pl.datasets.load("iris")
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    C = pl.PairwiseConstraints.from_labels(y, n_must=10, n_cannot=10, random_state=0)
    base = 1 if one_based else 0
    rows = "".join(f"{i + base},{j + base},{'must' if s > 0 else 'cannot'}\n"
                   for (i, j), s in zip(C.pairs.tolist(), C.signs.tolist(), strict=True))
    (tmp_path / "c.csv").write_text("i,j,label\n" + rows)
    return X, y, C


@pytest.mark.parametrize("strategy", ["uncertainty", "placement", "explore_consolidate",
                                      "min_max", "random"])
def test_query_writes_new_pairs_to_answer(tmp_path, capsys, strategy):
    X, y, C = _query_files(tmp_path)
    out = tmp_path / "next.csv"
    assert main(["query", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "--n", "15",
                 "-k", "3", "--strategy", strategy, "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "i,j,label" and len(lines) == 16
    pairs = np.array([[int(v) for v in line.split(",")[:2]] for line in lines[1:]])
    assert all(line.endswith(",") for line in lines[1:])
    asked = {tuple(p) for p in C.pairs.tolist()}
    assert len({tuple(p) for p in pairs.tolist()} - asked) == 15
    assert pairs.min() >= 0 and pairs.max() < len(X)
    assert "15 pairs" in capsys.readouterr().out
    # once answered, the file is a valid constraints file
    filled = "".join(f"{i},{j},{'must' if y[i] == y[j] else 'cannot'}\n" for i, j in pairs)
    (tmp_path / "c.csv").write_text((tmp_path / "c.csv").read_text() + filled)
    assert pl.PairwiseConstraints.from_csv(tmp_path / "c.csv").n_pairs == 35


def test_query_one_based_counts_from_one(tmp_path):
    X, _, C = _query_files(tmp_path, one_based=True)
    out0, out1 = tmp_path / "a.csv", tmp_path / "b.csv"
    (tmp_path / "c0.csv").write_text(
        "".join(f"{i},{j},{s}\n" for (i, j), s in zip(C.pairs.tolist(), C.signs.tolist(),
                                                      strict=True)))
    args = ["--n", "5", "-k", "3", "--strategy", "min_max"]
    assert main(["query", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "--one-based",
                 "-o", str(out1), *args]) == 0
    assert main(["query", str(tmp_path / "X.csv"), str(tmp_path / "c0.csv"),
                 "-o", str(out0), *args]) == 0
    p0 = np.loadtxt(out0, delimiter=",", skiprows=1, usecols=(0, 1), dtype=int)
    p1 = np.loadtxt(out1, delimiter=",", skiprows=1, usecols=(0, 1), dtype=int)
    assert np.array_equal(p1, p0 + 1)


def test_query_rejects_bad_n(tmp_path, capsys):
    _query_files(tmp_path)
    assert main(["query", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "--n", "0"]) == 2
    assert "--n" in capsys.readouterr().err
