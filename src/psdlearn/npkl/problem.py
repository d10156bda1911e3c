"""The NPKL problem shared by every solver, and its objective.

Hu & Kwok 2015 eq. (10): with ``K = E E^T`` (``E`` of shape ``(n, r)``, row ``e_i`` the
representation of sample ``i``, i.e. ``E = V^T`` in the paper's notation),

.. math::

    \\Phi(E) = \\operatorname{tr}(E^T L E)
             + \\gamma \\sum_{(i, j) \\in \\mathcal{T}} \\ell(T_{ij}\\, e_i^T e_j),

where each unordered constrained pair is counted once, ``T_ij = +1`` for a must-link and
``-1`` for a cannot-link, and

- ``hinge``: ``l(z) = max(1 - z, 0)``
- ``squared_hinge``: ``l(z) = max(1 - z, 0)^2``
- ``square``: ``l(z) = (1 - z)^2`` (i.e. ``(K_ij - T_ij)^2``, targets +-1)
- ``linear``: ``l(z) = -z``, with the constraint ``||e_i|| <= b`` (Hu & Kwok 2015 eq. 29).

``pcp`` is the pairwise constraint propagation objective of Hu & Kwok 2013 eq. (1),

.. math::

    \\Psi(E) = \\operatorname{tr}(E^T L E)
             + \\frac{\\gamma}{2} \\sum_{(i, j) \\in \\mathcal{T}} (K_{ij} - t_{ij})^2,

over the *ordered* set ``T``: both orders of every constrained pair plus ``(i, i)`` for
every sample, with targets ``t = 1`` (must-link and diagonal) and ``0`` (cannot-link). In
unordered pairs this is ``gamma * sum_pairs (K_ij - t_ij)^2 + gamma / 2 * sum_i
(K_ii - 1)^2``.

Each loss is defined once, in :data:`psdlearn.npkl.losses.LOSS_TABLE`; the objective is
the sum over its terms. The same number is reported by every solver (``bcd``, ``sdp``,
...), so they can be compared directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from psdlearn.npkl.losses import LOSSES, get_loss

__all__ = ["LOSSES", "NPKLProblem", "auto_rank", "graph_term", "label_pairs",
           "loss_values", "npkl_objective", "permuted", "rank_rule_count"]


def loss_values(z, loss):
    """Elementwise loss ``l(z)`` of Hu & Kwok 2015 Fig. 1 (margin ``t = 1``).

    Parameters
    ----------
    z : ndarray
        Margins ``T_ij K_ij``.
    loss : {"hinge", "squared_hinge", "square", "linear"}

    Returns
    -------
    ndarray of the shape of ``z``.
    """
    table = get_loss(loss)
    if not table.margin:
        raise ValueError(
            f"the {loss} loss is not a function of the margin alone; use npkl_objective."
        )
    return table.value(z, 1.0)


def npkl_objective(E, laplacian, pairs, signs, loss, gamma):
    """Objective (10) of Hu & Kwok 2015 at ``K = E E^T``.

    Parameters
    ----------
    E : ndarray of shape (n_samples, rank)
        Embedding; ``K = E @ E.T``.
    laplacian : sparse matrix of shape (n_samples, n_samples)
        Graph Laplacian ``L``.
    pairs : ndarray of shape (m, 2)
        Constrained pairs, each unordered pair once.
    signs : ndarray of shape (m,)
        ``+1`` must-link, ``-1`` cannot-link.
    loss : str
        One of :data:`LOSSES`.
    gamma : float
        Trade-off ``gamma`` of eq. (3).

    Returns
    -------
    float
        ``tr(E^T L E) + sum_k w_k l(c_k K_{i_k j_k}; t_k)`` over the terms of
        :mod:`psdlearn.npkl.losses`: ``gamma * sum_k loss(signs[k] * <e_i, e_j>)``, or for
        ``pcp`` ``gamma * sum_k (K_ij - t_k)^2 + gamma / 2 * sum_i (K_ii - 1)^2`` with
        ``t_k = 1`` (must-link) or ``0`` (cannot-link). The norm constraint of the linear
        loss is not checked here.
    """
    E = np.asarray(E, dtype=np.float64)
    terms = get_loss(loss).terms(pairs, signs, E.shape[0], gamma)
    return graph_term(E, laplacian) + terms.penalty(E)


#: Rows per block of :func:`graph_term`.
GRAPH_TERM_BLOCK = 65_536


def graph_term(E, laplacian):
    """``tr(E^T L E)``, in blocks of :data:`GRAPH_TERM_BLOCK` rows of ``L``.

    ``L @ E`` whole is an array the size of the embedding (4 GB at 10^7 points and rank
    50), and its product with ``E`` another: the blocks hold a few MB at a time.
    """
    L = sp.csr_matrix(laplacian)
    total = 0.0
    for start in range(0, E.shape[0], GRAPH_TERM_BLOCK):
        stop = start + GRAPH_TERM_BLOCK
        total += float(np.einsum("ij,ij->", E[start:stop], L[start:stop] @ E))
    return total


def auto_rank(n_constraints):
    """Largest ``r`` with ``r (r + 1) / 2 <= m`` (Hu & Kwok 2015 section IV-A); at least 1.

    Parameters
    ----------
    n_constraints : int
        ``m``, e.g. :func:`rank_rule_count`.

    Returns
    -------
    int
    """
    m = int(n_constraints)
    r = int((np.sqrt(8.0 * m + 1.0) - 1.0) // 2)
    while (r + 1) * (r + 2) // 2 <= m:
        r += 1
    while r > 0 and r * (r + 1) // 2 > m:
        r -= 1
    return max(r, 1)


def rank_rule_count(loss, pairs, signs, n_samples):
    """The number ``m`` of constraints in the rank rule ``r (r + 1) / 2 <= m``.

    Hu & Kwok 2015 (section IV-A) counts the unordered pairs of its margin losses; Hu &
    Kwok 2013 counts the ordered set ``T`` of the other (target) losses: both orders of
    every off-diagonal term and each diagonal term once (``pcp``: ``2 m + n``).

    Parameters
    ----------
    loss : str
        One of :data:`LOSSES`.
    pairs : ndarray of shape (m, 2)
        Constrained pairs, each unordered pair once.
    signs : ndarray of shape (m,)
        ``+1`` must-link, ``-1`` cannot-link.
    n_samples : int
        Number of samples ``n``.

    Returns
    -------
    int
    """
    table = get_loss(loss)
    terms, per_sample = pair_terms(table, pairs, signs, 1.0)
    if table.margin:
        return len(terms) + int(n_samples) * per_sample
    off = int(np.count_nonzero(terms.rows != terms.cols))
    return 2 * off + (len(terms) - off) + int(n_samples) * per_sample


def label_pairs(codes):
    """The smallest set of pairs that implies the partition of partial labels ``codes``.

    A chain of must-links through the labelled points of each class (``l_c - 1`` pairs)
    and one cannot-link between the first points of every two classes: ``(l - c) +
    c (c - 1) / 2`` pairs for ``l`` labelled points in ``c`` classes, against the
    ``l (l - 1) / 2`` pairs the labels imply. The count of ``rank="auto"`` from labels
    (:func:`rank_rule_count` of these pairs).

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        Class codes, ``-1`` for unlabelled points.

    Returns
    -------
    pairs : ndarray of shape (m, 2), int64
    signs : ndarray of shape (m,), int64
    """
    codes = np.asarray(codes)
    members = [np.flatnonzero(codes == c) for c in np.unique(codes[codes >= 0])]
    must = [np.column_stack([idx[:-1], idx[1:]]) for idx in members if len(idx) > 1]
    firsts = np.array([idx[0] for idx in members], dtype=np.int64)
    iu, ju = np.triu_indices(len(firsts), k=1)
    cannot = np.column_stack([firsts[iu], firsts[ju]])
    pairs = np.concatenate(must + [cannot]).astype(np.int64).reshape(-1, 2)
    n_must = len(pairs) - len(cannot)
    signs = np.concatenate([np.ones(n_must, np.int64), -np.ones(len(cannot), np.int64)])
    return pairs, signs


def pair_terms(table, pairs, signs, gamma):
    """The terms of the pairs alone, and the number of terms each sample adds on its own.

    In ``O(m)``, without the ``O(n)`` per-sample terms (the diagonal of ``pcp``): the terms
    of the loss over no sample, and those of one sample with no pair.

    Parameters
    ----------
    table : psdlearn.npkl.losses.Loss
    pairs : ndarray of shape (m, 2)
    signs : ndarray of shape (m,)
    gamma : float

    Returns
    -------
    terms : psdlearn.npkl.losses.LossTerms
    per_sample : int
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    signs = np.asarray(signs, dtype=np.float64).reshape(-1)
    return (table.terms(pairs, signs, 0, gamma),
            len(table.terms(pairs[:0], signs[:0], 1, gamma)))


