"""Shared test setup."""

import signal

import pytest


@pytest.fixture(autouse=True)
def _sigint_raises_keyboard_interrupt():
    """The interrupt tests send SIGINT from a timer thread: make it raise KeyboardInterrupt.

    A process started in the background by a non-interactive shell inherits SIGINT as
    ignored, and Python then leaves it ignored: the signal would be lost and those tests
    would run their long fits to the end.
    """
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if previous is not None:  # None: a handler installed outside Python, left alone
        signal.signal(signal.SIGINT, previous)
