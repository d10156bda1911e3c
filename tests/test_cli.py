import json

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.cli import main


def test_help_on_every_command(capsys):
    for cmd in ([], ["datasets"], ["demo"], ["fit"]):
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
    assert main(["demo", "--dataset", "soybean"]) == 0
    out = capsys.readouterr().out
    assert "k-means on X" in out and "NPKL-BCD" in out and "Rand index" in out


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
