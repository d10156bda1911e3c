"""Ctrl-C in any phase of a fit: which phase stopped, how far it had come, nothing half-fitted.

A fit runs in phases (the kNN graph, ``gamma_0``, the solver, the certificate, ...).
Python raises ``KeyboardInterrupt`` in the main thread at the next bytecode after the
signal, so a phase answers Ctrl-C as fast as its longest single call into compiled code
(a BLAS product, one faiss block, one ARPACK restart): the phases call those in bounded
blocks. Each phase runs under :func:`phase`::

    with phase("the kNN graph build"):
        ...

An interrupt that escapes a phase has its message set to name the phase, the time spent
in it and, where a progress bar (:func:`psdlearn._progress.progress_bar`, verbose or not)
counts its steps, how far it had come and about how long it had left::

    KeyboardInterrupt: NPKL.fit interrupted in the kNN graph build after 2.1 s, at 40% of
    the kNN index (400000/1000000 pt, about 3.2 s left); the estimator is unchanged.

The innermost phase comes first, each enclosing one after it in parentheses ("the bcd
solver of the fit of fold 2 (in the cross-validation after 72.9 s, ...)"). The whole fit
runs under :func:`fitting`, which puts the estimator back as it was before ``fit`` (unfitted, if
it was) when the interrupt escapes. A solver loop that holds a complete iterate catches the
interrupt itself and returns that iterate; the estimator then keeps it and warns with
:class:`psdlearn._progress.FitInterruptedWarning` naming the phase
(:func:`psdlearn._progress.warn_interrupted`).

A single compiled call that cannot be cut into blocks (a dense LAPACK eigendecomposition)
runs under :func:`interruptible`: in a worker thread, the main thread waiting for it in
slices of a tenth of a second, so Ctrl-C still acts at once. A compiled solver that polls
a flag through a callback (HiGHS) runs under :func:`deferred_interrupt`, which turns the
signal into that flag and raises the interrupt when the solver has stopped.
"""

from __future__ import annotations

import contextvars
import signal
import threading
import time
from contextlib import contextmanager

__all__ = ["Phase", "current_phase", "deferred_interrupt", "fitting", "interruptible", "phase"]

_CURRENT = contextvars.ContextVar("psdlearn_phase", default=None)


class Phase:
    """A running phase: its name, start time and the progress its bars report."""

    def __init__(self, name):
        self.name = name
        self.start = time.perf_counter()
        self.step = None  # (desc, done, total, unit) of the latest bar, None before one

    def report(self, desc, done, total, unit):
        """Record the progress of a step of this phase (called by the progress bars)."""
        self.step = (desc, done, total, unit)

    def describe(self):
        """``"the kNN graph build after 2.1 s, at 40% of the kNN index (4/10 pt, about
        3.2 s left)"``: the phase, its time, and its progress where a bar counts it."""
        elapsed = time.perf_counter() - self.start
        text = f"{self.name} after {elapsed:.1f} s"
        if self.step is None:
            return text
        desc, done, total, unit = self.step
        of = f" of the {desc}" if desc else ""
        if not total:
            return f"{text}, {done} {unit}{of} done"
        fraction = done / total
        left = ""
        if 0 < fraction < 1:
            left = f", about {elapsed * (1 - fraction) / fraction:.1f} s left"
        return f"{text}, at {fraction:.0%}{of} ({done}/{total} {unit}{left})"


def current_phase():
    """The innermost running :class:`Phase` of this thread, or None."""
    return _CURRENT.get()


def _where(exc):
    """``"the solve after 3.0 s (in the cross-validation after 9.1 s, at 40% ...)"``: the
    phases an interrupt crossed, innermost first."""
    phases = getattr(exc, "phases", [])
    return "".join([phases[0]] + [f" (in {p}" for p in phases[1:]]) + ")" * (len(phases) - 1)


