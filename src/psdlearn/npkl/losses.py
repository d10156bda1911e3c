r"""The NPKL losses, each defined once: value, derivative, conjugate, cvxpy model, BCD kind.

Every loss of :class:`psdlearn.npkl.problem.NPKLProblem` is a sum of *terms* over entries
of ``K = E E^T``,

.. math::

    \sum_k w_k\, \ell(c_k K_{i_k j_k};\, t_k),

which :meth:`Loss.terms` lists as :class:`LossTerms` (rows ``i``, columns ``j``,
coefficients ``c``, targets ``t``, weights ``w``). The margin losses (hinge, squared hinge,
square, linear) have one term per unordered constrained pair with ``c_k = T_k`` (``+1``
must-link, ``-1`` cannot-link), ``t_k = 1`` and ``w_k = gamma``, so ``z = T_k K_ij`` is the
margin of Hu & Kwok 2015 eq. (10). ``pcp`` (Hu & Kwok 2013 eq. 1) is the square loss on
``c_k = 1``, targets ``t = 1`` (must-link) / ``0`` (cannot-link) with ``w = gamma``, plus
one term ``(K_ii - 1)^2`` per sample with ``w = gamma / 2``.

What each solver reads:

- the objective (:func:`psdlearn.npkl.problem.npkl_objective`): :meth:`Loss.value`;
- the duality certificate and the scale of ``gamma``: the multipliers
  ``alpha_k = -w_k l'(z_k; t_k)`` (:meth:`Loss.multipliers`, from :meth:`Loss.derivative`)
  of the dual matrix ``S = L - sum_k alpha_k c_k S_k`` with
  ``S_k = (e_i e_j^T + e_j e_i^T) / 2`` (:meth:`LossTerms.matrix`), and the conjugate;
- SimpleNPKL and the dual SDP: the conjugate in multiplier form

  .. math::

      h(a;\, t, w) = \min_z \; w\, \ell(z;\, t) + a z
                   = -(w \ell)^*(-a), \qquad a \in [lo, hi] = \operatorname{dom} h,

  its derivative ``h'(a) = argmin_z`` (Danskin), its domain and the curvature bound
  ``sup |h''|`` (:meth:`Loss.conjugate`, :meth:`Loss.conjugate_derivative`,
  :meth:`Loss.domain`, :meth:`Loss.curvature`); Fenchel-Young holds with equality at
  ``a = alpha(z)``: ``h(alpha) = w l(z) + alpha z``;
- the exact SDP: :meth:`Loss.cvxpy_penalty` (primal) and :meth:`Loss.cvxpy_conjugate`
  (dual);
- BCD: ``kernel``, the row-update kind its compiled kernels branch on
  (:func:`psdlearn.npkl._kernels.update_sample`; ``None``: no BCD closed form);
- ADMM and MFPC: ``quadratic`` (``l(z; t) = (t - z)^2``, ``c_k^2 = 1``, ``w = gamma``
  per pair and ``gamma / 2`` per diagonal term, so that the loss term is
  ``gamma / 2 sum (K_ij - c t)^2`` over the ordered pairs of
  :meth:`NPKLProblem.ordered_targets`);
- the linear loss's ball ``||e_i|| <= b``: ``bounded``.

**Adding a loss.** Write one subclass of :class:`Loss` (value, derivative, conjugate with
its derivative, domain and curvature, the two cvxpy expressions; override
:meth:`Loss.terms` when its terms are not the margins) and add one instance to
:data:`LOSS_TABLE`. The objective, the SDP, SimpleNPKL, the certificate and the scale of
``gamma`` then handle it. BCD needs it only where its row problem has a new closed form:
then add one row-update kind below and, in :mod:`psdlearn.npkl._kernels`, its closed form
as one branch of ``update_sample`` (which writes the row minimizer) and its value in
``_loss_value``; otherwise leave ``kernel=None``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["LOSSES", "LOSS_TABLE", "Loss", "LossTerms", "get_loss"]

#: Terms per block of :meth:`LossTerms.entries` (two gathered ``block x r`` arrays).
ENTRIES_BLOCK = 16384

#: Row-update kinds of the BCD kernels: dual box QP (hinge, eq. 22), dual QP with a ridge
#: (squared hinge, eq. 25), linear solve (square, eq. 28), ball projection (linear, eq. 31).
#: They are compile-time constants of the cached kernels: add new ones, never renumber.
ROW_HINGE, ROW_SQUARED_HINGE, ROW_SQUARE, ROW_BALL = 0, 1, 2, 3


@dataclass(frozen=True)
class LossTerms:
    """The terms ``sum_k w_k l(c_k K_{i_k j_k}; t_k)`` of one problem's loss.

    Attributes
    ----------
    loss : Loss
    rows, cols : ndarray of shape (n_terms,), int64
        ``i_k`` and ``j_k`` (``i_k = j_k`` for a diagonal term).
    coef : ndarray of shape (n_terms,)
        ``c_k``.
    targets : ndarray of shape (n_terms,)
        ``t_k``.
    weights : ndarray of shape (n_terms,)
        ``w_k``.
    n_samples : int
    """

    loss: Loss
    rows: np.ndarray
    cols: np.ndarray
    coef: np.ndarray
    targets: np.ndarray
    weights: np.ndarray
    n_samples: int

    def __len__(self):
        return len(self.rows)

    def entries(self, E):
        """``K_{i_k j_k} = e_i^T e_j`` at ``K = E E^T``."""
        out = np.empty(len(self.rows))
        # in blocks: the gathered rows of E stay in cache and never cost m x r at once
        for s in range(0, len(out), ENTRIES_BLOCK):
            rows, cols = self.rows[s:s + ENTRIES_BLOCK], self.cols[s:s + ENTRIES_BLOCK]
            out[s:s + ENTRIES_BLOCK] = np.einsum("ij,ij->i", E[rows], E[cols])
        return out

    def margins(self, E):
        """``z_k = c_k K_{i_k j_k}``."""
        return self.coef * self.entries(E)

    def penalty(self, E):
        """The loss term ``sum_k w_k l(z_k; t_k)`` at ``K = E E^T``."""
        if len(self) == 0:
            return 0.0
        return float(self.weights @ self.loss.value(self.margins(E), self.targets))

    def multipliers(self, E):
        """``alpha_k = -w_k l'(z_k; t_k)`` at ``K = E E^T`` (see :meth:`Loss.multipliers`)."""
        return self.loss.multipliers(self.margins(E), self.targets, self.weights)

    def matrix(self, a):
        """``sum_k a_k c_k S_k`` as a sparse CSR matrix, ``S_k = (e_i e_j^T + e_j e_i^T) / 2``.

        ``<S_k, K> = K_ij``; a diagonal term has ``S_k = e_i e_i^T``.
        """
        half = 0.5 * self.coef * a
        n = self.n_samples
        return sp.csr_matrix((np.concatenate([half, half]),
                              (np.concatenate([self.rows, self.cols]),
                               np.concatenate([self.cols, self.rows]))), shape=(n, n))


