"""Strategies and checks shared by the property-based tests of ``tests/fuzz``.

Every entry point is called through :func:`call`, which holds the properties common to
all of them: only the documented exceptions, with a message naming the argument; nothing
on stdout; the inputs left as they were.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import pickle
import re
import warnings

import numpy as np
import scipy.sparse as sp
from hypothesis import event, settings
from hypothesis import strategies as st

import psdlearn as pl

#: dtypes of generated feature matrices and label vectors
DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint8, np.bool_,
          np.complex128, object]


def fuzz_settings(weight=1.0):
    """The loaded profile's number of examples, times ``weight`` (cheap entry points get
    more, whole fits fewer)."""
    return settings(max_examples=max(1, round(settings.default.max_examples * weight)))


# ---------------------------------------------------------------------- inputs
@st.composite
def matrices(draw, min_rows=0, max_rows=12, min_cols=0, max_cols=4, dtypes=DTYPES,
             bad_values=True, sparse=True):
    """A feature matrix: any shape (zero rows or columns included), dtype, NaN / inf at
    some positions, constant or duplicated columns; dense, CSR or a list of lists."""
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(min_cols, max_cols))
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    X = rng.normal(size=(n, d)) * draw(st.sampled_from([1.0, 1e-8, 1e6]))
    if d and draw(st.booleans()):
        X[:, draw(st.integers(0, d - 1))] = draw(st.sampled_from([0.0, 3.0]))
    if n > 1 and draw(st.booleans()):
        X[draw(st.integers(1, n - 1))] = X[0]  # duplicated point: distance ties
    if bad_values and n and d and draw(st.integers(0, 4)) == 0:
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = draw(
            st.sampled_from([np.nan, np.inf, -np.inf]))
    if dtype is object:
        X = X.astype(object)
    elif np.dtype(dtype).kind in "iub":
        with np.errstate(invalid="ignore"):
            X = np.nan_to_num(np.round(X * 3), posinf=0, neginf=0).astype(dtype)
    else:
        with np.errstate(over="ignore"):
            X = X.astype(dtype)
    form = draw(st.sampled_from(["dense", "dense", "dense", "fortran", "csr", "list"])
                if sparse else st.sampled_from(["dense", "fortran", "list"]))
    if form == "fortran":
        return np.asfortranarray(X)
    if form == "csr" and X.dtype.kind in "fiub" and X.dtype != np.float16:
        return sp.csr_matrix(X)
    if form == "list":
        return X.tolist()
    return X


def well_formed(n, d, rng):
    """Two well separated clusters: the inputs on which a fit should succeed."""
    X = rng.normal(size=(n, d))
    X[n // 2:] += 4.0
    return X


@st.composite
def pair_rows(draw, n, max_pairs=12, valid=False):
    """``[i, j, sign]`` rows over ``n`` points: duplicated and contradictory pairs,
    self-pairs, indices out of range or negative, signs other than +1/-1 unless
    ``valid``."""
    lo, hi = (0, max(n - 1, 0)) if valid else (-2, n + 2)
    signs = [-1, 1] if valid else [-1, 1, 1, -1, 0, 2]
    rows = draw(st.lists(st.tuples(st.integers(lo, hi), st.integers(lo, hi),
                                   st.sampled_from(signs)), max_size=max_pairs))
    if valid:
        if n >= 3:  # at least a must-link and a cannot-link
            rows = [(0, 1, 1), (1, n - 1, -1)] + rows
        seen, kept = set(), []
        for i, j, s in rows:
            key = (min(i, j), max(i, j))
            if i != j and key not in seen:
                seen.add(key)
                kept.append((i, j, s))
        rows = kept
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


@st.composite
def partial_labels(draw, n, valid=False):
    """Partial labels, ``-1`` unlabelled: empty and single-sample classes, one class,
    none labelled; wrong lengths, NaN, floats and strings unless ``valid``."""
    length = n if valid else draw(st.sampled_from([n, n, n, max(n - 1, 0), n + 1]))
    y = np.array(draw(st.lists(st.sampled_from([-1, 0, 1, 2, 7]), min_size=length,
                               max_size=length)), dtype=np.int64)
    if valid:
        if n >= 3:  # at least two classes, one of two points
            y[[0, 1, n - 1]] = [0, 0, 1]
        return y
    kind = draw(st.sampled_from(["int", "int", "float", "nan", "str", "bool", "2d"]))
    if kind == "float":
        return y.astype(np.float64)
    if kind == "nan" and length:
        out = y.astype(np.float64)
        out[draw(st.integers(0, length - 1))] = np.nan
        return out
    if kind == "str":
        return y.astype(str)
    if kind == "bool":
        return y > 0
    if kind == "2d":
        return y.reshape(-1, 1)
    return y


@st.composite
def side_information(draw, n, kinds=("pairs", "array", "labels"), valid=False):
    """``y`` of ``fit``: a PairwiseConstraints, ``[i, j, sign]`` rows, partial labels,
    Triplets, or (unless ``valid``) None or something else entirely."""
    choices = list(kinds) + ([] if valid else ["none", "junk"])
    kind = draw(st.sampled_from(choices))
    if kind == "pairs":
        rows = draw(pair_rows(n, valid=True))
        return pl.PairwiseConstraints(rows[:, :2], rows[:, 2], n_samples=n)
    if kind == "array":
        return draw(pair_rows(n, valid=valid))
    if kind == "labels":
        return draw(partial_labels(n, valid=valid))
    if kind == "triplets":
        rows = draw(st.lists(st.lists(st.integers(0, max(n - 1, 0)), min_size=3, max_size=3,
                                      unique=True), max_size=8)) if n >= 3 else []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return pl.Triplets(np.array(rows, dtype=np.int64).reshape(-1, 3), n_samples=n)
    if kind == "none":
        return None
    return draw(st.sampled_from([np.zeros((2, 2)), np.zeros((2, 3, 1)), "labels", 3.0,
                                 np.array([[0, 1, 1]], dtype=np.float64) + 0.5]))


# ---------------------------------------------------------------------- checks
#: words that name the argument at fault, in psdlearn's messages and scikit-learn's
_ARGUMENT_WORDS = re.compile(
    r"\b(X|y|pairs?|signs|triplets?|labels?|n_samples|n_clusters|constraints?|"
    r"preprocessor|rank|must-links?|cannot-links?|similar|feature|features|sample|samples|"
    r"sample\(s\)|feature\(s\)|classes|class|landmarks?|n_landmarks|n_neighbors|"
    r"n_components|array|input|dtype|E|path|index|indices|n_triplets|n_must|n_cannot|"
    r"chunklets?|row|column|line|label|estimator|threshold|strategy|f|file|"
    r"[a-z_]+ parameter|[\w.]+:\d+)\b|'[a-z_]+' parameter of")

#: scikit-learn's own messages for complex input (``check_array``), which name no
#: argument; psdlearn leaves complex input to scikit-learn's validation
_SKLEARN_COMPLEX = re.compile(r"^Complex data not supported|^float\(\) argument must be a "
                              r"string or a real number, not 'complex'")

DOCUMENTED = (ValueError, TypeError)


def snapshot(value):
    """A deep copy of an input, to check that the call left it as it was."""
    if sp.issparse(value):
        return value.copy()
    return copy.deepcopy(value)


def same(a, b):
    if isinstance(a, io.IOBase):
        return True  # a file object is read, and so consumed
    if sp.issparse(a):
        return (sp.issparse(b) and a.format == b.format and a.shape == b.shape
                and all(same(getattr(a, k), getattr(b, k)) for k in ("data", "indices",
                                                                      "indptr")))
    if isinstance(a, pl.PairwiseConstraints):
        return (np.array_equal(a.pairs, b.pairs) and np.array_equal(a.signs, b.signs)
                and a.n_samples == b.n_samples)
    if isinstance(a, pl.Triplets):
        return np.array_equal(a.triplets, b.triplets) and a.n_samples == b.n_samples
    if isinstance(a, np.ndarray) and a.dtype == object:
        return isinstance(b, np.ndarray) and b.dtype == object and a.shape == b.shape \
            and repr(a.tolist()) == repr(b.tolist())
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, list):
        return np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)) \
            or repr(a) == repr(b)
    return a == b or repr(a) == repr(b)


class Rejected(Exception):
    """The call raised a documented exception (the example then ends)."""


def _names_a_parameter(fn, message):
    """Whether ``message`` names one of the parameters of ``fn``."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False
    owner = getattr(fn, "__self__", None)
    if hasattr(owner, "get_params"):  # an estimator's method: its parameters too
        names += list(owner.get_params(deep=False))
    return any(re.search(rf"\b{re.escape(name)}\b", message) for name in names)


