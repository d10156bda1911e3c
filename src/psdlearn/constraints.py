"""Side information: pairwise must-link / cannot-link constraints and relative triplets.

A :class:`PairwiseConstraints` holds ``m`` unordered pairs ``(i, j)``, ``i < j``, each with
a sign ``T_ij = +1`` (must-link: same class) or ``-1`` (cannot-link: different classes),
over ``n_samples`` points. Triplets ``(i, j, k)`` state ``d(i, j) < d(i, k)``.
"""

from __future__ import annotations

import csv
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.utils import check_random_state

from psdlearn._constraint_checks import ConstraintConflictWarning, _name_pairs, warn_conflicts
from psdlearn._index_tables import (
    _as_index_array,
    _index_rows,
    _resolve_count,
    _SampleIndexRows,
    labelled_mask,
)
from psdlearn._triplets import Triplets, triplets_from_constraints, triplets_from_labels

__all__ = [
    "ConstraintConflictWarning",
    "PairwiseConstraints",
    "SideInfo",
    "Triplets",
    "as_constraints",
    "check_side_info",
    "triplets_from_constraints",
    "triplets_from_labels",
]

_SIGN_WORDS = {"+1": 1, "1": 1, "must": 1, "must-link": 1, "ml": 1,
               "-1": -1, "cannot": -1, "cannot-link": -1, "cl": -1}


def _must_link_components(n_samples, must_link):
    """Component number of each of ``n_samples`` points in the graph of the ``(m, 2)``
    must-link pairs (:meth:`PairwiseConstraints.must_link_components` without building
    the object, for callers that split the pairs many times)."""
    rows, cols = must_link[:, 0], must_link[:, 1]
    if np.any(rows[1:] < rows[:-1]):
        order = np.argsort(rows, kind="stable")
        rows, cols = rows[order], cols[order]
    # CSR arrays directly: a COO matrix and its conversion cost more than the search
    indptr = np.zeros(n_samples + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_samples), out=indptr[1:])
    graph = sp.csr_array((np.ones(len(cols)), np.ascontiguousarray(cols), indptr),
                         shape=(n_samples, n_samples))
    return connected_components(graph, directed=False)[1]