@contextmanager
def phase(name):
    """Run a phase of a fit: an interrupt that escapes it names it (module docstring).

    Parameters
    ----------
    name : str
        A noun phrase completing "interrupted in ...", e.g. ``"the kNN graph build"``.

    Yields
    ------
    Phase
    """
    current = Phase(name)
    token = _CURRENT.set(current)
    try:
        yield current
    except KeyboardInterrupt as exc:
        if not hasattr(exc, "phases"):
            exc.phases = []
        exc.phases.append(current.describe())
        if getattr(exc, "estimator", None) is None:
            exc.args = (f"interrupted in {_where(exc)}",)
        raise
    finally:
        _CURRENT.reset(token)


_FITTING = contextvars.ContextVar("psdlearn_fitting", default=0)


@contextmanager
def fitting(estimator, method="fit"):
    """Run ``estimator.method``: an escaping interrupt leaves the estimator as it was.

    The attributes are restored to their values before the call (a fresh estimator stays
    unfitted). The outermost fit names itself, the phases the interrupt crossed, and says
    so in the message.
    """
    before = dict(vars(estimator))
    depth = _FITTING.get()
    token = _FITTING.set(depth + 1)
    try:
        yield
    except KeyboardInterrupt as exc:
        vars(estimator).clear()
        vars(estimator).update(before)
        name = type(estimator).__name__
        if depth == 0 and getattr(exc, "estimator", None) is None:
            exc.estimator = name
            where = f" in {_where(exc)}" if getattr(exc, "phases", None) else ""
            fitted = any(k.endswith("_") and not k.startswith("__") for k in before)
            exc.args = (f"{name}.{method} interrupted{where}; the estimator is unchanged "
                        f"({'as fitted before' if fitted else 'not fitted'}).",)
        elif depth > 0:  # a nested fit (a fold of a search) is a phase of the outer one
            exc.phases = [*getattr(exc, "phases", []), f"{name}.{method}"]
        raise
    finally:
        _FITTING.reset(token)


#: Seconds between two looks of the main thread at a pending Ctrl-C in :func:`interruptible`.
POLL_SECONDS = 0.1


def interruptible(func, *args, **kwargs):
    """``func(*args, **kwargs)``, answering Ctrl-C within :data:`POLL_SECONDS` even when it
    is one long compiled call.

    The call runs in a worker thread; the main thread waits in short slices, during which
    Python sees the signal. A compiled call cannot be stopped, so after an interrupt the
    worker finishes in the background (its CPU time is spent) and its result is dropped.
    Only worth it for calls that release the GIL (``numpy.linalg.eigh`` does,
    ``scipy.linalg.eigh`` does not); off the main thread, where no Ctrl-C arrives, the
    call runs directly.

    Returns
    -------
    The value of ``func``; its exception is raised as is.
    """
    if threading.current_thread() is not threading.main_thread():
        return func(*args, **kwargs)
    done = {}

    def work():
        try:
            done["value"] = func(*args, **kwargs)
        except BaseException as exc:  # handed to the caller's thread
            done["error"] = exc

    worker = threading.Thread(target=work, name="psdlearn-interruptible", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(POLL_SECONDS)  # a wait that a signal interrupts
    if "error" in done:
        raise done["error"]
    return done["value"]


class _Pending:
    """Whether a Ctrl-C arrived (:func:`deferred_interrupt`)."""

    def __init__(self):
        self.pending = False


@contextmanager
def deferred_interrupt():
    """Record Ctrl-C in a flag during the block, raise ``KeyboardInterrupt`` at its end.

    For a compiled solver that calls back into Python and can stop itself cleanly (HiGHS's
    user interrupt): raising inside its callback would throw through compiled code, so
    the callback reads ``flag.pending`` and asks the solver to stop; the interrupt is
    raised once the solver has returned. Off the main thread, or where SIGINT has a
    handler other than Python's default, the block runs unchanged (the flag stays down).

    Yields
    ------
    flag : object with a bool attribute ``pending``
    """
    flag = _Pending()
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield flag
        return

    def record(signum, frame):
        flag.pending = True

    previous = signal.signal(signal.SIGINT, record)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)
    if flag.pending:
        raise KeyboardInterrupt
