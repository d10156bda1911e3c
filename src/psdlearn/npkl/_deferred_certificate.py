"""The duality certificate of a fixed-rank ``NPKL.partial_fit``, computed when first read.

At a fixed rank the certificate decides nothing in the fit: the rounds of
:func:`psdlearn.npkl._rounds.solve_rounds` stop after it whatever it says, and only its
report (``certificate_``, ``rank_path_``, ``certificate_time_``) and the
``ConvergenceWarning`` of an uncertified fit depend on it. After new pairs it is most of
the cost (at 10^5 points and 1,100 hinge pairs, 3.5 of 4.8 CPU s: a Lanczos run per dual
candidate and a 4-block), and a loop that adds answers one batch at a time reads it, if at
all, after the last batch. So ``partial_fit`` keeps what the bound needs, the solver's dual
candidates and CPU seconds (the state of ``embedding_``, ``laplacian_`` and
``side_info_`` is the estimator's own), and :func:`evaluate` computes it on the first read
of any of the three attributes (:class:`DeferredAttribute`), with the bound, the time budget
and the warning of the eager certificate: the same ``certify`` on the same problem in the
solver's sample order, hence the same certificate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from psdlearn.npkl import certificate as _cert
from psdlearn.npkl._fit_graph import in_order
from psdlearn.npkl._rounds import solve_rounds
from psdlearn.npkl._settings import warn_uncertified
from psdlearn.npkl.problem import NPKLProblem

__all__ = ["DeferredAttribute", "PendingCertificate", "evaluate", "run_rounds",
           "solve_deferred"]

#: The fitted attributes computed by :func:`evaluate`.
DEFERRED = ("certificate_", "rank_path_", "certificate_time_")


@dataclass(frozen=True)
class PendingCertificate:
    """What the certificate of the current ``embedding_`` needs besides the estimator.

    Attributes
    ----------
    multipliers : object
        The solver's dual candidates (``SolverResult.multipliers``), aligned with the rows
        of ``side_info_.pairs``.
    solve_cpu : float
        CPU seconds of the solve: the certificate's budget is a share of them
        (:data:`psdlearn.npkl.certificate.CERTIFICATE_SHARE`), as in the fit.
    order : ndarray of shape (n_samples,) or None
        The ``order`` of :func:`solve_rounds` (the fit's value order), None for
        ``partial_fit``.
    renumber : bool
        Whether the solver had the samples renumbered (``spec.renumber``).
    settings : tuple
        ``(certificate_tol, loss, b, delta)`` at the solve: a ``set_params`` between the
        solve and the read does not change the bound of the fitted problem.

    The bound is computed on the problem in the solver's own sample order, so that
    Lanczos starts from the same vector and the certificate is the one the fit would
    have computed (a 4-block that converges from one start may not from another).
    """

    multipliers: object
    solve_cpu: float
    order: object = None
    renumber: bool = False
    settings: tuple = ()


class DeferredAttribute:
    """A fitted attribute of the certificate that :func:`evaluate` sets on first read.

    A non-data descriptor: once set (by :func:`evaluate` or by an eager fit) the value
    lives in the instance ``__dict__`` and is read from there; before, reading it runs the
    pending certificate, and without one it is missing (``AttributeError``).
    """

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        if obj.__dict__.get("_pending_certificate") is not None:
            evaluate(obj)
            return obj.__dict__[self.name]
        raise AttributeError(self.name)


def defers(est, spec):
    """Whether the certificate of this solve is deferred: a solver with a certificate, a
    fixed rank, ``certificate_tol`` set and no progress output (a verbose fit prints the
    certificate as it ends)."""
    return (spec.certificate and est.rank != "adaptive" and est.certificate_tol is not None
            and not est.verbose)


def run_rounds(est, spec, problem, rank, rng, *, defer, **kwargs):
    """:func:`solve_rounds`, its certificate deferred when ``defer`` and :func:`defers`
    allow (:func:`solve_deferred`). Returns whether it was deferred: the caller warns of an
    eager fit that is not certified (``warn_uncertified``), never of a deferred one."""
    if defer and defers(est, spec):
        solve_deferred(est, spec, problem, rank, rng, **kwargs)
        return True
    est._pending_certificate = None
    solve_rounds(est, spec, problem, rank, rng, **kwargs)
    return False


def solve_deferred(est, spec, problem, rank, rng, **kwargs):
    """:func:`solve_rounds` with the certificate left for :func:`evaluate`.

    The solver runs as registered (one round: at a fixed rank the certificate starts no
    other); its dual candidates and CPU seconds are kept in ``est._pending_certificate``.
    After a Ctrl-C in the solver nothing is pending: ``certificate_`` is None, as in the
    eager fit.
    """
    record = {}

    def recorded(prob, E0, options):
        cpu = time.process_time()
        res = spec.solve(prob, E0, options)
        record.update(multipliers=res.multipliers, cpu=time.process_time() - cpu,
                      interrupted=res.interrupted)
        return res

    for name in DEFERRED:
        est.__dict__.pop(name, None)
    est._pending_certificate = None
    solve_rounds(est, replace(spec, certificate=False, solve=recorded), problem, rank, rng,
                 **kwargs)
    if not record or record["interrupted"]:
        est.certificate_, est.rank_path_, est.certificate_time_ = None, [], 0.0
        return
    est._pending_certificate = PendingCertificate(
        record["multipliers"], record["cpu"], kwargs.get("order"),
        bool(getattr(spec, "renumber", False)),
        (est.certificate_tol, est.loss, float(est.b),
         None if est.graph == "precomputed" else float(est.delta)))


def evaluate(est):
    """Compute the pending certificate of ``est`` and set :data:`DEFERRED`.

    The bound of the eager fit (``certify`` of ``embedding_`` with the solver's dual
    candidates, within the same CPU budget), then its ``ConvergenceWarning`` when it does
    not certify, raised at the read that triggered it.
    """
    pending = est.__dict__["_pending_certificate"]
    tol, loss, b, delta = pending.settings
    start = time.perf_counter()
    note = getattr(est, "_certificate_memory_note", None)
    if note is not None:  # fit's memory guard found no room for the bound: nor is there now
        est._pending_certificate = None
        est.certificate_ = _cert.skipped(est.objective(), tol, note)
        est.rank_path_ = [(est.embedding_.shape[1], est.certificate_.relative_gap)]
        est.certificate_time_ = time.perf_counter() - start
        return
    C = est.side_info_
    # no name for the value-ordered Laplacian: renumbered, the copy is freed
    problem = NPKLProblem(*in_order(est.laplacian_, C.pairs, pending.order),
                          C.signs.astype(np.float64), loss, est.gamma_, b)
    rows = pending.order  # solver sample k is sample rows[k]: one copy of the embedding
    if pending.renumber:
        perm, _, problem = problem.renumbered()
        rows = perm if rows is None else rows[perm]
    E = np.asarray(est.embedding_ if rows is None else est.embedding_[rows], dtype=np.float64)
    # the built normalized Laplacian has lambda_min >= delta; a precomputed one the
    # Gershgorin bound (as in the fit)
    lmin = delta if delta is not None else _cert.laplacian_lower_bound(problem.laplacian)
    budget = max(_cert.CERTIFICATE_SHARE * pending.solve_cpu, _cert.CERTIFICATE_MIN_SECONDS)
    cert = _cert.certify(problem, E, pending.multipliers, tol=tol, laplacian_min_eig=lmin,
                         time_budget=budget)
    est._pending_certificate = None
    est.certificate_ = cert
    est.rank_path_ = [(E.shape[1], cert.relative_gap)]
    est.certificate_time_ = time.perf_counter() - start
    warn_uncertified(est)  # stacklevel 4: this, the descriptor, the read
