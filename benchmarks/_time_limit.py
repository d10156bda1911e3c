"""A wall-time limit for one peer fit (SIGALRM), shared by the peer runners; it imports
nothing but the standard library, so the peers' interpreter can load it."""

from __future__ import annotations

import contextlib
import signal


@contextlib.contextmanager
def time_limit(seconds):
    """Raise ``TimeoutError`` in the block after ``seconds`` of wall time (the peers' fits
    are pure Python/NumPy loops, which a signal interrupts)."""

    def _expired(signum, frame):
        raise TimeoutError(f"fit stopped after the time limit of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
