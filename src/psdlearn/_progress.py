"""Progress reporting and interruption, shared by the loops of every estimator.

Library calls print nothing to stdout. With ``verbose`` set, progress bars (tqdm) go to
stderr: each names its phase, counts its steps with the elapsed and remaining time (the
remaining time to ``total``, for a solver its ``max_iter``) and shows the memory the process
holds (``mem``, resident set). A Ctrl-C (``KeyboardInterrupt``) inside a solver loop stops
the loop at the last complete iterate: the solver returns it with ``interrupted=True`` and
the estimator keeps it, warns with :class:`FitInterruptedWarning` and sets
``converged_ = False``. Verbose or not, a bar reports its count to the running phase of
the fit (:mod:`psdlearn._interrupt`), which an interrupt's message quotes.
"""

from __future__ import annotations

import sys
import warnings

from psdlearn._interrupt import current_phase

__all__ = ["FitInterruptedWarning", "memory_in_use", "progress_bar", "warn_interrupted"]


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


class _Reporting:
    """A bar that also reports its count to the phase running at each step
    (:mod:`psdlearn._interrupt`)."""

    def __init__(self, bar, total, desc, unit):
        self._bar = bar
        self._args = [desc, 0, total, unit]
        self._report()

    def _report(self):
        phase = current_phase()
        if phase is not None:
            phase.report(*self._args)

    def update(self, n=1):
        self._args[1] += n
        self._report()
        self._bar.update(n)

    def set_postfix(self, *args, **kwargs):
        self._bar.set_postfix(*args, **kwargs)

    def close(self):
        self._bar.close()

    def __enter__(self):
        self._report()  # a bar made before its phase began
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def progress_bar(verbose, total=None, desc=None, unit="it"):
    """A tqdm bar on stderr when ``verbose`` is truthy, else a silent stand-in; inside a
    phase of a fit (:func:`psdlearn._interrupt.phase`) its count is also the phase's
    progress.

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
        bar = _Silent()
    else:
        bar = _memory_bar()(total=total, desc=desc, unit=unit, file=sys.stderr,
                            dynamic_ncols=True)
    return _Reporting(bar, total, desc, unit)


def memory_in_use():
    """Resident memory of this process in bytes, or None where it cannot be read.

    ``/proc/self/statm`` (Linux); elsewhere the peak so far from ``getrusage``.
    """
    try:
        with open("/proc/self/statm") as fh:
            import os

            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB else


def _format_bytes(b):
    return "?" if b is None else f"{b / 1e9:.2f}GB" if b >= 1e9 else f"{b / 1e6:.0f}MB"


def _memory_bar():
    """A tqdm class whose postfix always ends with ``mem``, the memory in use, refreshed
    at every update (one read of ``/proc``: microseconds, against a sweep or a block)."""
    from tqdm import tqdm

    class MemoryBar(tqdm):
        def __init__(self, *args, **kwargs):
            self._fields = {}
            super().__init__(*args, **kwargs)
            self._show(refresh=False)

        def _show(self, refresh):
            super().set_postfix({**self._fields, "mem": _format_bytes(memory_in_use())},
                                refresh=refresh)

        def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
            self._fields = {**(ordered_dict or {}), **kwargs}
            self._show(refresh)

        def update(self, n=1):
            self._show(refresh=False)
            return super().update(n)

    return MemoryBar


def warn_interrupted(name, n_iter, unit="iterations", stacklevel=3, phase=None):
    """Warn that ``name``'s fit stopped on Ctrl-C after ``n_iter`` complete ``unit``,
    in ``phase`` (a noun phrase, "the solver"; default: the running phase, if any)."""
    if phase is None:
        running = current_phase()
        phase = None if running is None else running.name
    where = "" if phase is None else f" in {phase}"
    warnings.warn(
        f"{name}: fit interrupted (KeyboardInterrupt){where} after {n_iter} complete "
        f"{unit}; the fitted attributes hold the last complete iterate and converged_ is "
        "False.",
        FitInterruptedWarning,
        stacklevel=stacklevel,
    )