@dataclass(frozen=True)
class Loss:
    """One loss ``l(z; t)`` of the table (see the module docstring).

    Attributes
    ----------
    name : str
    kernel : int or None
        Row-update kind of the BCD kernels, None when BCD has no closed form for it.
    quadratic : bool
        ``l(z; t) = (t - z)^2`` with the weights ADMM and MFPC assume.
    bounded : bool
        The rows are bounded, ``||e_i|| <= b`` (``K_ii <= b^2`` in the SDP).
    margin : bool
        The terms are the margins ``T_k K_ij`` of the pairs (``c = T``, ``t = 1``).
    """

    name: str
    kernel: int | None = None
    quadratic: bool = False
    bounded: bool = False
    margin: bool = True

    def terms(self, pairs, signs, n_samples, gamma):
        """The terms of a problem: one per unordered pair, ``c = T``, ``t = 1``, ``w = gamma``.

        Parameters
        ----------
        pairs : ndarray of shape (m, 2)
        signs : ndarray of shape (m,)
            ``+1`` must-link, ``-1`` cannot-link.
        n_samples : int
        gamma : float

        Returns
        -------
        LossTerms
        """
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        signs = np.asarray(signs, dtype=np.float64).reshape(-1)
        m = len(pairs)
        return LossTerms(self, pairs[:, 0], pairs[:, 1], signs, np.ones(m),
                         np.full(m, float(gamma)), int(n_samples))

    def value(self, z, t):
        """``l(z; t)``, elementwise."""
        raise NotImplementedError

    def derivative(self, z, t):
        """``dl/dz (z; t)``, elementwise (at a kink: the one-sided value from ``z > t``)."""
        raise NotImplementedError

    def multipliers(self, z, t, w):
        """``alpha = -w l'(z; t)``: the multipliers of the dual matrix at margins ``z``.

        They make Fenchel-Young an equality, ``h(alpha; t, w) = w l(z; t) + alpha z``; at
        ``z = 0`` they maximize ``h`` (the multipliers of ``K = 0``).
        """
        return -np.asarray(w, dtype=np.float64) * self.derivative(z, t)

    def conjugate(self, a, t, w):
        """``h(a; t, w) = min_z w l(z; t) + a z`` on :meth:`domain`, elementwise."""
        raise NotImplementedError

    def conjugate_derivative(self, a, t, w):
        """``h'(a)``: the minimizing ``z`` of :meth:`conjugate`, elementwise."""
        raise NotImplementedError

    def domain(self, w):
        """``(lo, hi)``: ``h`` is finite exactly on ``lo <= a <= hi`` (arrays like ``w``)."""
        w = np.asarray(w, dtype=np.float64)
        return np.full(w.shape, -np.inf), np.full(w.shape, np.inf)

    def curvature(self, w):
        """``sup_a |h''(a)|``: the Lipschitz constant of :meth:`conjugate_derivative`."""
        raise NotImplementedError

    def cvxpy_penalty(self, cp, z, t, w):
        """cvxpy expression of ``sum_k w_k l(z_k; t_k)`` (``z`` affine in ``K``)."""
        raise NotImplementedError

    def cvxpy_conjugate(self, cp, a, t, w):
        """cvxpy expression of ``sum_k h(a_k; t_k, w_k)`` and the constraints of its domain.

        Returns
        -------
        expression, list of constraints
        """
        lo, hi = self.domain(w)
        if np.array_equal(lo, hi):  # a fixed multiplier: an equality (interior points)
            return self._cvxpy_conjugate(cp, a, t, w), [a == lo]
        constraints = []
        if np.all(np.isfinite(lo)):
            constraints.append(a >= lo)
        if np.all(np.isfinite(hi)):
            constraints.append(a <= hi)
        return self._cvxpy_conjugate(cp, a, t, w), constraints

    def _cvxpy_conjugate(self, cp, a, t, w):
        raise NotImplementedError


