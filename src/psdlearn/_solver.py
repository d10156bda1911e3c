"""What every iterative solver of the package returns, and how estimators find solvers.

A solver is a function ``solve(problem, start, options) -> SolverResult``. An estimator
keeps a :class:`SolverRegistry` of :class:`SolverSpec` entries, validates its ``solver``
parameter against it, dispatches through it and copies the result into fitted attributes
generically (:meth:`SolverResult.attributes`). Adding a solver is one module with its solve
function plus one ``registry.register(SolverSpec(...))`` call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = ["SolveOptions", "SolverRegistry", "SolverResult", "SolverSpec"]


@dataclass(frozen=True)
class SolverResult:
    """Output of every solver (frozen).

    Attributes
    ----------
    embedding : ndarray of shape (n, r) or None
        The factor of the learned PSD matrix: ``K = E E^T`` (NPKL), ``M = E E^T`` (metric
        learners, ``n`` = number of features); ``None`` where a factor is not free to get
        (the generalized Nystrom solvers, whose matrices are in ``info``).
    objective_history : sequence of float
        Objective at the start, then after every iteration (``n_iter + 1`` values), in the
        solver's own sense (minimized or maximized, as its docstring says).
    time_history : sequence of float
        Cumulative solver seconds aligned with ``objective_history``.
    n_iter : int
    converged : bool
        Whether the solver's stopping rule was met before its iteration cap.
    interrupted : bool
        Whether a KeyboardInterrupt or the callback's stop signal ended the run early; the
        result then holds the last completed iterate.
    multipliers : object or None
        Dual variables the solver holds (candidates for a duality certificate).
    info : mapping
        Solver-specific outputs, read as attributes too (``result.rho_history``). The
        estimator copies the keys named in ``SolverSpec.attributes`` into fitted
        attributes with a trailing underscore.
    """

    embedding: np.ndarray
    objective_history: Any
    time_history: Any
    n_iter: int
    converged: bool
    interrupted: bool = False
    multipliers: Any = None
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "info", MappingProxyType(dict(self.info)))

    def __getattr__(self, name):
        # only reached when normal lookup fails: the solver-specific outputs
        info = self.__dict__.get("info")
        if info is not None and name in info:
            return info[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    @property
    def objective(self):
        """The last entry of ``objective_history``."""
        return float(self.objective_history[-1])


@dataclass(frozen=True)
class SolveOptions:
    """What an estimator passes to a solver besides the problem and the start.

    Attributes
    ----------
    max_iter : int
    tol : float
    random_state : numpy.random.RandomState
    callback : callable or None
        ``callback(iteration, iterate, objective)`` after every iteration; returning
        ``True`` stops the solver, which then returns its last iterate with
        ``interrupted=True``.
    verbose : int
    params : mapping
        The estimator's other parameters (``get_params(deep=False)``), for the settings only
        one solver reads.
    state : object or None
        What a solver kept from the previous fit for a warm start (``None`` otherwise).
    owns_start : bool
        Whether the solver may overwrite the start: the caller does not read it after the
        call. A solver that iterates in place can then do so in the start itself, and a
        large fit holds one array of the embedding's size instead of two.
    """

    max_iter: int
    tol: float
    random_state: Any = None
    callback: Callable | None = None
    verbose: int = 0
    params: Mapping[str, Any] = field(default_factory=dict)
    state: Any = None
    owns_start: bool = False


@dataclass(frozen=True)
class SolverSpec:
    """One solver as an estimator sees it.

    Attributes
    ----------
    name : str
        The value of the estimator's ``solver`` parameter.
    solve : callable
        ``solve(problem, start, options) -> SolverResult``.
    losses : tuple of str
        The losses it handles (empty: the estimator has no loss parameter).
    warm_start : bool
        Whether it continues from ``start`` (the previous fit's solution) when given one.
    rank : bool
        Whether it works at a given rank (a factor of ``r`` columns).
    certificate : bool
        Whether a duality certificate and ``rank="adaptive"`` apply to its result.
    distributed : bool
        Whether a Dask backend exists.
    unit : str
        What one iteration is called in progress bars and warnings.
    stop_rule : str
        The stopping rule, for the warning when ``max_iter`` ends the run.
    hint : str
        The advice of that warning.
    attributes : tuple of str
        Keys of ``SolverResult.info`` the estimator copies to fitted attributes.
    """

    name: str
    solve: Callable
    losses: tuple = ()
    warm_start: bool = False
    rank: bool = True
    certificate: bool = False
    distributed: bool = False
    unit: str = "iterations"
    stop_rule: str = "the stopping rule was met"
    hint: str = "increase max_iter or tol"
    attributes: tuple = ()


class SolverRegistry:
    """The solvers of one estimator, by name, in registration order."""

    def __init__(self, owner):
        self.owner = owner
        self._specs = {}

    def register(self, spec):
        """Add ``spec`` (a :class:`SolverSpec`); returns it. Names are unique."""
        if spec.name in self._specs:
            raise ValueError(f"{self.owner} already has a solver named {spec.name!r}.")
        self._specs[spec.name] = spec
        return spec

    def unregister(self, name):
        """Remove the solver ``name`` (tests register temporary solvers)."""
        del self._specs[name]

    def __getitem__(self, name):
        try:
            return self._specs[name]
        except KeyError:
            raise ValueError(f"{self.owner} has no solver {name!r}; choose one of "
                             f"{self.names()}.") from None

    def __contains__(self, name):
        return name in self._specs

    def __iter__(self):
        return iter(self._specs.values())

    def names(self):
        """Registered names, in registration order."""
        return tuple(self._specs)