def permuted(L, pairs, order):
    """``L`` and the constraint ``pairs`` with the samples renumbered: new sample ``k`` is
    sample ``order[k]``; pairs stay ``i < j``, in their order.

    The rows are taken in their new order and the column indices renamed in place, so the
    renumbering holds one copy of ``L`` beside it (``L[order][:, order]`` holds two, and
    its fancy column index multiplies by a selection matrix).

    Returns
    -------
    L : scipy.sparse.csr_matrix
        Sorted indices.
    pairs : ndarray of shape (m, 2)
    inverse : ndarray of shape (n_samples,), int64
        Sample ``i`` is new sample ``inverse[i]``.
    """
    order = np.asarray(order, dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    L = sp.csr_matrix(L)[order]
    L.indices = inverse[L.indices].astype(L.indices.dtype, copy=False)
    L.has_sorted_indices = False
    L.sort_indices()
    return L, (np.sort(inverse[pairs], axis=1) if len(pairs) else pairs), inverse


@dataclass(frozen=True)
class NPKLProblem:
    """An instance of the NPKL problem: Laplacian, constraints, loss and trade-off.

    Parameters
    ----------
    laplacian : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric positive definite graph Laplacian, sorted indices.
    pairs : ndarray of shape (m, 2), int64
        Constrained pairs ``i < j``, each once.
    signs : ndarray of shape (m,), float64
        ``+1`` must-link, ``-1`` cannot-link.
    loss : str
        One of :data:`LOSSES`.
    gamma : float
        Weight of the loss term.
    b : float, default=1.0
        Radius bound ``||e_i|| <= b`` of the linear loss (Hu & Kwok 2015 eq. 29).
    """

    laplacian: sp.csr_matrix
    pairs: np.ndarray
    signs: np.ndarray
    loss: str
    gamma: float
    b: float = 1.0

    @property
    def n_samples(self):
        """Number of samples ``n``."""
        return self.laplacian.shape[0]

    @property
    def n_constraints(self):
        """Number of unordered constrained pairs ``m``."""
        return len(self.pairs)

    def objective(self, E):
        """Objective (10) at ``K = E E^T``; see :func:`npkl_objective`.

        Parameters
        ----------
        E : ndarray of shape (n_samples, rank)
            Embedding; ``K = E @ E.T``.

        Returns
        -------
        float
            ``tr(E^T L E) + sum_k w_k l(c_k K_{i_k j_k}; t_k)`` over the terms of the loss
            (:meth:`terms`); the norm constraint of a ``bounded`` loss is not checked.
        """
        return npkl_objective(E, self.laplacian, self.pairs, self.signs, self.loss, self.gamma)

    def renumbered(self):
        """The same problem with the samples in reverse Cuthill-McKee order of the graph.

        With a banded ``L`` the rows of ``L E`` read rows of ``E`` that are close in memory,
        so a pass over a large shuffled graph runs from cache instead of from memory
        (measured 1.6x per BCD sweep on a shuffled 1e5-point kNN graph). The objective is
        unchanged: ``problem'.objective(E[perm]) == problem.objective(E)``.

        Returns
        -------
        perm : ndarray of shape (n_samples,), int64
            New sample ``k`` is old sample ``perm[k]``.
        inverse : ndarray of shape (n_samples,), int64
            Old sample ``i`` is new sample ``inverse[i]``: ``E = E_new[inverse]``.
        problem : NPKLProblem
            The renumbered problem (pairs kept as ``i < j``).
        """
        L = sp.csr_matrix(self.laplacian)
        perm = reverse_cuthill_mckee(L, symmetric_mode=True).astype(np.int64)
        L, pairs, inverse = permuted(L, self.pairs, perm)
        return perm, inverse, NPKLProblem(L, pairs, self.signs, self.loss, self.gamma, self.b)

    def neighbors(self):
        """Constraint adjacency in CSR form: for sample ``i``, the ``j`` in ``T(i)``.

        Computed once per problem (every stage of a BCD solve reads it); the arrays are
        shared, not to be modified.

        Returns
        -------
        indptr : ndarray of shape (n_samples + 1,), int64
        indices : ndarray of shape (2 m,), int64
            Partners ``j`` of each ``i``, both orders of every pair.
        signs : ndarray of shape (2 m,), float64
            ``T_ij`` aligned with ``indices``.
        """
        return self._adjacency

    @cached_property
    def _adjacency(self):
        n = self.n_samples
        rows = np.concatenate([self.pairs[:, 0], self.pairs[:, 1]])
        cols = np.concatenate([self.pairs[:, 1], self.pairs[:, 0]])
        vals = np.concatenate([self.signs, self.signs]).astype(np.float64)
        order = np.lexsort((cols, rows))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(indptr, rows + 1, 1)
        np.cumsum(indptr, out=indptr)
        return indptr, cols[order].astype(np.int64), vals[order]

    def sweep_arrays(self, dtype=np.float64):
        """The Laplacian as the BCD kernels read it: ``(indptr, indices, data, diagonal)``,
        contiguous, ``data`` and ``diagonal`` in ``dtype``.

        Computed and checked once per problem and ``dtype`` (every stage of a BCD solve
        reads them); the arrays are shared, not to be modified.

        Parameters
        ----------
        dtype : numpy dtype, default=np.float64
            The type of ``data`` and ``diagonal`` (that of the solver's iterate).

        Returns
        -------
        indptr, indices : ndarray
            The CSR structure of ``L`` (its own integer type).
        data, diagonal : ndarray of ``dtype``

        Raises
        ------
        ValueError
            If the diagonal of ``L`` is not positive (``L`` not positive definite).
        """
        key = np.dtype(dtype)
        if key not in self._sweep_arrays:
            L = self.laplacian.tocsr()
            diagonal = np.ascontiguousarray(L.diagonal(), dtype=key)
            if not np.all(diagonal > 0):
                raise ValueError("The Laplacian must have a positive diagonal (L positive "
                                 "definite).")
            # the graph's own index arrays (int32 below 2^31 entries), not int64 copies
            self._sweep_arrays[key] = (np.ascontiguousarray(L.indptr),
                                       np.ascontiguousarray(L.indices),
                                       np.ascontiguousarray(L.data, dtype=key), diagonal)
        return self._sweep_arrays[key]

    @cached_property
    def _sweep_arrays(self):
        return {}

    @cached_property
    def paired_rows(self):
        """The samples in a pair and the others: ``(constrained, free)``, int64, increasing.

        Computed once per problem from :meth:`neighbors`; shared, not to be modified.
        """
        has_pair = np.diff(self.neighbors()[0]) > 0
        return (np.flatnonzero(has_pair).astype(np.int64),
                np.flatnonzero(~has_pair).astype(np.int64))

    @cached_property
    def pair_slots(self):
        """Where each pair sits in :meth:`neighbors`: ``(slot of (i, j), slot of (j, i))``.

        Returns
        -------
        forward, backward : ndarray of shape (m,), int64
            Positions in ``indices`` of ``j`` in the row of ``i`` and of ``i`` in the row
            of ``j``, for each pair ``(i, j)`` of :attr:`pairs`.
        """
        indptr, indices, _ = self.neighbors()
        n = self.n_samples
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        keys = rows * n + indices  # sorted: the slots are ordered by (row, column)
        p = np.asarray(self.pairs, dtype=np.int64).reshape(-1, 2)
        return (np.searchsorted(keys, p[:, 0] * n + p[:, 1]),
                np.searchsorted(keys, p[:, 1] * n + p[:, 0]))

    def terms(self):
        """The loss terms ``sum_k w_k l(c_k K_{i_k j_k}; t_k)`` of this problem.

        Returns
        -------
        psdlearn.npkl.losses.LossTerms
        """
        return get_loss(self.loss).terms(self.pairs, self.signs, self.n_samples, self.gamma)

    def ordered_targets(self):
        """The ordered pair set ``T`` of Hu & Kwok 2013 eq. (5) with its targets, in CSR form.

        For a quadratic loss of :mod:`psdlearn.npkl.losses` (``pcp``, ``square``): both
        orders of every off-diagonal term and each diagonal term once, with target
        ``c_k t_k``. ``pcp``: both orders of every pair plus ``(i, i)`` for every sample,
        targets 1 (must-link, diagonal) and 0 (cannot-link). ``square``: both orders of
        every pair, targets ``T_ij = +-1``. In both cases the objective is
        ``tr(E^T L E) + gamma / 2 * sum_{(i, j) in T} (e_i . e_j - t_ij)^2``.

        Returns
        -------
        indptr : ndarray of shape (n_samples + 1,), int64
        indices : ndarray of shape (|T|,), int64
            ``j`` in ``T_i``, sorted within each row.
        targets : ndarray of shape (|T|,), float64
        """
        if not get_loss(self.loss).quadratic:
            raise ValueError(
                f"ordered targets exist for the pcp and square losses, not {self.loss!r}."
            )
        terms = self.terms()
        off = terms.rows != terms.cols
        target = terms.coef * terms.targets
        rows = np.concatenate([terms.rows[off], terms.cols[off], terms.rows[~off]])
        cols = np.concatenate([terms.cols[off], terms.rows[off], terms.rows[~off]])
        vals = np.concatenate([target[off], target[off], target[~off]])
        order = np.lexsort((cols, rows))
        indptr = np.zeros(self.n_samples + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n_samples), out=indptr[1:])
        return indptr, cols[order].astype(np.int64), vals[order].astype(np.float64)
