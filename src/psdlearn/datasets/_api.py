"""The catalogue of data sets and the public ``load`` / ``list_datasets`` functions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _bundled, _external
from ._common import DatasetNotAvailableError, encode_labels, finalize, minmax_scale
from ._generators import make_chessboard, make_double_spiral

__all__ = ["DatasetInfo", "list_datasets", "load", "load_ssl_splits"]

#: Seed of the fixed instances returned by ``load("chessboard")`` / ``load("double-spiral")``.
GENERATED_SEED = 0

_GENERATED = {
    "chessboard": (make_chessboard, 100, 2, 2,
                   "synthetic 3x3 chessboard in [0, 1]^2, 50 points per colour "
                   "(make_chessboard, seed 0)"),
    "double-spiral": (make_double_spiral, 100, 3, 2,
                      "synthetic pair of interleaved 3-D spirals, 50 points each "
                      "(make_double_spiral, seed 0)"),
}

_PROTEIN = ("protein", 116, 20, 6,
            "protein fold data of Xing et al. (NIPS 2002): not available to psdlearn")

_ALIASES = {
    "spiral": "double-spiral",
    "dbl-spiral": "double-spiral",
    "double_spiral": "double-spiral",
    "doublespiral": "double-spiral",
    "soybean-small": "soybean",
    "heart_scale": "heart",
    "german": "german.numer",
    "usps-ssl": "ssl-usps",
    "ssl_usps": "ssl-usps",
    "segmentation": "segment",
}

_SPLITS = ("train", "test", "all")


@dataclass(frozen=True)
class DatasetInfo:
    """What :func:`list_datasets` knows about one data set.

    Attributes
    ----------
    name : str
        Canonical name accepted by :func:`load`.
    n_samples : int
        Number of points of the default (``"train"``) split.
    n_features : int
        Number of features.
    n_classes : int
        Number of classes.
    source : {"bundled", "generated", "external"}
        Shipped in the package, produced by a generator with a fixed seed, or read from
        :func:`data_home`.
    available : bool
        Whether :func:`load` can return it now (external files present).
    description : str
        Origin and preprocessing.
    splits : tuple of str
        Values accepted by ``load(name, split=...)``.
    """

    name: str
    n_samples: int
    n_features: int
    n_classes: int
    source: str
    available: bool
    description: str
    splits: tuple[str, ...] = ("train", "all")


def _all_names():
    names = list(_bundled.BUNDLED) + list(_GENERATED) + [_PROTEIN[0]] + list(_external.EXTERNAL)
    return names


def _canonical(name):
    """Map a user-given name (any case, aliases) to the canonical name."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _all_names():
        raise ValueError(f"unknown data set {name!r}; valid names are: {', '.join(_all_names())}")
    return key


def list_datasets(data_dir=None):
    """Describe every data set that :func:`load` knows.

    Parameters
    ----------
    data_dir : path-like, optional
        Directory to check for the external files; defaults to :func:`data_home`.

    Returns
    -------
    infos : list of DatasetInfo
        In the order bundled, generated, protein, external. Use
        :func:`dataclasses.asdict` for plain dictionaries.
    """
    infos = [
        DatasetInfo(s.name, s.n_samples, s.n_features, s.n_classes, "bundled", True,
                    s.description)
        for s in _bundled.BUNDLED.values()
    ]
    infos += [
        DatasetInfo(name, n, d, c, "generated", True, desc)
        for name, (_, n, d, c, desc) in _GENERATED.items()
    ]
    infos.append(DatasetInfo(*_PROTEIN[:4], "external", False, _PROTEIN[4], ()))
    for spec in _external.EXTERNAL.values():
        splits = _SPLITS if spec.test is not None else ("train", "all")
        infos.append(
            DatasetInfo(spec.name, spec.n_samples, spec.n_features, spec.n_classes, "external",
                        _external.is_available(spec, data_dir), spec.description, splits)
        )
    return infos


