"""Data sets of the psdlearn experiments: bundled, generated and external.

``load(name)`` returns ``(X, y)``: ``X`` a float64 C-contiguous ``(n, d)`` matrix and ``y``
int64 labels **re-coded to 0 .. C-1 in sorted order of the original labels** (-1/+1 ->
0/1; LIBSVM digits 1..10 -> 0..9; iris names, sonar M/R and soybean D1..D4 in
alphabetical order). Names are case-insensitive. ``list_datasets()`` describes every set.

Sources
-------
bundled
    iris (150 x 4, 3 classes), wine (178 x 13, 3), glass (214 x 9, 6), heart (270 x 13, 2),
    sonar (208 x 60, 2) and soybean (47 x 35, 4), shipped in ``datasets/data``.
generated
    chessboard (100 x 2, 2) and double-spiral (100 x 3, 2): the files used by the NPKL
    papers are unavailable, so fixed instances (seed 0) of :func:`make_chessboard` and
    :func:`make_double_spiral` are returned.
external
    read from :func:`data_home` (``$PSDLEARN_DATA``, else ``../shared/data`` next to the
    working directory or the source checkout, else ``~/.cache/psdlearn``); never
    downloaded; a missing file raises :class:`FileNotFoundError`. Adult a1a, a2a, a3a,
    a4a, a6a, a8a, a9a; german.numer, dna, pendigits, svmguide1, satimage, usps (7291 /
    2007), segment, mnist (60000 / 10000); the Chapelle SSL-book sets digit1, ssl-usps,
    coil, coil2, g241c, g241n, bci, text (their official labelled splits via
    :func:`load_ssl_splits`).
unavailable
    protein (116 x 20, 6; Xing et al. 2002) raises :class:`DatasetNotAvailableError`.

Feature preprocessing (``load(name, scale=True)``, the default)
---------------------------------------------------------------
The NPKL papers used the LIBSVM-scaled versions of the UCI sets, so:

- bundled iris, wine, glass, sonar, soybean: each feature min-max scaled to ``[-1, 1]``
  (LIBSVM ``svm-scale`` rule; constant features -> 0). heart is stored as LIBSVM's
  ``heart_scale``, already in ``[-1, 1]``, and is returned as stored.
- german.numer, svmguide1 and segment are stored unscaled (LIBSVM's ``segment.scale`` is
  not available; the PMLB copy of the UCI data is used) and are min-max scaled to
  ``[-1, 1]``; a test split is scaled with the training ranges, so it may leave
  ``[-1, 1]`` slightly.
- mnist pixels (stored 0..255) are divided by 255.
- used as stored: the adult sets (binary), dna.scale, pendigits.scale, satimage.scale,
  usps (already in ``[-1, 1]``) and the SSL-book sets.

``scale=False`` returns the features exactly as stored. Generated sets ignore ``scale``.
"""

from ._api import DatasetInfo, list_datasets, load, load_ssl_splits
from ._common import DatasetNotAvailableError
from ._external import data_home
from ._generators import (
    make_chessboard,
    make_double_spiral,
    make_triplet_synthetic,
    make_two_gaussians,
    make_xor,
)
from ._libsvm import read_libsvm

__all__ = [
    "DatasetInfo",
    "DatasetNotAvailableError",
    "data_home",
    "list_datasets",
    "load",
    "load_ssl_splits",
    "make_chessboard",
    "make_double_spiral",
    "make_triplet_synthetic",
    "make_two_gaussians",
    "make_xor",
    "read_libsvm",
]
