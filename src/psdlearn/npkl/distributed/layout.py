"""Where the rows live: the slab partition, the owners of rows, and the halo plans.

Partition. The points are split into ``P`` slabs along the first principal direction
``w`` of ``X`` (``w`` from the ``d x d`` covariance, reduced over the input chunks), at
quantiles of ``x^T w`` estimated from a sample: a coordinate split needs only ``X``,
before any graph exists, and since kNN edges are short, an edge joins points of the same
or of adjacent slabs, so block ``b`` shares edges with blocks ``b - 1`` and ``b + 1``
only (two colours suffice for the block Gauss-Seidel sweep of the BCD solver). The cut is
measured after the graph is built. The rows are renumbered block by
block (new id ``off_b + local``, ``local`` the position in the Z-order of the point's
coordinates on the leading principal axes, so that kNN neighbours sit close in memory),
so the owner of a row is a binary search in the block offsets and the graph can be built
directly in the new numbering.

Layout. A layout says which block owns each row: the slab of the row, except for the
rows of ``special`` (the constrained samples of the BCD solver), which block ``P`` owns.
A block stores its own rows first, then its halo: the rows of other blocks that its rows
of ``L`` or its constraints touch, grouped by owner, ascending ids within an owner. Its
local column indices point into that extended array.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Layout", "block_colors"]


@dataclass(frozen=True)
class Layout:
    """Ownership of the rows ``0 .. n - 1`` (new numbering).

    Parameters
    ----------
    offsets : ndarray of shape (P + 1,), int64
        Slab ``b`` is ``offsets[b]:offsets[b + 1]``.
    special : ndarray of shape (s,), int64
        Sorted rows owned by block ``P`` instead of their slab (empty: no block ``P``).
    """

    offsets: np.ndarray
    special: np.ndarray

    @property
    def n_blocks(self):
        """Number of blocks (``P``, plus one when ``special`` is not empty)."""
        return len(self.offsets) - 1 + (len(self.special) > 0)

    def owner(self, g):
        """Block owning each row of ``g``."""
        g = np.asarray(g, dtype=np.int64)
        own = np.searchsorted(self.offsets, g, side="right") - 1
        if len(self.special):
            own[np.isin(g, self.special, assume_unique=False)] = len(self.offsets) - 1
        return own

    def local(self, g, block):
        """Positions of the rows ``g`` (all owned by ``block``) among that block's rows."""
        g = np.asarray(g, dtype=np.int64)
        if block == len(self.offsets) - 1:
            return np.searchsorted(self.special, g)
        lo = self.offsets[block]
        return (g - lo) - (np.searchsorted(self.special, g)
                           - np.searchsorted(self.special, lo))

    def rows(self, block):
        """The rows owned by ``block``, ascending."""
        if block == len(self.offsets) - 1:
            return self.special
        g = np.arange(self.offsets[block], self.offsets[block + 1], dtype=np.int64)
        return g[~np.isin(g, self.special)] if len(self.special) else g


def needs(layout, block, cols):
    """The halo of ``block``: ``{owner: sorted foreign rows}`` among the ids ``cols``."""
    cols = np.unique(np.asarray(cols, dtype=np.int64))
    own = layout.owner(cols)
    out = {}
    for c in np.unique(own):
        if c != block:
            out[int(c)] = cols[own == c]
    return out


def send_index(layout, block, request):
    """Local positions in ``block`` of the rows another block requests (or None)."""
    rows = request.get(block)
    return None if rows is None else layout.local(rows, block)


def localize(layout, block, request, cols):
    """Extended local indices of the global ids ``cols`` in ``block``.

    Owned rows map to their local position, halo rows to ``n_own + position`` in the
    halo (owners ascending, ids ascending within an owner: the order in which the
    pieces of the exchange are stacked).
    """
    cols = np.asarray(cols, dtype=np.int64)
    n_own = len(layout.rows(block))
    halo = (np.concatenate([request[c] for c in sorted(request)]) if request
            else np.empty(0, dtype=np.int64))
    out = np.empty(len(cols), dtype=np.int64)
    mine = layout.owner(cols) == block
    out[mine] = layout.local(cols[mine], block)
    order = np.argsort(halo, kind="stable")
    out[~mine] = n_own + order[np.searchsorted(halo[order], cols[~mine])]
    return out


def take(rows, index):
    """``rows[index]``: one piece of a halo exchange."""
    return rows[index]


def stack(own, *pieces):
    """Own rows followed by the halo pieces (a new array: the input is not modified)."""
    return np.concatenate((own, *pieces)) if pieces else own.copy()


def block_colors(adjacent, n_blocks):
    """Greedy colouring of the blocks: blocks of one colour share no edge.

    Parameters
    ----------
    adjacent : set of (int, int)
        Pairs of blocks joined by at least one edge of ``L``.
    n_blocks : int

    Returns
    -------
    list of lists of block indices, one list per colour, in the order they are updated.
    """
    color = {}
    for b in range(n_blocks):
        used = {color[c] for c in range(b) if (b, c) in adjacent or (c, b) in adjacent}
        color[b] = next(k for k in range(n_blocks) if k not in used)
    return [[b for b in range(n_blocks) if color[b] == k]
            for k in range(max(color.values()) + 1)]
