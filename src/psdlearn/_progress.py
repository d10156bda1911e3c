"""Progress reporting and interruption, shared by the loops of every estimator.

Library calls print nothing to stdout. With ``verbose`` set, progress bars (tqdm) go to
stderr. A Ctrl-C (``KeyboardInterrupt``) inside a solver loop stops the loop at the last
complete iterate: the solver returns it with ``interrupted=True`` and the estimator keeps it,
warns with :class:`FitInterruptedWarning` and sets ``converged_ = False``.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["FitInterruptedWarning", "progress_bar", "warn_interrupted"]


class FitInterruptedWarning(UserWarning):
    """A fit was interrupted (Ctrl-C); the estimator holds its last complete iterate."""


class _Silent:
    """The do-nothing bar of ``verbose=0``."""

    def update(self, n=1):
        pass

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def progress_bar(verbose, total=None, desc=None, unit="it"):
    """A tqdm bar on stderr when ``verbose`` is truthy, else a silent stand-in.

    Parameters
    ----------
    verbose : int or bool
    total : int, optional
        Expected number of steps.
    desc, unit : str, optional
        Label and unit of the bar.

    Returns
    -------
    bar : object with ``update``, ``set_postfix``, ``close``; a context manager.
    """
    if not verbose:
        return _Silent()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True)


def warn_interrupted(name, n_iter, unit="iterations", stacklevel=3):
    """Warn that ``name``'s fit stopped on Ctrl-C after ``n_iter`` complete ``unit``."""
    warnings.warn(
        f"{name}: fit interrupted (KeyboardInterrupt) after {n_iter} complete {unit}; the "
        "fitted attributes hold the last complete iterate and converged_ is False.",
        FitInterruptedWarning,
        stacklevel=stacklevel,
    )
