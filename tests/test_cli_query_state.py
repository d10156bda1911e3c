"""``psdlearn query --state``: the model is kept between runs and updated with new answers."""

import pickle

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.cli import main


@pytest.fixture()
def files(tmp_path):
    X, y = pl.datasets.load("iris")
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    C = pl.PairwiseConstraints.from_labels(y, n_must=10, n_cannot=10, random_state=0)
    rows = "".join(f"{i},{j},{'must' if s > 0 else 'cannot'}\n"
                   for (i, j), s in zip(C.pairs.tolist(), C.signs.tolist(), strict=True))
    (tmp_path / "c.csv").write_text("i,j,label\n" + rows)
    return tmp_path, X, y


def _query(tmp_path, features="X.csv"):
    return main(["query", str(tmp_path / features), str(tmp_path / "c.csv"), "--n", "10",
                 "-k", "3", "-o", str(tmp_path / "next.csv"),
                 "--state", str(tmp_path / "model.pkl")])


def _answer(tmp_path, y):
    lines = (tmp_path / "next.csv").read_text().splitlines()[1:]
    pairs = [tuple(int(v) for v in line.split(",")[:2]) for line in lines]
    filled = "".join(f"{i},{j},{'must' if y[i] == y[j] else 'cannot'}\n" for i, j in pairs)
    (tmp_path / "c.csv").write_text((tmp_path / "c.csv").read_text() + filled)


def _saved(tmp_path):
    with open(tmp_path / "model.pkl", "rb") as fh:
        return pickle.load(fh)["model"]


@pytest.fixture()
def fits(monkeypatch):
    calls = []
    fit = pl.ConstrainedClustering.fit

    def counted(self, X, y=None):
        calls.append(len(X))
        return fit(self, X, y)

    monkeypatch.setattr(pl.ConstrainedClustering, "fit", counted)
    return calls


def test_the_next_run_updates_the_saved_model_with_the_new_answers(files, fits, capsys):
    tmp_path, X, y = files
    assert _query(tmp_path) == 0
    assert "fitting on 20 answers (no saved model)" in capsys.readouterr().out
    assert len(fits) == 1 and _saved(tmp_path).estimator_.side_info_.n_pairs == 20
    _answer(tmp_path, y)
    assert _query(tmp_path) == 0
    assert "fitting" not in capsys.readouterr().out
    assert len(fits) == 1  # updated by partial_fit, not fitted again
    model = _saved(tmp_path)
    answers = pl.PairwiseConstraints.from_csv(tmp_path / "c.csv", n_samples=len(X))
    assert model.estimator_.side_info_.n_pairs == answers.n_pairs == 30
    asked = {tuple(sorted(p)) for p in answers.pairs.tolist()}
    lines = (tmp_path / "next.csv").read_text().splitlines()[1:]
    chosen = {tuple(sorted(int(v) for v in line.split(",")[:2])) for line in lines}
    assert len(chosen) == 10 and not chosen & asked


def test_an_edited_answer_or_other_features_fit_again(files, fits, capsys):
    tmp_path, X, _ = files
    assert _query(tmp_path) == 0
    capsys.readouterr()
    text = (tmp_path / "c.csv").read_text().splitlines()
    i, j, label = text[1].split(",")
    text[1] = f"{i},{j},{'cannot' if label == 'must' else 'must'}"
    (tmp_path / "c.csv").write_text("\n".join(text) + "\n")
    assert _query(tmp_path) == 0
    assert "a saved answer was removed or changed" in capsys.readouterr().out
    np.savetxt(tmp_path / "X2.csv", X + 1.0, delimiter=",")
    assert _query(tmp_path, "X2.csv") == 0
    assert "the features or options differ" in capsys.readouterr().out
    assert len(fits) == 3


def _planted(tmp_path):
    """Two far blobs, 20 pairs each way, and one cannot-link planted inside a blob."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.3, (60, 2)), rng.normal(6, 0.3, (60, 2))])
    y = np.repeat([0, 1], 60)
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=20, random_state=0)
    rows = [f"{i},{j},{'must' if s > 0 else 'cannot'}"
            for (i, j), s in zip(C.pairs.tolist(), C.signs.tolist(), strict=True)]
    planted = next((i, j) for i in range(60) for j in range(i + 1, 60)
                   if (i, j) not in {tuple(p) for p in C.pairs.tolist()})
    rows.append(f"{planted[0]},{planted[1]},cannot")
    (tmp_path / "c.csv").write_text("i,j,label\n" + "\n".join(rows) + "\n")
    return planted


def _suspects(tmp_path, *extra):
    assert main(["suspects", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "--top", "5",
                 "-o", str(tmp_path / "s.csv"), *extra]) == 0
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0] == "i,j,label,score" and len(lines) == 6
    rows = [line.split(",") for line in lines[1:]]
    scores = [float(r[3]) for r in rows]
    assert scores == sorted(scores, reverse=True)
    return rows


@pytest.mark.parametrize("extra", [[], ["--cross-fit"]])
def test_suspects_puts_a_planted_contradiction_first(tmp_path, extra):
    i, j = _planted(tmp_path)
    first = _suspects(tmp_path, *extra)[0]
    assert (int(first[0]), int(first[1]), first[2]) == (i, j, "cannot")


def test_suspects_reuses_the_saved_model(tmp_path, fits, capsys):
    i, j = _planted(tmp_path)
    state = ["--state", str(tmp_path / "model.pkl")]
    assert main(["query", str(tmp_path / "X.csv"), str(tmp_path / "c.csv"), "--n", "5",
                 "-o", str(tmp_path / "next.csv"), *state]) == 0
    first = _suspects(tmp_path, *state)[0]
    assert len(fits) == 1  # the model of query, not a new fit
    assert (int(first[0]), int(first[1])) == (i, j)


def test_suspects_rejects_bad_options(tmp_path, capsys):
    _planted(tmp_path)
    files = [str(tmp_path / "X.csv"), str(tmp_path / "c.csv")]
    assert main(["suspects", *files, "--top", "0"]) == 2
    assert main(["suspects", *files, "--cross-fit", "--cv", "1"]) == 2
    err = capsys.readouterr().err
    assert "--top must be at least 1" in err and "--cv must be at least 2" in err