class PairwiseConstraints(_SampleIndexRows):
    """Must-link and cannot-link constraints over ``n_samples`` points.

    Parameters
    ----------
    pairs : array-like of shape (m, 2)
        Index pairs; stored with ``i < j`` (each pair is unordered).
    signs : array-like of shape (m,)
        ``+1`` must-link, ``-1`` cannot-link.
    n_samples : int, optional
        Number of points the indices refer to; inferred as ``max index + 1`` when omitted.

    Attributes
    ----------
    pairs : ndarray of shape (m, 2), int64
        Sorted rows ``i < j``, lexicographic order, no duplicates.
    signs : ndarray of shape (m,), int64
        Values in ``{+1, -1}``.
    n_samples : int

    Raises
    ------
    ValueError
        On NaN, indices out of range or negative, self-pairs ``(i, i)``, signs other than
        +-1, or a pair marked both must-link and cannot-link (an *opposite duplicate*: the
        message names the pairs). Duplicated pairs with the same sign are merged with a
        :class:`UserWarning` that names them.

    Notes
    -----
    The constructor checks each pair on its own. Contradictions that only a chain of
    pairs reveals (``a ~ b``, ``b ~ c`` but ``a`` cannot-link ``c``) are found by
    :meth:`conflicts`; fitting an estimator on such constraints gives a
    :class:`ConstraintConflictWarning` that names them. Nothing is inferred silently:
    :meth:`closure` adds the pairs that transitivity implies only when called.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn import PairwiseConstraints
    >>> C = PairwiseConstraints([[0, 1], [3, 2]], [1, -1], n_samples=4)
    >>> C.pairs.tolist(), C.signs.tolist()
    ([[0, 1], [2, 3]], [1, -1])
    """

    def __init__(self, pairs, signs, n_samples=None):
        pairs, n_samples = _index_rows(pairs, 2, n_samples, "pairs", "m")
        signs = _as_index_array(signs, "signs").ravel()
        if signs.shape[0] != pairs.shape[0]:
            raise ValueError(
                f"signs has {signs.shape[0]} entries but there are {pairs.shape[0]} pairs."
            )
        bad = ~np.isin(signs, (-1, 1))
        if bad.any():
            raise ValueError(
                f"signs must be +1 (must-link) or -1 (cannot-link); got {signs[bad][0]} "
                f"at row {int(np.flatnonzero(bad)[0])}."
            )
        self_pairs = pairs[:, 0] == pairs[:, 1]
        if self_pairs.any():
            row = int(np.flatnonzero(self_pairs)[0])
            raise ValueError(f"self-pair ({pairs[row, 0]}, {pairs[row, 0]}) at row {row}.")
        pairs = np.sort(pairs, axis=1)
        order = np.lexsort((pairs[:, 1], pairs[:, 0]))
        pairs, signs = pairs[order], signs[order]
        if len(pairs) > 1:
            same = np.all(pairs[1:] == pairs[:-1], axis=1)
            if same.any():
                conflict = same & (signs[1:] != signs[:-1])
                if conflict.any():
                    bad = np.unique(pairs[1:][conflict], axis=0)
                    raise ValueError(
                        f"{len(bad)} pair(s) marked both must-link and cannot-link: "
                        f"{_name_pairs(bad)}; keep one answer for each."
                    )
                warnings.warn(
                    f"{int(same.sum())} duplicated constraint(s) merged: "
                    f"{_name_pairs(np.unique(pairs[1:][same], axis=0))}.",
                    UserWarning,
                    stacklevel=2,
                )
                keep = np.concatenate([[True], ~same])
                pairs, signs = pairs[keep], signs[keep]
        self.pairs = np.ascontiguousarray(pairs, dtype=np.int64)
        self.signs = np.ascontiguousarray(signs, dtype=np.int64)
        self.n_samples = n_samples

    # ------------------------------------------------------------------ views
    @property
    def n_pairs(self):
        """Number of constrained pairs ``m``."""
        return len(self.pairs)

    def __repr__(self):
        return (
            f"PairwiseConstraints(n_samples={self.n_samples}, must_link={self.n_must}, "
            f"cannot_link={self.n_cannot})"
        )

    @property
    def must_link(self):
        """ndarray of shape (n_must, 2): the must-link pairs."""
        return self.pairs[self.signs == 1]

    @property
    def cannot_link(self):
        """ndarray of shape (n_cannot, 2): the cannot-link pairs."""
        return self.pairs[self.signs == -1]

    @property
    def n_must(self):
        """Number of must-link pairs."""
        return int(np.sum(self.signs == 1))

    @property
    def n_cannot(self):
        """Number of cannot-link pairs."""
        return int(np.sum(self.signs == -1))

    @property
    def constrained_samples(self):
        """ndarray of sorted indices of the samples that appear in some pair."""
        return np.unique(self.pairs)

    def to_array(self):
        """Return the constraints as an (m, 3) int64 array of rows ``[i, j, sign]``."""
        return np.column_stack([self.pairs, self.signs]).astype(np.int64)

    # ------------------------------------------------------------- builders
    @classmethod
    def from_array(cls, array, n_samples=None):
        """Build from an (m, 3) array of rows ``[i, j, +1/-1]``.

        Parameters
        ----------
        array : array-like of shape (m, 3)
        n_samples : int, optional

        Returns
        -------
        PairwiseConstraints
        """
        arr = np.asarray(array)
        if arr.size == 0:
            arr = arr.reshape(0, 3)
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise ValueError(f"constraint array must have shape (m, 3), got {arr.shape}.")
        return cls(arr[:, :2], arr[:, 2], n_samples=n_samples)

    @classmethod
    def from_labels(cls, y, n_must=0.6, n_cannot=0.6, random_state=None):
        """Random distinct constraints drawn from (partial) labels: the Hu & Kwok 2015 protocol.

        ``n_must`` pairs are drawn uniformly among the distinct pairs of labelled points
        that share a class, ``n_cannot`` among those in different classes (Hu & Kwok 2015
        section IV-A: 0.6 n of each). Points labelled ``-1`` are unlabelled and never used.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Integer labels; ``-1`` marks unlabelled points.
        n_must, n_cannot : float or int, default=0.6
            Floats are fractions of ``n_samples`` (rounded), ints are counts.
        random_state : int, RandomState instance or None

        Returns
        -------
        PairwiseConstraints

        Raises
        ------
        ValueError
            If more pairs are requested than exist.
        """
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}.")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or inf.")
        n = len(y)
        rng = check_random_state(random_state)
        counts = [_resolve_count(v, n, name) for v, name in ((n_must, "n_must"),
                                                            (n_cannot, "n_cannot"))]
        labelled = np.flatnonzero(labelled_mask(y))
        yl = y[labelled]
        _, yl_codes, sizes = np.unique(yl, return_inverse=True, return_counts=True)
        n_same = int(np.sum(sizes * (sizes - 1) // 2))
        n_all = len(labelled) * (len(labelled) - 1) // 2
        available = (n_same, n_all - n_same)
        blocks = []
        for sign, count, avail in ((1, counts[0], available[0]), (-1, counts[1], available[1])):
            if count > avail:
                kind = "must-link" if sign == 1 else "cannot-link"
                raise ValueError(
                    f"requested {count} {kind} pairs but the labels allow only {avail}."
                )
            if count == 0:
                continue
            local = _sample_pairs(yl_codes, count, same=sign == 1, rng=rng)
            blocks.append((labelled[local], np.full(count, sign)))
        if not blocks:
            return cls(np.empty((0, 2), np.int64), np.empty(0, np.int64), n_samples=n)
        pairs = np.concatenate([b[0] for b in blocks])
        signs = np.concatenate([b[1] for b in blocks])
        return cls(pairs, signs, n_samples=n)

    # ------------------------------------------------------------------ I/O
    def to_csv(self, path):
        """Write ``i,j,label`` rows (header line, labels +1/-1).

        Parameters
        ----------
        path : str or path-like
            The CSV file to write (overwritten); :meth:`from_csv` reads it back.
        """
        with open(path, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["i", "j", "label"])
            for (i, j), s in zip(self.pairs.tolist(), self.signs.tolist(), strict=True):
                writer.writerow([i, j, f"{s:+d}"])

    @classmethod
    def from_csv(cls, path, n_samples=None, *, one_based=False):
        """Read ``i,j,label`` rows; label is +1/-1 or must/cannot. A header is optional.

        ``i`` and ``j`` are row numbers of the data matrix, counted from 0 unless
        ``one_based``. The file is UTF-8 text (a byte-order mark is skipped); blank lines
        and lines starting with ``#`` are skipped.

        Parameters
        ----------
        path : str or path-like
            The CSV file.
        n_samples : int, optional
            Number of points the indices refer to; every index is checked against it.
            Inferred as ``max index + 1`` when omitted.
        one_based : bool, default=False
            The file counts rows from 1 (the first row of the data is 1); the indices are
            shifted to 0-based on reading.

        Returns
        -------
        PairwiseConstraints
            With 0-based indices.

        Raises
        ------
        ValueError
            Naming the file, line number and what was expected for malformed lines or
            indices out of range; naming the file for a file that is not UTF-8 text, and
            for pairs that the constructor refuses (self-pairs, a pair marked both ways).
        """
        path = Path(path)
        base = 1 if one_based else 0
        counted = "1-based" if one_based else "0-based"
        pairs, signs = [], []
        try:
            rows = list(csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ValueError(f"{path}: not a CSV file of UTF-8 text ({exc}).") from None
        for lineno, row in enumerate(rows, start=1):
            if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith("#"):
                continue
            if lineno == 1 and row[0].strip().lower() in ("i", "a", "index_i", "source"):
                continue
            if len(row) != 3:
                raise ValueError(
                    f"{path}:{lineno}: expected 3 fields 'i,j,label', got {len(row)}: "
                    f"{','.join(row)!r}."
                )
            try:
                i, j = int(row[0]), int(row[1])
            except ValueError:
                raise ValueError(
                    f"{path}:{lineno}: expected integer indices i,j, got "
                    f"{row[0]!r},{row[1]!r}."
                ) from None
            for index in (i, j):
                if index < base or (n_samples is not None and index >= n_samples + base):
                    top = "" if n_samples is None else f" to {n_samples - 1 + base}"
                    raise ValueError(
                        f"{path}:{lineno}: index {index} is out of range: indices are "
                        f"{counted}, from {base}{top}."
                    )
            word = row[2].strip().lower()
            if word not in _SIGN_WORDS:
                raise ValueError(
                    f"{path}:{lineno}: expected label +1/-1 or must/cannot, got {row[2]!r}."
                )
            pairs.append((i - base, j - base))
            signs.append(_SIGN_WORDS[word])
        try:
            return cls(np.array(pairs, dtype=np.int64).reshape(-1, 2),
                       np.array(signs, dtype=np.int64), n_samples=n_samples)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"{path}: {exc}") from None

    # ----------------------------------------------------------- inference
    def must_link_components(self):
        """Connected components of the must-link graph (transitive closure of must-links).

        Returns
        -------
        ndarray of shape (n_samples,), int
            Component number of each sample, ``0 .. n_components - 1``; a sample in no
            must-link pair is a component of its own.
        """
        return _must_link_components(self.n_samples, self.must_link)

    def conflicts(self):
        """Cannot-links that the must-links contradict.

        A cannot-link ``(a, b)`` conflicts when ``a`` and ``b`` lie in the same must-link
        component (:meth:`must_link_components`): a chain of must-links says they belong
        together. At least one pair of the cycle it closes is wrong; which one, the
        constraints alone cannot tell (a fitted :class:`~psdlearn.NPKL` ranks them by how
        much the data disagrees, ``suspicious_constraints``).

        Returns
        -------
        ndarray of shape (n_conflicts,), int64
            Row indices into :attr:`pairs` of the conflicting cannot-links, increasing;
            ``C.pairs[C.conflicts()]`` are the pairs.
        """
        comp = self.must_link_components()
        p = self.pairs
        return np.flatnonzero((self.signs == -1) & (comp[p[:, 0]] == comp[p[:, 1]]))

    def closure(self):
        """Constraints implied by transitivity of must-links.

        Must-links define connected components; every pair inside a component is a
        must-link, and a cannot-link between ``a`` and ``b`` implies a cannot-link between
        every point of the component of ``a`` and every point of the component of ``b``.
        Samples in no must-link form singleton components. The output size is quadratic in
        the component sizes.

        The closure is never applied by an estimator on its own. It helps when the
        constraints are correct and come in chains: labels given one pair at a time, or
        few must-links that connect larger groups, so that the implied pairs add
        information a learner would otherwise not see. It hurts when some constraints are
        wrong: one wrong must-link merges two components, and the closure turns it into
        ``|A| |B|`` wrong must-links and their implied cannot-links. With noisy answers,
        look at :meth:`conflicts` (and a fitted NPKL's ``suspicious_constraints``) first.

        Returns
        -------
        PairwiseConstraints

        Raises
        ------
        ValueError
            If a cannot-link joins two points of the same must-link component (naming the
            pairs, :meth:`conflicts`).
        """
        bad = self.conflicts()
        if bad.size:
            raise ValueError(
                f"inconsistent constraints: {bad.size} cannot-link(s) join points that "
                f"must-links connect: {_name_pairs(self.pairs[bad])} (conflicts())."
            )
        comp = self.must_link_components()
        members = {}
        for c in np.unique(comp[self.pairs.ravel()]) if self.n_pairs else []:
            members[c] = np.flatnonzero(comp == c)
        out_pairs, out_signs = [], []
        for idx in members.values():
            if len(idx) > 1:
                iu, ju = np.triu_indices(len(idx), k=1)
                out_pairs.append(np.column_stack([idx[iu], idx[ju]]))
                out_signs.append(np.ones(len(iu), np.int64))
        cl = self.cannot_link
        comp_pairs = np.unique(np.sort(comp[cl], axis=1), axis=0) if len(cl) else []
        for ca, cb in comp_pairs:
            ia, ib = members[ca], members[cb]
            grid = np.array(np.meshgrid(ia, ib, indexing="ij")).reshape(2, -1).T
            out_pairs.append(grid)
            out_signs.append(-np.ones(len(grid), np.int64))
        if not out_pairs:
            return PairwiseConstraints(np.empty((0, 2), np.int64), np.empty(0, np.int64),
                                       self.n_samples)
        return PairwiseConstraints(np.concatenate(out_pairs), np.concatenate(out_signs),
                                   self.n_samples)

    def union(self, other):
        """These constraints and ``other`` together, as one :class:`PairwiseConstraints`.

        The rules of the constructor apply to the joined table: a pair given in both
        with the same sign is kept once (a :class:`UserWarning` names it), a pair given
        with opposite signs raises ``ValueError``.

        Parameters
        ----------
        other : PairwiseConstraints or array-like of shape (m, 3)
            More pairs, or ``[i, j, +1/-1]`` rows, over the same samples.

        Returns
        -------
        PairwiseConstraints
            Over ``max(self.n_samples, other.n_samples)`` samples.
        """
        if not isinstance(other, PairwiseConstraints):
            other = PairwiseConstraints.from_array(other, n_samples=self.n_samples)
        return PairwiseConstraints(np.concatenate([self.pairs, other.pairs]),
                                   np.concatenate([self.signs, other.signs]),
                                   max(self.n_samples, other.n_samples))


def _sample_pairs(codes, count, same, rng):
    """``count`` distinct pairs (i < j) of positions with equal (``same``) or different codes.

    Uniform over the admissible pairs: rejection sampling of random pairs in batches, or
    enumeration when the admissible set is small.
    """
    n = len(codes)
    total = n * (n - 1) // 2
    if total <= 2_000_000:
        iu, ju = np.triu_indices(n, k=1)
        ok = (codes[iu] == codes[ju]) == same
        iu, ju = iu[ok], ju[ok]
        pick = rng.choice(len(iu), size=count, replace=False)
        return np.column_stack([iu[pick], ju[pick]])
    chosen = np.empty(0, dtype=np.int64)
    while len(chosen) < count:
        batch = max(2 * (count - len(chosen)), 1024)
        i = rng.randint(0, n, size=batch)
        j = rng.randint(0, n, size=batch)
        ok = (i != j) & ((codes[i] == codes[j]) == same)
        lo, hi = np.minimum(i, j)[ok], np.maximum(i, j)[ok]
        keys = lo.astype(np.int64) * n + hi
        # keep the first occurrence of each key, in draw order, so the sample stays uniform
        merged = np.concatenate([chosen, keys])
        _, first = np.unique(merged, return_index=True)
        chosen = merged[np.sort(first)][:count]
    return np.column_stack([chosen // n, chosen % n])


@dataclass(frozen=True)
class SideInfo:
    """Side information ``y`` of ``fit(X, y)``, classified by :func:`check_side_info`.

    Attributes
    ----------
    kind : {"none", "labels", "pairs", "triplets"}
    labels : ndarray of shape (n_samples,) or None
        Partial labels, ``-1`` = unlabelled (``kind="labels"``).
    constraints : PairwiseConstraints or None
        ``kind="pairs"``.
    triplets : Triplets or None
        ``kind="triplets"``.
    codes : ndarray of shape (n_samples,), int64, or None
        ``kind="labels"``: the class code of each sample, ``0 .. c - 1`` for the labelled
        ones (classes in sorted label order), ``-1`` for the unlabelled. Two labelled
        samples are a must-link pair when their codes agree, a cannot-link pair otherwise.
    """

    kind: str
    labels: np.ndarray | None = None
    constraints: PairwiseConstraints | None = None
    triplets: Triplets | None = None
    codes: np.ndarray | None = None


_KIND_WORDS = {
    "labels": "a 1-D vector of partial labels (-1 = unlabelled)",
    "pairs": "a PairwiseConstraints or an (m, 3) array of [i, j, +1/-1] rows",
    "triplets": "a psdlearn.Triplets",
}


def check_side_info(y, n_samples, accept=("labels", "pairs"), required=True, *,
                    check_conflicts=True):
    """Validate ``y`` of ``fit(X, y)`` and say which kind of side information it is.

    The one convention of every psdlearn estimator (the glossary of the documentation),
    and the one reading of each form as pairs:

    - a :class:`PairwiseConstraints`, or an ``(m, 3)`` array of ``[i, j, +1/-1]`` rows:
      those pairs (``kind="pairs"``);
    - a 1-D vector of partial labels, ``-1`` for unlabelled points (``kind="labels"``):
      every pair of labelled points, must-link within a class and cannot-link across. The
      ``l (l - 1) / 2`` pairs of ``l`` labelled points are not listed: ``codes`` numbers
      the classes, and :func:`as_constraints` lists the pairs where an estimator needs
      them;
    - a :class:`Triplets` (``kind="triplets"``).

    Parameters
    ----------
    y : None, array-like of shape (n_samples,) or (m, 3), PairwiseConstraints or Triplets
    n_samples : int
        Number of rows of ``X``; indices of ``y`` must lie in ``[0, n_samples)``.
    accept : tuple of {"labels", "pairs", "triplets"}
        The kinds the estimator takes.
    required : bool, default=True
        Whether ``y=None`` is an error.
    check_conflicts : bool, default=True
        Pairs only: warn (:class:`ConstraintConflictWarning`, naming them) when a
        cannot-link joins two points that must-links connect. Labels cannot conflict.

    Returns
    -------
    SideInfo

    Raises
    ------
    ValueError
        ``y`` is missing when required, of a kind the estimator does not take, refers to
        more samples than ``X`` has, or holds NaN / inf labels.
    """
    wanted = " or ".join(_KIND_WORDS[k] for k in accept)
    if y is None:
        if required:
            raise ValueError(f"this estimator requires y to be passed, but the target y is "
                             f"None: pass {wanted} (see the glossary of the documentation).")
        return SideInfo("none")
    if isinstance(y, PairwiseConstraints | Triplets):
        kind = "pairs" if isinstance(y, PairwiseConstraints) else "triplets"
        if kind not in accept:
            raise ValueError(f"this estimator does not take {type(y).__name__}: pass {wanted}.")
        if y.n_samples > n_samples:
            raise ValueError(f"y refers to {y.n_samples} samples but X has {n_samples}.")
        if kind == "pairs":
            C = PairwiseConstraints(y.pairs, y.signs, n_samples=n_samples)
            if check_conflicts:
                warn_conflicts(C, stacklevel=3)
            return SideInfo("pairs", constraints=C)
        return SideInfo("triplets", triplets=Triplets(y.triplets, n_samples=n_samples))
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim == 1 and "labels" in accept:
        if len(arr) != n_samples:
            raise ValueError(f"y (partial labels) has length {len(arr)} but X has "
                             f"{n_samples} samples.")
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            raise ValueError("y (partial labels) contains NaN or inf.")
        if arr.dtype.kind not in "iufbOUS":
            raise TypeError(f"y (partial labels) has unsupported dtype {arr.dtype}.")
        return SideInfo("labels", labels=arr, codes=_label_codes(arr))
    if arr.ndim == 2 and arr.shape[1] == 3 and "pairs" in accept:
        C = PairwiseConstraints.from_array(arr, n_samples=n_samples)
        if check_conflicts:
            warn_conflicts(C, stacklevel=3)
        return SideInfo("pairs", constraints=C)
    raise ValueError(f"y must be {wanted}; got an array of shape {arr.shape}.")


def _label_codes(labels):
    """Class codes ``0 .. c - 1`` of the labelled entries (sorted label order), ``-1`` else."""
    labelled = labelled_mask(labels)
    codes = np.full(len(labels), -1, dtype=np.int64)
    if labelled.any():
        codes[labelled] = np.unique(labels[labelled], return_inverse=True)[1].ravel()
    return codes


def as_constraints(y, n_samples, *, check_conflicts=True):
    """Turn any accepted form of side information into :class:`PairwiseConstraints`.

    The pairs that :func:`check_side_info` reads in ``y``, listed.

    Parameters
    ----------
    y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
        Constraints, rows ``[i, j, +1/-1]``, or partial labels (``-1`` = unlabelled) from
        which every pair of labelled points becomes a constraint (must-link when the labels
        agree, cannot-link otherwise; ``l (l - 1) / 2`` pairs for ``l`` labelled points).
    n_samples : int
    check_conflicts : bool, default=True
        As in :func:`check_side_info`.

    Returns
    -------
    PairwiseConstraints
    """
    side = check_side_info(y, n_samples, accept=("labels", "pairs"),
                           check_conflicts=check_conflicts)
    if side.kind == "pairs":
        return side.constraints
    labelled = np.flatnonzero(side.codes >= 0)
    codes = side.codes[labelled]
    iu, ju = np.triu_indices(len(labelled), k=1)
    signs = np.where(codes[iu] == codes[ju], 1, -1)
    return PairwiseConstraints(np.column_stack([labelled[iu], labelled[ju]]), signs,
                               n_samples=n_samples)
