"""Reports on side information that repeats or contradicts itself.

The messages of :class:`psdlearn.PairwiseConstraints` and of the fits: which pairs are
duplicated, marked both ways, or closed into a contradiction by a chain of must-links.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["ConstraintConflictWarning", "warn_conflicts"]

#: Pairs named in a warning or error message; the rest are counted.
_SHOWN = 10


class ConstraintConflictWarning(UserWarning):
    """Side information that contradicts itself: a cannot-link joins two points that a
    chain of must-links connects (:meth:`PairwiseConstraints.conflicts`)."""


def _name_pairs(pairs):
    """``(i, j), (k, l), ...`` for a message: the first :data:`_SHOWN` pairs, then a count."""
    pairs = np.asarray(pairs).reshape(-1, 2).tolist()
    text = ", ".join(f"({i}, {j})" for i, j in pairs[:_SHOWN])
    return text + (f" and {len(pairs) - _SHOWN} more" if len(pairs) > _SHOWN else "")


def warn_conflicts(constraints, stacklevel=2):
    """Warn (:class:`ConstraintConflictWarning`) when ``constraints`` contradict themselves.

    Parameters
    ----------
    constraints : PairwiseConstraints
    stacklevel : int, default=2
        Passed to :func:`warnings.warn`.

    Returns
    -------
    ndarray of int64
        :meth:`PairwiseConstraints.conflicts`.
    """
    bad = constraints.conflicts()
    if bad.size:
        warnings.warn(
            f"{bad.size} cannot-link(s) join points that a chain of must-links connects: "
            f"{_name_pairs(constraints.pairs[bad])}. At least one pair of each such cycle "
            "is wrong; see PairwiseConstraints.conflicts() and the fitted NPKL's "
            "suspicious_constraints().",
            ConstraintConflictWarning, stacklevel=stacklevel + 1)
    return bad
