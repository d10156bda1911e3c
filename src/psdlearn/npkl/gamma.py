"""The scale of ``gamma``: the smallest loss weight at which the learned kernel is not zero.

For every loss of :mod:`psdlearn.npkl.problem` the objective is convex in ``K``, and
``K = 0`` is optimal exactly when ``tr(L K) - gamma <G, K> >= 0`` for every ``K >= 0``,
where ``-gamma G`` is the gradient of the loss term at ``K = 0``: for the margin losses
``G_ij = G_ji = |l'(0)| T_ij / 2`` on the constrained pairs (``|l'(0)| = 1`` for hinge and
linear, 2 for squared hinge and square), for ``pcp`` ``G_ij = G_ji = 1`` on the
must-links (and ``G_ii = 1``, see below). That is ``L - gamma G >= 0``, i.e.

.. math::

    \\gamma \\le \\gamma_0 = \\frac{1}{\\lambda_{\\max}(G, L)}, \\qquad
    \\lambda_{\\max}(G, L) = \\max_{K \\succeq 0} \\frac{\\langle G, K \\rangle}
                                                    {\\operatorname{tr}(L K)} .

``lambda_max(G, L)`` is the exchange rate between the two terms of the objective: the
largest loss decrease bought by one unit of graph term. It carries all the dependence on
``n`` and ``m``: many constraints that agree with smooth functions of the graph make it
large (``gamma_0`` about 0.01-0.07 on the protocol sets of Hu & Kwok, with ``m = 1.2 n``),
a few pairs scattered among many points make it small (each pair then has to pay the graph
term of the rows it moves on its own: ``gamma_0`` is of order 1, and ``gamma = 1`` gives
``K = 0``). ``gamma="auto"`` of :class:`psdlearn.NPKL` is a fixed multiple of ``gamma_0`` for the
margin losses (:func:`auto_gamma`).

For ``pcp`` the diagonal targets ``K_ii = 1`` alone make ``K = 0`` suboptimal as soon as
``gamma > delta`` (``G`` contains ``I``), whatever the pairs: that threshold says nothing
about the balance of the pairs against the graph, so ``gamma_0`` of ``pcp`` is computed
from its pair term (the must-links; its cannot-link targets are 0 and have no gradient at
``K = 0``).

**pcp's scale is the pull of the graph on its targets.** ``pcp`` fits targets
(``K_ii = 1``, ``K_ij = 1`` or 0), so its danger is not ``K = 0`` but a kernel pulled away
from them. The gradient of ``tr(L K)`` in a target entry is ``L_ij`` (``2 L_ij`` for a
pair), that of its loss term ``gamma (K_ij - t_ij)``: to first order the graph moves each
target by ``L_ij / gamma`` or ``2 L_ij / gamma``, and ``|L_ij| <= L_ii`` (``1 + delta``
for the normalized Laplacian, whatever ``n`` and ``m``). ``gamma="auto"`` is
``100 max_i L_ii``: a pull of at most 1-2 % on every target. The measurements behind
both factors (the protocols of Hu & Kwok 2015 and 2013, and constraint cross-validation)
are in the method notes of the documentation.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, lobpcg
from threadpoolctl import ThreadpoolController

from psdlearn._progress import progress_bar
from psdlearn.npkl.losses import get_loss

__all__ = ["AUTO_GAMMA_FACTOR", "PCP_AUTO_FACTOR", "auto_gamma", "critical_gamma",
           "loss_gradient_matrix", "pair_lambda_bound"]

#: ``gamma="auto"`` is this multiple of :func:`critical_gamma` for the margin losses (the
#: measurements behind it are in the method notes of the documentation).
AUTO_GAMMA_FACTOR = 30.0
#: ``gamma="auto"`` of ``pcp`` is this multiple of ``max_i L_ii``: the graph's first-order
#: pull on the targets, ``|L_ij| / gamma`` per entry, is then at most 1-2 % (module docstring).
PCP_AUTO_FACTOR = 100.0
#: Largest ``n`` solved by a dense generalized eigendecomposition (on a1a, n = 1605, the
#: dense solve took 0.94 s and LOBPCG 0.09 s).
_DENSE_MAX = 400
#: LOBPCG stops at a residual of this fraction of ``lambda_max``, which gives
#: ``lambda_max`` to about its square (Rayleigh quotient): 1e-6 relative, so that
#: ``partial_fit``'s run from the last vectors and a fresh fit's from a random block give
#: the same ``gamma="auto"`` to that accuracy (at 1e-2 they differed by 7e-5 at 10^5
#: points, and their objectives by 1.4e-6).
_LOBPCG_RTOL = 1e-3
#: Iterations of the first LOBPCG run, which finds the scale of ``lambda_max``.
_LOBPCG_SCALE_ITERS = 20
#: Columns of LOBPCG's block: its cost is the dense algebra on ``n x 3 b`` blocks, more than
#: the products with ``L`` and ``G``, and one vector needs about the iterations of two
#: (measured in the method notes, "The block's width").
_LOBPCG_BLOCK = 1
#: Columns of the block of the second run, made only when the first returned less than
#: the pairs' two-point bound (:func:`_lobpcg_wide`).
_LOBPCG_WIDE_BLOCK = 4


@functools.cache
def _thread_pools():
    """The thread pools of the loaded libraries, found once: finding them scans the loaded
    libraries, 5 ms, as long as the whole dense solve at n = 150."""
    return ThreadpoolController()


def loss_gradient_matrix(n_samples, pairs, signs, loss):
    """``G``: minus the gradient of the loss term at ``K = 0``, divided by ``gamma``.

    ``G = sum_k alpha_k c_k S_k`` with the multipliers ``alpha_k = -w_k l'(0; t_k)`` of
    ``K = 0`` at unit ``gamma`` (:mod:`psdlearn.npkl.losses`), over the off-diagonal terms:
    for ``pcp`` its pair term only (module docstring).

    Parameters
    ----------
    n_samples : int
    pairs : ndarray of shape (m, 2)
    signs : ndarray of shape (m,)
        ``+1`` must-link, ``-1`` cannot-link.
    loss : str

    Returns
    -------
    G : scipy.sparse.csr_matrix of shape (n_samples, n_samples), symmetric
        ``<G, K> = -d(loss term) / d K`` at 0, per unit of ``gamma`` (for ``pcp``, of its
        pair term).
    """
    table = get_loss(loss)
    terms = table.terms(pairs, signs, n_samples, 1.0)
    alpha = table.multipliers(np.zeros(len(terms)), terms.targets, terms.weights)
    alpha[terms.rows == terms.cols] = 0.0
    G = terms.matrix(alpha)
    G.eliminate_zeros()  # pcp: its cannot-links and diagonal
    return G


def pair_lambda_bound(laplacian, G):
    """A lower bound on ``lambda_max(G, L)`` from the two-point vectors of the pairs.

    For each pair ``(i, j)`` with ``G_ij != 0``, ``x = e_i + sign(G_ij) e_j`` gives the
    Rayleigh quotient ``(G_ii + G_jj + 2 |G_ij|) / (L_ii + L_jj + 2 sign(G_ij) L_ij)``,
    which is at most ``lambda_max(G, L)`` (``L`` positive definite); the bound is the
    largest of them. ``O(m)``: it decides that a problem's optimum is not zero
    (``gamma * bound > 1``) without an eigen-solve.

    Parameters
    ----------
    laplacian : sparse matrix of shape (n, n)
        Positive definite ``L``.
    G : sparse matrix of shape (n, n)
        Symmetric, :func:`loss_gradient_matrix`.

    Returns
    -------
    float
        0 when ``G`` has no off-diagonal entry.
    """
    upper = sp.triu(G, k=1).tocoo()
    if upper.nnz == 0:
        return 0.0
    i, j, g = upper.row, upper.col, upper.data
    L = sp.csr_matrix(laplacian)
    dL, dG = L.diagonal(), sp.csr_matrix(G).diagonal()
    s = np.sign(g)
    denom = dL[i] + dL[j] + 2.0 * s * np.asarray(L[i, j]).ravel()
    return float(np.max((dG[i] + dG[j] + 2.0 * np.abs(g)) / denom))


def critical_gamma(laplacian, pairs, signs, loss, random_state=0, *, start=None,
                   return_vectors=False, verbose=0):
    """``gamma_0 = 1 / lambda_max(G, L)``: ``K = 0`` is optimal for every ``gamma <= gamma_0``.

    Parameters
    ----------
    laplacian : sparse matrix of shape (n, n)
        Positive definite graph Laplacian ``L``.
    pairs, signs, loss
        See :func:`loss_gradient_matrix`.
    random_state : int
        Seeds the start block of LOBPCG (``n`` above 400; about 1 s at ``n = 5e4``).
    start : ndarray of shape (n, 1), optional
        LOBPCG's start block: the vectors returned for a nearby problem (the same ``L``
        with fewer pairs, ``NPKL.partial_fit``). The run then skips the scale run (see
        :func:`_lobpcg_largest`) and stops at the same relative residual. Ignored at
        ``n <= 400`` (dense solve).
    return_vectors : bool, default=False
        Also return LOBPCG's final block (None from the dense solve).
    verbose : int, default=0
        With LOBPCG, a progress bar on stderr (``NPKL gamma_0 (LOBPCG)``) counting its
        products with ``G`` (a few per iteration); verbose or not, the count is what a
        Ctrl-C's message quotes.

    Returns
    -------
    gamma0 : float
        ``inf`` when ``lambda_max(G, L) <= 0`` (no constraint can be met by a nonzero
        ``K``: then ``K = 0`` is optimal for every ``gamma``).
    vectors : ndarray of shape (n, 1) or None
        With ``return_vectors``.
    """
    L = sp.csr_matrix(laplacian, dtype=np.float64)
    n = L.shape[0]
    G = loss_gradient_matrix(n, pairs, signs, loss)
    if n <= _DENSE_MAX:
        # one thread: at this size BLAS threads cost more than they save, and on a busy
        # machine their spinning made this 5 ms solve take 0.3 s
        with _thread_pools().limit(limits=1, user_api="blas"):
            lam = _dense_lambda_max(G, L)
        vectors = None
    else:
        rng = np.random.default_rng(random_state)
        with progress_bar(verbose, desc="NPKL gamma_0 (LOBPCG)", unit="products") as bar:
            lam, vectors = _lobpcg_largest(G, L, rng, start, bar)
            bound = pair_lambda_bound(L, G)
            if lam < bound:
                lam, vectors = _lobpcg_wide(G, L, rng, bound, bar)
    gamma0 = 1.0 / lam if lam > 0 else np.inf
    return (gamma0, vectors) if return_vectors else gamma0


def _dense_lambda_max(G, L):
    """``lambda_max(G, L)`` by a dense solve on the samples ``P`` that a pair touches.

    ``G`` is zero outside the rows and columns ``P``, so for a fixed ``x_P`` the quotient
    ``x^T G x / x^T L x`` is largest (when positive) where ``x^T L x`` is smallest, at
    ``x_Q = -L_QQ^{-1} L_QP x_P`` on the other samples ``Q``: there ``x^T L x = x_P^T S x_P``
    with the Schur complement ``S = L_PP - L_PQ L_QQ^{-1} L_QP``, and
    ``lambda_max(G, L) = lambda_max(G_PP, S)`` whenever it is positive (both are at most
    0 otherwise, which :func:`critical_gamma` reads as ``gamma_0 = inf``). The dense
    eigen-solve then runs on ``|P|`` samples instead of ``n``: a few pairs among a few
    hundred points touch half of them, an eighth of the work.
    """
    n = L.shape[0]
    touched = np.diff(G.indptr) > 0
    P = np.flatnonzero(touched)
    if len(P) == 0:
        return 0.0
    dense, on_P = L.toarray(), np.ix_(P, P)
    S = dense[on_P]
    if len(P) < n:
        Q = np.flatnonzero(~touched)
        L_QP = dense[np.ix_(Q, P)]
        # LAPACK directly: scipy's checking wrappers cost as much as these small solves
        factor, info = sl.lapack.dpotrf(dense[np.ix_(Q, Q)], lower=1)
        if info != 0:
            raise np.linalg.LinAlgError("the Laplacian is not positive definite.")
        S -= L_QP.T @ sl.lapack.dpotrs(factor, L_QP, lower=1)[0]
    p = len(P)
    return sl.eigh(G.toarray()[on_P], S, eigvals_only=True, check_finite=False,
                   subset_by_index=[p - 1, p - 1])[0]


def _lobpcg_largest(G, L, rng, start, bar):
    """``lambda_max(G, L)`` by LOBPCG to the relative residual :data:`_LOBPCG_RTOL`.

    scipy's ``tol`` bounds the residual ``||G x - lambda L x||`` absolutely, and
    ``lambda_max`` grows with ``n`` (about 230 at 2e4 points, 470 at 2e5 on 10-d Gaussians
    with 2,000 labelled points), so a fixed ``tol`` asks ever more digits: the iterations
    grew from 38 to 131 while ``lambda`` had settled to 1e-7 by the 20th. A first run of
    :data:`_LOBPCG_SCALE_ITERS` iterations gives the scale; the second, started from its
    vectors, stops at ``_LOBPCG_RTOL * lambda``. The block has :data:`_LOBPCG_BLOCK`
    columns. scipy returns the iterate of smallest absolute
    residual, and a random start over all rows has so little G-energy when few rows are
    constrained that its own residual is that smallest one: at 10^6 points with 2,400
    pairs the scale run handed back its start (scale 1e-4 instead of 4.5) and the second
    run took 103 iterations to a residual of 1e-7. The start's constrained rows are
    therefore scaled up (:func:`_start_block`): 23 + 22 iterations there with a block of
    two (11 against 32 CPU s), and the same 23 + 22 as before at 10^5.

    From a ``start`` block (the vectors of a nearby pencil) the scale is its Rayleigh-Ritz
    value and the scale run is skipped: at 10^5 points, 100 pairs added to 1,000 took 18
    iterations instead of 20 + 33 (0.21 against 0.95 CPU s), both within 2e-6 of the
    value.

    ``bar``: a progress bar that counts LOBPCG's products with ``G`` (scipy's LOBPCG has no
    callback; the products are those of ``G`` itself).

    Returns
    -------
    lam : float
    vectors : ndarray of shape (n, 1)
    """
    n = G.shape[0]
    A = _counted(G, bar)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        scale = None
        if (start is not None and start.shape == (n, _LOBPCG_BLOCK)
                and np.all(np.isfinite(start))):
            X = np.asarray(start, dtype=np.float64)
            # a Ritz value is at most lambda_max: the tolerance below is never looser
            with contextlib.suppress(np.linalg.LinAlgError):  # a degenerate block
                scale = float(np.max(sl.eigvalsh(X.T @ (G @ X), X.T @ (L @ X))))
        if scale is None:
            # a random start's residual is tiny against lambda_max (its G-energy is), so
            # the scale run must not stop on a residual: a tolerance of ~0 runs its
            # iterations
            vals, X = lobpcg(A, _start_block(G, rng), B=L, largest=True, tol=1e-300,
                             maxiter=_LOBPCG_SCALE_ITERS)
            scale = float(np.max(vals))
        tol = _LOBPCG_RTOL * scale if scale > 0 else _LOBPCG_RTOL
        vals, X = lobpcg(A, X, B=L, largest=True, tol=tol, maxiter=300)
    return float(np.max(vals)), X


def _lobpcg_wide(G, L, rng, bound, bar):
    """``lambda_max(G, L)`` by LOBPCG on a block of :data:`_LOBPCG_WIDE_BLOCK` vectors, for
    when the one-vector run returned less than ``bound``, a Rayleigh quotient.

    scipy's LOBPCG returns the iterate of smallest absolute residual, which favours a small
    Ritz value: where the pairs touch most rows and their eigenvalues crowd below the top
    one, the one-vector run can hand back its start. The wider block separates them.
    The result is at least ``bound``; the vector returned is the top Ritz vector.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        vals, X = lobpcg(_counted(G, bar), _start_block(G, rng, _LOBPCG_WIDE_BLOCK), B=L,
                         largest=True, tol=_LOBPCG_RTOL * bound, maxiter=300)
    top = int(np.argmax(vals))
    return max(float(vals[top]), bound), X[:, top:top + 1]