def call(fn, *args, expected=DOCUMENTED, **kwargs):
    """``fn(*args, **kwargs)`` under the common properties.

    Returns its value; raises :class:`Rejected` when it raised one of ``expected`` with a
    message naming an argument. Any other exception, a message naming nothing, output on
    stdout, or an argument modified fails the test.
    """
    before = [snapshot(a) for a in args] + [snapshot(v) for v in kwargs.values()]
    out = io.StringIO()
    name = getattr(fn, "__name__", type(fn).__name__)
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = fn(*args, **kwargs)
    except expected as exc:
        event(f"{name}: {type(exc).__name__}")  # the statistics: how often each outcome
        message = str(exc)
        assert (_ARGUMENT_WORDS.search(message) or _SKLEARN_COMPLEX.search(message)
                or _names_a_parameter(fn, message)), (
            f"{type(exc).__name__} names no argument: {message!r}")
        raise Rejected(message) from exc
    finally:
        assert out.getvalue() == "", f"printed to stdout: {out.getvalue()[:200]!r}"
        after = list(args) + list(kwargs.values())
        for i, (a, b) in enumerate(zip(after, before, strict=True)):
            assert same(a, b), f"argument {i} of {name} was modified"
    event(f"{name}: returned")
    return value


def check_output(Z, n_rows, dtype=np.float64):
    """A finite ``(n_rows, k)`` array of ``dtype``."""
    assert isinstance(Z, np.ndarray), type(Z)
    assert Z.dtype == dtype, Z.dtype
    assert Z.ndim == 2 and Z.shape[0] == n_rows, Z.shape
    assert np.all(np.isfinite(Z)), "non-finite output"


def roundtrip(model):
    return pickle.loads(pickle.dumps(model))