class _Hinge(Loss):
    """``l(z; t) = max(t - z, 0)``; ``h(a) = t a`` on ``0 <= a <= w``."""

    def value(self, z, t):
        return np.maximum(t - np.asarray(z, dtype=np.float64), 0.0)

    def derivative(self, z, t):
        return np.where(np.asarray(z) < t, -1.0, 0.0)

    def conjugate(self, a, t, w):
        return t * np.asarray(a, dtype=np.float64)

    def conjugate_derivative(self, a, t, w):
        return np.broadcast_to(np.asarray(t, dtype=np.float64), np.shape(a)).copy()

    def domain(self, w):
        w = np.asarray(w, dtype=np.float64)
        return np.zeros(w.shape), w

    def curvature(self, w):
        return np.zeros(np.shape(w))

    def cvxpy_penalty(self, cp, z, t, w):
        return cp.sum(cp.multiply(w, cp.pos(t - z)))

    def _cvxpy_conjugate(self, cp, a, t, w):
        return t @ a


class _Square(Loss):
    """``l(z; t) = (t - z)^2``; ``h(a) = t a - a^2 / (4 w)`` for every ``a``."""

    def value(self, z, t):
        return (t - np.asarray(z, dtype=np.float64)) ** 2

    def derivative(self, z, t):
        return 2.0 * (np.asarray(z, dtype=np.float64) - t)

    def conjugate(self, a, t, w):
        a = np.asarray(a, dtype=np.float64)
        return t * a - a * a / (4.0 * w)

    def conjugate_derivative(self, a, t, w):
        return t - np.asarray(a, dtype=np.float64) / (2.0 * w)

    def curvature(self, w):
        return 0.5 / np.asarray(w, dtype=np.float64)

    def cvxpy_penalty(self, cp, z, t, w):
        return cp.sum_squares(cp.multiply(np.sqrt(w), t - z))

    def _cvxpy_conjugate(self, cp, a, t, w):
        return t @ a - cp.sum_squares(cp.multiply(0.5 / np.sqrt(w), a))