def _counted(G, bar):
    """``G`` as a LinearOperator whose every product advances ``bar`` (scipy's LOBPCG has
    no callback; the products are those of ``G`` itself)."""
    def product(X):
        bar.update(1)
        return G @ X

    return LinearOperator(G.shape, matvec=product, matmat=product, dtype=G.dtype)


def _start_block(G, rng, columns=_LOBPCG_BLOCK):
    """LOBPCG's random start block (``columns`` columns), its rows where ``G``
    has entries scaled by ``max(1, sqrt(n / n_G) / 2)`` (``n_G`` such rows), so that they
    carry a fifth of its norm or more (:func:`_lobpcg_largest`)."""
    n = G.shape[0]
    X = rng.standard_normal((n, columns))
    rows = np.flatnonzero(np.diff(sp.csr_matrix(G).indptr) > 0)
    if len(rows):
        X[rows] *= max(1.0, 0.5 * np.sqrt(n / len(rows)))
    return X


def auto_gamma(laplacian, pairs, signs, loss, gamma0=None):
    """The value of ``gamma="auto"``, and ``gamma_0`` (None for ``pcp``, which skips it).

    ``AUTO_GAMMA_FACTOR * gamma_0`` for the margin losses; ``PCP_AUTO_FACTOR * max_i L_ii``
    for ``pcp`` (see the module docstring). ``gamma0``: a value of
    :func:`critical_gamma` already computed.

    Returns
    -------
    gamma : float
        ``nan`` when ``gamma_0`` is infinite (no nonzero kernel lowers the loss).
    gamma0 : float or None
    """
    if not get_loss(loss).margin:  # pcp: fits targets, see the module docstring
        diag = sp.csr_matrix(laplacian).diagonal()
        return PCP_AUTO_FACTOR * float(np.max(diag)), None
    if gamma0 is None:
        gamma0 = critical_gamma(laplacian, pairs, signs, loss)
    return (AUTO_GAMMA_FACTOR * gamma0 if np.isfinite(gamma0) else np.nan), gamma0
