"""Property-based tests of the file readers: the constraint CSV
(``PairwiseConstraints.from_csv``, ``--one-based``), the LIBSVM reader
(``psdlearn.datasets.read_libsvm``) and the command line's features and constraints files
(``psdlearn cluster``).

Generated files: UTF-8 with and without a byte-order mark, UTF-16, Latin-1, CRLF line
ends, blank and comment lines, headers, rows with too few or too many fields, odd labels,
indices out of range, NaN and inf, NUL bytes. The properties: a file either reads into
what it says or raises ``ValueError`` naming the file; the command line exits with 0 or
2 (an error message on stderr naming the file), never with a traceback.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import tempfile
from pathlib import Path

import numpy as np
from _fuzz import Rejected, call, fuzz_settings
from hypothesis import event, given
from hypothesis import strategies as st

import psdlearn as pl
from psdlearn.cli import main

ENCODINGS = ["utf-8", "utf-8", "utf-8-sig", "utf-16", "latin-1"]
LABELS = {"+1": 1, "1": 1, "-1": -1, "must": 1, "cannot": -1, " Must ": 1, "CL": -1,
          "must-link": 1}
BAD_LABELS = ["0", "2", "x", "", "+1.0"]


@st.composite
def constraint_files(draw, n, one_based, well_formed=None):
    """Text of a constraint CSV, the constraints it holds (None: malformed), and whether
    an index is above ``n`` (an error only when ``n_samples`` is given). A third of the
    files (``well_formed``: all of them) hold only rows in range, blank and comment lines.
    """
    base = 1 if one_based else 0
    if well_formed is None:
        well_formed = draw(st.integers(0, 2)) == 0
    lines, expected, valid, above = [], {}, True, False
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["i,j,label", "I, J, Label", "a,b,c"])))
    kinds = ["row"] * 6 + ["blank", "comment"]
    if not well_formed:
        kinds += ["short", "long", "label", "text", "nul"]
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(kinds))
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", "  ", ",,"])))
            continue
        if kind == "comment":
            lines.append("# é ü comment, with commas")
            continue
        lo, hi = (base, n - 1 + base) if well_formed else (base - 1, n + base)
        i = draw(st.integers(lo, hi))
        j = draw(st.integers(lo, hi))
        if well_formed and (i == j or (min(i, j), max(i, j)) in
                            {(a + base, b + base) for a, b in expected}):
            continue
        word = draw(st.sampled_from(sorted(LABELS)))
        if kind == "short":
            lines.append(f"{i},{j}")
        elif kind == "long":
            lines.append(f"{i},{j},{word},extra")
        elif kind == "label":
            lines.append(f"{i},{j},{draw(st.sampled_from(BAD_LABELS))}")
        elif kind == "text":
            lines.append(f"{i}.5,{j},{word}")
        elif kind == "nul":
            lines.append(f"{i},{j}\x00,{word}")
        else:
            lines.append(draw(st.sampled_from([f"{i},{j},{word}", f" {i} , {j} ,{word}"])))
        a, b = i - base, j - base
        if kind != "row" or a < 0 or b < 0 or a == b:
            valid = False
            continue
        above = above or max(a, b) >= n
        key = (min(a, b), max(a, b))
        if expected.get(key, LABELS[word]) != LABELS[word]:
            valid = False
        expected[key] = LABELS[word]
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(lines) + draw(st.sampled_from(["", newline]))
    return text, (expected if valid else None), above


def _write(tmp, name, text, encoding):
    path = Path(tmp) / name
    path.write_bytes(text.encode(encoding))
    return path


@fuzz_settings(3.0)
@given(data=st.data())
def test_constraints_from_csv(data):
    n = data.draw(st.integers(2, 8), label="n")
    one_based = data.draw(st.booleans(), label="one_based")
    text, expected, above = data.draw(constraint_files(n, one_based), label="file")
    encoding = data.draw(st.sampled_from(ENCODINGS), label="encoding")
    n_samples = data.draw(st.sampled_from([n, None]), label="n_samples")
    if above and n_samples is not None:
        expected = None
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(tmp, "pairs.csv", text, encoding)
        try:
            C = call(pl.PairwiseConstraints.from_csv, path, n_samples=n_samples,
                     one_based=one_based)
        except Rejected as exc:
            assert str(path) in str(exc), f"the message does not name the file: {exc}"
            assert expected is None or encoding == "utf-16" or (
                encoding == "latin-1" and not text.isascii()), str(exc)
            return
    assert expected is not None, "a malformed file was read"
    assert encoding != "utf-16" or not text.strip()
    assert encoding != "latin-1" or text.isascii()
    got = dict(zip(map(tuple, C.pairs.tolist()), C.signs.tolist(), strict=True))
    assert got == expected


@st.composite
def libsvm_texts(draw):
    """LIBSVM lines: labels, 1-based ``index:value`` features, comments, NaN / inf,
    zero or decreasing indices, garbage."""
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        label = draw(st.sampled_from(["1", "-1", "+1", "2.5", "x"]))
        idx = draw(st.lists(st.integers(0, 6), max_size=4))
        values = draw(st.lists(st.sampled_from(["1", "-0.5", "1e3", "nan", "inf", "a"]),
                               min_size=len(idx), max_size=len(idx)))
        tail = draw(st.sampled_from(["", " # comment", " qid:1"]))
        lines.append(" ".join([label] + [f"{i}:{v}" for i, v in zip(idx, values,
                                                                     strict=True)]) + tail)
    return "\n".join(lines) + "\n"


@fuzz_settings(3.0)
@given(data=st.data())
def test_read_libsvm(data):
    text = data.draw(libsvm_texts(), label="text")
    n_features = data.draw(st.sampled_from([None, 3, 6, 0]), label="n_features")
    compressed = data.draw(st.booleans(), label="gzip")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("data.gz" if compressed else "data.txt")
        raw = text.encode()
        path.write_bytes(gzip.compress(raw, mtime=0) if compressed else raw)
        source = data.draw(st.sampled_from([str(path), path, "fileobj"]), label="source")
        if source == "fileobj":
            source = io.BytesIO(raw)
        try:
            X, y = call(pl.datasets.read_libsvm, source, n_features=n_features)
        except Rejected as exc:
            where = str(path) if isinstance(source, str | Path) else "f (a file object)"
            assert str(exc).startswith(where), str(exc)
            return
    assert X.dtype == np.float64 and X.flags.c_contiguous and X.ndim == 2
    assert y.dtype == np.float64 and y.shape == (X.shape[0],)
    assert n_features is None or X.shape[1] == n_features


@st.composite
def feature_files(draw, n):
    """A features file for the command line: CSV (maybe with a BOM, ragged rows, NaN,
    text), .npy (any dtype and shape), or LIBSVM text; and whether it is well formed."""
    kind = draw(st.sampled_from(["csv", "csv", "npy", "libsvm"]))
    odd = draw(st.integers(0, 2)) == 0
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    X = rng.normal(size=(n, 2))
    X[n // 2:] += 4
    if kind == "npy":
        array = draw(st.sampled_from([X.astype(np.complex128), X.astype(str), X[:, 0],
                                      X[None], np.where(X > 5, np.nan, X)] if odd else
                                     [X, X.astype(np.float32), np.round(X).astype(int)]))
        buffer = io.BytesIO()
        np.save(buffer, array)
        raw = buffer.getvalue()
        if odd and draw(st.booleans()):
            raw = raw[:len(raw) // 2]
        return "features.npy", raw
    if kind == "libsvm":
        rows = [f"0 1:{a:.3f} 2:{b:.3f}" for a, b in X]
        if odd:
            rows[0] = draw(st.sampled_from(["0 1:inf", "0 1:nan 2:1", "junk", "0 0:1"]))
        return "features.svm", ("\n".join(rows) + "\n").encode()
    rows = [f"{a:.3f},{b:.3f}" for a, b in X]
    if odd:
        row = draw(st.integers(0, n - 1))
        rows[row] = draw(st.sampled_from(["1.0", "1,2,3", "nan,1", "a,b", "", "1;2"]))
    encoding = draw(st.sampled_from(["utf-16"] if odd else ["utf-8", "utf-8-sig"]))
    return "features.csv", ("\n".join(rows) + "\n").encode(encoding)


@fuzz_settings(1.0)
@given(data=st.data())
def test_cli_cluster_reads_any_files(data):
    n = data.draw(st.integers(4, 12), label="n")
    one_based = data.draw(st.booleans(), label="one_based")
    name, raw = data.draw(feature_files(n), label="features")
    text, _, _ = data.draw(constraint_files(n, one_based, well_formed=data.draw(
        st.integers(0, 2), label="odd constraints") != 0), label="constraints")
    encoding = data.draw(st.sampled_from(ENCODINGS), label="encoding")
    with tempfile.TemporaryDirectory() as tmp:
        features = Path(tmp) / name
        features.write_bytes(raw)
        constraints = _write(tmp, "pairs.csv", text, encoding)
        out = Path(tmp) / "labels.csv"
        argv = ["cluster", str(features), str(constraints), "-k", "2", "-o", str(out), "-q"]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = main(argv + (["--one-based"] if one_based else []))
        assert status in (0, 2)
        event(f"main: exit {status}")
        if status == 2:
            message = err.getvalue()
            assert message.startswith("psdlearn cluster: error: ")
            assert str(features) in message or str(constraints) in message or \
                "constraint" in message or "pair" in message, message
        else:
            labels = np.loadtxt(out, dtype=np.int64, ndmin=1)
            assert labels.shape[0] >= 2 and set(labels.tolist()) <= {0, 1}
