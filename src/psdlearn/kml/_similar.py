"""The similar set ``S`` of KernelMetricLearner and RCA, read from ``y`` of ``fit``.

Both estimators use similar (must-link) information only (Yeung, Chang & Dai 2007 section
2.1; Bar-Hillel et al. 2005). ``S`` is the set of must-link pairs of ``y`` as
:func:`psdlearn.constraints.check_side_info` reads every form of it (the pairs that
:func:`psdlearn.constraints.as_constraints` would list); the cannot-links are dropped with
a warning. For partial labels ``S`` is every pair of labelled points of one class: there
are ``sum_c n_c (n_c - 1) / 2`` of them (quadratic in the class sizes), so they are never
listed: every quantity the estimators need is a within-class scatter, computed from the
class codes directly in ``O(n_labelled)`` per column.
"""

from __future__ import annotations

import warnings

import numpy as np

from psdlearn.constraints import PairwiseConstraints, check_side_info

__all__ = ["SimilarSet", "similar_set"]

#: Rows of pairs per block in :meth:`SimilarSet.dispersion` (bounds its memory).
_PAIR_BLOCK = 1 << 15


class SimilarSet:
    """Similar pairs given as a list of pairs or as the classes of partial labels.

    Exactly one of ``pairs`` and ``codes`` is set.

    Parameters
    ----------
    n_samples : int
    pairs : ndarray of shape (s, 2), int64, optional
        Distinct must-link pairs ``i < j``.
    codes : ndarray of shape (n_samples,), int64, optional
        Class code of each sample, ``-1`` for a sample in no similar pair. Every pair of
        samples with one code is similar.
    """

    def __init__(self, n_samples, pairs=None, codes=None):
        self.n_samples = n_samples
        self.pairs = pairs
        self.codes = codes

    @property
    def n_pairs(self):
        """``|S|``, the number of similar pairs."""
        if self.pairs is not None:
            return len(self.pairs)
        sizes = np.bincount(self.codes[self.codes >= 0])
        return int(np.sum(sizes * (sizes - 1) // 2))

    @property
    def points(self):
        """Sorted indices of the samples in some similar pair."""
        if self.pairs is not None:
            return np.unique(self.pairs)
        return np.flatnonzero(self.codes >= 0)

    def dispersion(self, A, rows):
        """Diagonal of ``D_S`` (Yeung et al. 2007, eqs. 2 and 7) for the columns of ``A``.

        ``(D_S)_rr = (1 / |S|) sum_{(i, j) in S} (A[i, r] - A[j, r])**2``. For classes, the
        sum over the pairs of class ``c`` is ``n_c sum_{i in c} (A[i, r] - mean_c)**2``,
        so no pair is listed.

        Parameters
        ----------
        A : ndarray of shape (len(rows), q)
            Columns evaluated at the samples ``rows``.
        rows : ndarray of shape (len(A),), int
            Sorted sample indices of the rows of ``A``; every point of ``S`` among them.

        Returns
        -------
        ndarray of shape (q,)
        """
        total = np.zeros(A.shape[1])
        if self.pairs is not None:
            local = np.searchsorted(rows, self.pairs)
            for start in range(0, len(local), _PAIR_BLOCK):
                block = local[start:start + _PAIR_BLOCK]
                diff = A[block[:, 0]] - A[block[:, 1]]
                total += np.einsum("ij,ij->j", diff, diff)
        else:
            codes = self.codes[rows]
            keep = codes >= 0
            _, group, sizes = np.unique(codes[keep], return_inverse=True, return_counts=True)
            centred = A[keep] - _group_means(A[keep], group, len(sizes))[group]
            total = np.einsum("i,ij,ij->j", sizes[group].astype(float), centred, centred)
        return total / self.n_pairs

    def chunklets(self):
        """The chunklets: connected components of the similar pairs (Bar-Hillel et al.).

        Returns
        -------
        points : ndarray of shape (N,)
            Sorted indices of the samples in some chunklet (of two samples or more).
        chunklet : ndarray of shape (N,)
            Their chunklet numbers, ``0 .. n_chunklets - 1``.
        """
        if self.pairs is not None:
            labels = PairwiseConstraints(self.pairs, np.ones(len(self.pairs)),
                                         self.n_samples).must_link_components()
        else:
            labels = self.codes
        points = self.points
        _, chunklet = np.unique(labels[points], return_inverse=True)
        return points, chunklet


def _group_means(A, group, n_groups):
    sums = np.zeros((n_groups, A.shape[1]))
    np.add.at(sums, group, A)
    return sums / np.bincount(group, minlength=n_groups)[:, None]


def similar_set(y, n_samples, name, warn_cannot=True):
    """Validate ``y`` of ``fit`` and return its similar set.

    Parameters
    ----------
    y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
        Side information (``docs/glossary.md``).
    n_samples : int
    name : str
        Estimator name for the messages.
    warn_cannot : bool, default=True
        Warn that cannot-links are ignored (the caller warns itself when False).

    Returns
    -------
    SimilarSet

    Raises
    ------
    ValueError
        ``y`` is missing or not one of the accepted forms (an ``(s, 2)`` array of index
        pairs included), or ``S`` is empty.
    """
    arr = y if isinstance(y, list | tuple | np.ndarray) else None
    if arr is not None and np.ndim(arr) == 2 and np.shape(arr)[1] == 2:
        raise ValueError(
            f"{name}: y of shape {np.shape(arr)} is ambiguous (two target columns, or "
            "index pairs?): pass similar pairs as PairwiseConstraints(pairs, signs) or as "
            "an (m, 3) array of [i, j, +1] rows (see docs/glossary.md).")
    side = check_side_info(y, n_samples, accept=("labels", "pairs"))
    if side.kind == "pairs":
        C = side.constraints
        if C.n_cannot and warn_cannot:
            warnings.warn(f"{C.n_cannot} cannot-link pair(s) ignored: {name} uses similar "
                          "(must-link) pairs only.", UserWarning, stacklevel=4)
        if C.n_must == 0:
            raise ValueError(f"{name}: y holds no similar (must-link) pair.")
        return SimilarSet(n_samples, pairs=C.must_link)
    # a class with one labelled point is in no similar pair
    codes = side.codes.copy()
    labelled = codes >= 0
    sizes = np.bincount(codes[labelled], minlength=1)
    codes[labelled & (sizes[np.maximum(codes, 0)] < 2)] = -1
    if not (codes >= 0).any():
        raise ValueError(f"{name}: y gives no similar pair: no class has two labelled "
                         "samples (-1 marks unlabelled samples).")
    _, codes[codes >= 0] = np.unique(codes[codes >= 0], return_inverse=True)
    return SimilarSet(n_samples, codes=codes)
