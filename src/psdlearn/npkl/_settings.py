"""NPKL's settings resolved at fit: the solver's options, the float type of the embedding
and the advice of an uncertified fit. Private: the estimator, its Dask path and
``partial_fit`` call these."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdlearn.npkl.solvers import NPKL_SOLVERS, resolve_options

#: Deprecated top-level parameters of NPKL and their ``solver_options`` keys.
DEPRECATED_OPTIONS = {"unconstrained": "unconstrained", "omega": "omega",
                      "hinge_smoothing": "hinge_smoothing", "sdp_max_samples": "max_samples",
                      "sdp_force": "force", "rho": "rho", "init": "init", "B": "B"}


def warn_uncertified(est):
    """A ConvergenceWarning that says what to change when ``certificate_`` fails.

    The gap bound is ``<S, K> - tau min(lambda_min, 0)`` (:mod:`certificate`): the
    first term is the stationarity of the iterate, which a smaller ``tol`` reduces
    (on small sets the gap fell about as ``tol^0.75``, hence the suggested decades);
    the second is the negative curvature that a larger rank removes, unless the
    objective does not decrease along it (``Certificate.rank_descent``), which a smaller
    ``tol`` then removes as well.
    """
    cert = getattr(est, "certificate_", None)
    if cert is None or cert.certified or cert.note:  # a skipped bound says why in note
        return
    from psdlearn.npkl.escalation import ESCALATION_MIN_DECREASE

    rank_part = -cert.trace_bound * min(cert.lambda_min, 0.0)
    # measured along the negative eigenvalue's direction (Certificate.rank_descent): a
    # decrease that would not buy rank="adaptive" a column is a residual of the solve
    no_descent = cert.rank_descent <= ESCALATION_MIN_DECREASE * est.certificate_tol
    head = (f"NPKL(solver={est.solver!r}) is not certified: relative duality gap "
            f"{cert.relative_gap:.2g} > certificate_tol={est.certificate_tol:g} "
            "(certificate_). ")
    if not est.converged_:
        advice = (f"The solver stopped at max_iter={est.max_iter} before tol="
                  f"{est.tol:g}: refit with max_iter={4 * est.max_iter}.")
    elif rank_part >= 0.5 * cert.gap_bound and est.rank != "adaptive" and not no_descent:
        advice = (f"The dual matrix has a negative eigenvalue ({cert.lambda_min:.2g}): "
                  f"rank={est.rank_} is too small; refit with "
                  f"rank={est.rank_ + est.rank_init} or rank='adaptive'.")
    else:
        decades = max(1, int(np.ceil(4.0 / 3.0 * np.log10(
            cert.relative_gap / est.certificate_tol))))
        residual = (f"Its negative eigenvalue ({cert.lambda_min:.2g}) lowers the objective "
                    f"by only {cert.rank_descent:.2g} (relative) along its direction: a "
                    "larger rank would not help. " if no_descent else "")
        advice = (residual + f"The solver stopped at tol={est.tol:g}, too loose for that "
                  f"gap: refit with tol={est.tol * 10.0 ** -decades:g} (and max_iter="
                  f"{max(est.max_iter, 10 * est.n_iter_)} if it stops there).")
    warnings.warn(head + advice + " certificate_tol=None skips the certificate.",
                  ConvergenceWarning, stacklevel=4)

def resolve_solver_options(est):
    """``solver_options`` checked against the solver's keys, with the deprecated
    top-level names (FutureWarning) and the defaults filled in."""
    spec = NPKL_SOLVERS[est.solver]
    given = dict(est.solver_options or {})
    accepted = getattr(spec, "options", {}) or {}
    for old, key in DEPRECATED_OPTIONS.items():
        value = getattr(est, old)
        if isinstance(value, str) and value == "deprecated":
            continue
        warnings.warn(f"NPKL({old}=...) is deprecated and will be removed in the next "
                      f"release; pass solver_options={{{key!r}: {value!r}}} instead "
                      "(read by solver="
                      + " / ".join(repr(s.name) for s in NPKL_SOLVERS
                                   if key in (getattr(s, "options", {}) or {}))
                      + ").", FutureWarning, stacklevel=4)
        if key in accepted and key not in given:  # other solvers ignored it before
            given[key] = value
    return resolve_options(spec, given)


def check_dtype(est, *, dask=False):
    """``np.dtype(est.dtype)``, or ``ValueError`` where the fit cannot keep its embedding in
    it: a solver whose spec does not list it (``dtypes``), or a fit on a dask array
    (float64 only)."""
    dtype = np.dtype(est.dtype)
    spec = NPKL_SOLVERS[est.solver]
    if dtype.name not in getattr(spec, "dtypes", ("float64",)):
        single = [s.name for s in NPKL_SOLVERS if dtype.name in getattr(s, "dtypes", ())]
        raise ValueError(
            f"dtype=np.{dtype.name} is not available with solver={est.solver!r}, which "
            f"computes in float64; the solvers that keep the embedding in {dtype.name}: "
            f"{single}. Pass dtype=np.float64 or one of those solvers.")
    if dask and dtype != np.float64:
        raise ValueError(f"dtype=np.{dtype.name} is not available for a fit on a dask "
                         "array (float64 only); pass dtype=np.float64.")
    return dtype
