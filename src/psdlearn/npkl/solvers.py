"""The NPKL solvers, declared in one place: :data:`NPKL_SOLVERS`.

Each entry says which losses the solver handles, in which float types it keeps its
iterate (``dtypes``), whether it continues from a start (``warm_start``), works at a
given rank, admits the duality certificate of :mod:`psdlearn.npkl.certificate` (and so
``rank="adaptive"``), has a Dask backend
(:mod:`psdlearn.npkl.distributed`), how its iterations and stopping rule are named in the
warnings, which of its ``info`` keys become fitted attributes of :class:`~psdlearn.NPKL`,
and whether it wants the samples renumbered for memory locality. Its ``solve`` is the
adaptor ``fit_<name>(problem, E0, options) -> SolverResult`` of the solver's own module,
which reads the estimator's settings from ``options.params`` (every parameter of
:class:`~psdlearn.NPKL`, with ``rank`` and ``gamma`` resolved to numbers, and the
solver's own ``solver_options`` with their defaults filled in) and calls the keyword
function ``solve_<name>``. A solver declares the ``solver_options`` keys it reads, with
defaults and accepted values, in its spec's ``options`` (:func:`resolve_options`).

``options.state`` tells a solver where ``E0`` comes from: ``None``, a random start;
:data:`RESTART`, the previous round's solution with the columns of a rank escalation (a
point near the optimum of a larger problem); otherwise ``E0`` is the previous fit's
``embedding_`` (``warm_start=True``) and ``state`` is what that fit returned as
``info["state"]`` (or :data:`WARM` when it returned none).

Adding a solver is one module with its ``fit_<name>`` plus one
``NPKL_SOLVERS.register(...)`` call (``tests/test_npkl_registry.py`` registers a projected
gradient solver that way).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

import numpy as np

from psdlearn._compat import Interval, StrOptions
from psdlearn._solver import SolverRegistry, SolverSpec
from psdlearn.npkl.admm import ADMM_LOSSES, fit_admm
from psdlearn.npkl.bcd import BCD_LOSSES, fit_bcd
from psdlearn.npkl.mfpc import MFPC_LOSSES, fit_mfpc
from psdlearn.npkl.problem import LOSSES
from psdlearn.npkl.sdp import fit_sdp
from psdlearn.npkl.simplenpkl import fit_simplenpkl

__all__ = ["NPKL_SOLVERS", "RESTART", "WARM", "NPKLSolverSpec", "RegistryNames", "map_rows",
           "renumbered", "resolve_options"]

#: ``options.state`` of the round after a rank escalation.
RESTART = "restart"
#: ``options.state`` of a warm start from a fit whose solver kept no state.
WARM = "warm"


@dataclass(frozen=True)
class NPKLSolverSpec(SolverSpec):
    """:class:`psdlearn._solver.SolverSpec` with the NPKL estimator's one extra field.

    Attributes
    ----------
    renumber : bool
        Whether the estimator hands the solver the problem with its samples in reverse
        Cuthill-McKee order (:func:`renumbered`, once per fit; the embedding is mapped
        back): passes over ``L E`` then read rows of ``E`` close in memory (1.6x per BCD
        sweep on a shuffled 1e5-point kNN graph, 1.8x per ADMM iteration on a6a).
    options : mapping of str to (default, list of constraints)
        The keys this solver reads from ``NPKL(solver_options=...)``, each with its
        default and the values it accepts (``Interval``, ``StrOptions``, a type, or
        ``None``); ``NPKL.fit`` rejects any other key.
    dtypes : tuple of str
        The float types the solver keeps its iterate in (``NPKL(dtype=...)``);
        ``NPKL.fit`` rejects any other with a ``ValueError``.
    """

    renumber: bool = False
    options: Mapping = field(default_factory=dict)
    dtypes: tuple = ("float64",)


_OMEGA = ("auto", [StrOptions({"auto"}), Interval(numbers.Real, 0, 2, closed="neither")])

#: ``solver_options`` of each built-in solver: ``{key: (default, constraints)}``.
BCD_OPTIONS = {
    "omega": _OMEGA,
    "unconstrained": ("sequential", [StrOptions({"sequential", "block"})]),
    "hinge_smoothing": ("auto", [StrOptions({"auto"}),
                                 Interval(numbers.Real, 0, None, closed="neither"), None]),
    "multilevel": ("auto", [StrOptions({"auto"}), bool]),
    "extrapolation": ("auto", [StrOptions({"auto"}), bool]),
}
ADMM_OPTIONS = {
    "rho": (100.0, [Interval(numbers.Real, 0, None, closed="neither")]),
    "init": ("random", [StrOptions({"random", "bcd"})]),
    "omega": _OMEGA,  # of the BCD start, init="bcd"
}
SDP_OPTIONS = {
    "max_samples": (200, [Interval(numbers.Integral, 1, None, closed="left")]),
    "force": (False, [bool]),
}
SIMPLENPKL_OPTIONS = {
    "B": ("auto", [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")]),
}


def _satisfies(value, constraint):
    if constraint is None:
        return value is None
    if isinstance(constraint, type):
        return isinstance(value, (constraint, np.bool_) if constraint is bool else constraint)
    return constraint.is_satisfied_by(value)


def resolve_options(spec, given):
    """``given`` (a ``solver_options`` dict or None) checked against ``spec.options`` and
    completed with the defaults.

    Raises
    ------
    ValueError
        On a key the solver does not read (the message names the unknown keys and the
        accepted ones) or a value outside its constraints.
    """
    options = getattr(spec, "options", {}) or {}
    given = {} if given is None else dict(given)
    unknown = sorted(set(given) - set(options))
    if unknown:
        accepted = ", ".join(repr(k) for k in options) or "none"
        raise ValueError(f"solver_options has keys {unknown} that solver={spec.name!r} does "
                         f"not read; it accepts: {accepted}.")
    resolved = {key: default for key, (default, _) in options.items()}
    for key, value in given.items():
        constraints = options[key][1]
        if not any(_satisfies(value, c) for c in constraints):
            allowed = " or ".join("None" if c is None else getattr(c, "__name__", str(c))
                                  for c in constraints)
            raise ValueError(f"solver_options[{key!r}] must be {allowed}; got {value!r}.")
        resolved[key] = value
    return resolved


def renumbered(problem, *arrays):
    """``problem`` in reverse Cuthill-McKee order, the inverse map and ``arrays`` reordered.

    The one place where NPKL samples are renumbered (:class:`NPKL` for the solvers with
    ``renumber=True``, and :func:`psdlearn.npkl.admm.solve_admm` with ``reorder=True``).

    Parameters
    ----------
    problem : NPKLProblem
    *arrays : ndarray of shape (n_samples, ...) or None
        Per-sample arrays (starting points, multipliers), row ``i`` for sample ``i``.

    Returns
    -------
    problem : NPKLProblem
        See :meth:`NPKLProblem.renumbered`.
    inverse : ndarray of shape (n_samples,), int64
        ``A = A_new[inverse]`` maps a per-sample result back.
    *arrays
        ``A[perm]`` of each array (None stays None).
    """
    perm, inverse, work = problem.renumbered()
    return (work, inverse, *(None if A is None else A[perm] for A in arrays))


NPKL_SOLVERS = SolverRegistry("NPKL")
NPKL_SOLVERS.register(NPKLSolverSpec(
    name="bcd", solve=fit_bcd, losses=BCD_LOSSES, warm_start=True, certificate=True,
    distributed=True, unit="sweeps", stop_rule="the relative change of E fell below tol={tol}",
    attributes=("omega", "smoothing_stages", "multilevel_levels"), renumber=True,
    options=BCD_OPTIONS, dtypes=("float64", "float32")))
NPKL_SOLVERS.register(NPKLSolverSpec(
    name="sdp", solve=fit_sdp, losses=LOSSES, rank=False, unit="solves",
    stop_rule="the conic solver reported an optimal status",
    hint="loosen the tolerances or try another cvxpy solver",
    attributes=("sdp_status", "sdp_value"), options=SDP_OPTIONS))
NPKL_SOLVERS.register(NPKLSolverSpec(
    name="simplenpkl", solve=fit_simplenpkl, losses=LOSSES, unit="steps",
    stop_rule="the relative change of K fell below tol={tol}",
    attributes=("simplenpkl_objective_history", "B"), options=SIMPLENPKL_OPTIONS))
NPKL_SOLVERS.register(NPKLSolverSpec(
    name="admm", solve=fit_admm, losses=ADMM_LOSSES, warm_start=True, certificate=True,
    distributed=True, unit="iterations",
    stop_rule="the residuals fell below tol={tol} (relative to ||V||)",
    hint="increase max_iter or tol, or start from init='bcd'",
    attributes=("primal_residual_history", "dual_residual_history", "rho_history"),
    renumber=True, options=ADMM_OPTIONS))
NPKL_SOLVERS.register(NPKLSolverSpec(
    name="mfpc", solve=fit_mfpc, losses=MFPC_LOSSES, unit="steps",
    stop_rule="the fixed-point residual fell below tol={tol}", attributes=("mfpc_U",)))


def map_rows(state, index):
    """``state`` with its per-sample arrays (``n_samples`` rows) reindexed by ``index``.

    A solver's warm state (e.g. ADMM's ``(U, Lambda, rho)``) is kept in the caller's sample
    order between fits, and handed to the solver in the order of its problem.
    """
    if index is None or not isinstance(state, tuple):
        return state
    return tuple(a[index] if isinstance(a, np.ndarray) and a.ndim and len(a) == len(index)
                 else a for a in state)


class RegistryNames(Set):
    """The names of a :class:`SolverRegistry` as a live set.

    ``StrOptions(RegistryNames(NPKL_SOLVERS))`` in ``NPKL._parameter_constraints`` accepts
    a solver registered after the class was defined (a test solver, a plug-in).
    """

    def __init__(self, registry):
        self._registry = registry

    @classmethod
    def _from_iterable(cls, iterable):  # set operations return plain sets
        return set(iterable)

    def __contains__(self, name):
        return name in self._registry

    def __iter__(self):
        return iter(self._registry.names())

    def __len__(self):
        return len(self._registry.names())