def load(name, split="train", *, scale=True, data_dir=None):
    """Load a data set as ``(X, y)``.

    Parameters
    ----------
    name : str
        Case-insensitive name, see :func:`list_datasets` (a few aliases are accepted, e.g.
        ``"spiral"`` and ``"usps-ssl"``).
    split : {"train", "test", "all"}, default="train"
        ``"test"`` exists only for the sets that have a test file (adult except a6a, dna,
        pendigits, svmguide1, satimage, usps, mnist); ``"all"`` is train followed by test.
        For the other sets, ``"train"`` and ``"all"`` are the whole set.
    scale : bool, default=True
        Apply the documented feature preprocessing of the set (module docstring of
        :mod:`psdlearn.datasets`): min-max to ``[-1, 1]`` for the bundled UCI sets,
        german.numer, svmguide1 and segment; pixels / 255 for mnist; nothing for sets that
        are stored already scaled. ``scale=False`` returns the features as stored. Min-max
        ranges always come from the training split. Ignored for generated sets.
    data_dir : path-like, optional
        Directory of the external files; defaults to :func:`data_home`.

    Returns
    -------
    X : ndarray of shape (n, d), dtype float64, C-contiguous
        Features.
    y : ndarray of shape (n,), dtype int64
        Labels re-coded to ``0 .. C-1`` in sorted order of the original labels (e.g.
        -1/+1 -> 0/1, LIBSVM classes 1..10 -> 0..9, sonar M/R -> 0/1).

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid ones) or split.
    DatasetNotAvailableError
        For ``"protein"``, which no copy is available of (a ``ValueError``).
    FileNotFoundError
        An external file is missing; the message names the file, the directory searched
        and the ``PSDLEARN_DATA`` variable.
    """
    key = _canonical(name)
    if split not in _SPLITS:
        raise ValueError(f"split must be one of {_SPLITS}, got {split!r}")
    if key == _PROTEIN[0]:
        raise DatasetNotAvailableError(
            "data set 'protein' (116 x 20, 6 classes; Xing, Ng, Jordan & Russell, NIPS 2002) "
            "is not available: no copy of it could be obtained for psdlearn, so it is neither "
            "bundled nor in the shared data directory"
        )
    if key in _bundled.BUNDLED:
        if split == "test":
            raise ValueError(f"data set {key!r} has no test split; use split='train'")
        X, y_raw = _bundled.read_bundled(key)
        if scale and not _bundled.BUNDLED[key].prescaled:
            X = minmax_scale(X)
        return finalize(X, encode_labels(y_raw))
    if key in _GENERATED:
        if split == "test":
            raise ValueError(f"data set {key!r} has no test split; use split='train'")
        return _GENERATED[key][0](random_state=GENERATED_SEED)
    X, y = _external.read_external(_external.EXTERNAL[key], split, scale, data_dir)
    return finalize(X, y)


def load_ssl_splits(name, n_labeled=10, *, data_dir=None):
    """Official labelled subsets of a Chapelle SSL-book benchmark.

    Parameters
    ----------
    name : {"digit1", "ssl-usps", "coil", "coil2", "g241c", "g241n", "bci", "text"}
        The set (case-insensitive).
    n_labeled : {10, 100}, default=10
        Number of labelled points per split.
    data_dir : path-like, optional
        Directory of the external files; defaults to :func:`data_home`.

    Returns
    -------
    idx : ndarray of shape (12, n_labeled), dtype int64
        Row ``s`` holds the 0-based indices (into ``load(name)``) of the points labelled
        in split ``s``.
    """
    key = _canonical(name)
    spec = _external.EXTERNAL.get(key)
    if spec is None or spec.kind != "ssl":
        ssl = [s.name for s in _external.EXTERNAL.values() if s.kind == "ssl"]
        raise ValueError(f"{name!r} is not an SSL-book set; choose one of {', '.join(ssl)}")
    idx = _external.ssl_splits(spec, n_labeled, data_dir)
    if idx.shape != (12, n_labeled) or idx.min() < 0 or idx.max() >= spec.n_samples:
        raise ValueError(f"malformed split indices in the file of {key!r}: shape {idx.shape}")
    return np.ascontiguousarray(idx, dtype=np.int64)