class _SquaredHinge(_Square):
    """``l(z; t) = max(t - z, 0)^2``; ``h(a) = t a - a^2 / (4 w)`` on ``a >= 0``."""

    def value(self, z, t):
        return np.maximum(t - np.asarray(z, dtype=np.float64), 0.0) ** 2

    def derivative(self, z, t):
        return -2.0 * np.maximum(t - np.asarray(z, dtype=np.float64), 0.0)

    def domain(self, w):
        w = np.asarray(w, dtype=np.float64)
        return np.zeros(w.shape), np.full(w.shape, np.inf)

    def cvxpy_penalty(self, cp, z, t, w):
        return cp.sum_squares(cp.multiply(np.sqrt(w), cp.pos(t - z)))


class _Linear(Loss):
    """``l(z) = -z`` (``t`` unused); ``h(a) = 0`` at ``a = w`` only, i.e. ``alpha = gamma``."""

    def value(self, z, t):
        return -np.asarray(z, dtype=np.float64)

    def derivative(self, z, t):
        return np.full(np.shape(z), -1.0)

    def conjugate(self, a, t, w):
        return np.zeros(np.shape(a))

    def conjugate_derivative(self, a, t, w):
        # h is finite at the single point a = w, where its solvers keep it fixed
        return np.zeros(np.shape(a))

    def domain(self, w):
        w = np.asarray(w, dtype=np.float64)
        return w, w

    def curvature(self, w):
        return np.zeros(np.shape(w))

    def cvxpy_penalty(self, cp, z, t, w):
        return -cp.sum(cp.multiply(w, z))

    def _cvxpy_conjugate(self, cp, a, t, w):
        return cp.Constant(0.0)


class _PCP(_Square):
    """The square loss on the pcp targets: pairs ``(K_ij - t)^2``, diagonal ``(K_ii - 1)^2``."""

    def terms(self, pairs, signs, n_samples, gamma):
        """Pairs with ``c = 1``, ``t = 1`` / ``0``, ``w = gamma``; then ``(i, i)``, ``t = 1``,
        ``w = gamma / 2`` for every sample (Hu & Kwok 2013 eq. 1 over unordered pairs)."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        signs = np.asarray(signs, dtype=np.float64).reshape(-1)
        n, m = int(n_samples), len(pairs)
        diag = np.arange(n, dtype=np.int64)
        return LossTerms(
            self,
            np.concatenate([pairs[:, 0], diag]),
            np.concatenate([pairs[:, 1], diag]),
            np.ones(m + n),
            np.concatenate([(signs > 0).astype(np.float64), np.ones(n)]),
            np.concatenate([np.full(m, float(gamma)), np.full(n, 0.5 * float(gamma))]),
            n,
        )


#: Every loss by name, in the order of :data:`LOSSES`.
LOSS_TABLE = {
    loss.name: loss
    for loss in (
        _Hinge("hinge", kernel=ROW_HINGE),
        _SquaredHinge("squared_hinge", kernel=ROW_SQUARED_HINGE),
        _Square("square", kernel=ROW_SQUARE, quadratic=True),
        _Linear("linear", kernel=ROW_BALL, bounded=True),
        _PCP("pcp", quadratic=True, margin=False),
    )
}

#: Names of the NPKL losses.
LOSSES = tuple(LOSS_TABLE)


def get_loss(name):
    """The :class:`Loss` called ``name``; ``ValueError`` naming :data:`LOSSES` otherwise."""
    try:
        return LOSS_TABLE[name]
    except (KeyError, TypeError):
        raise ValueError(f"loss must be one of {LOSSES}, got {name!r}.") from None
