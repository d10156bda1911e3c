"""Hypothesis profiles of the property-based tests (``tests/fuzz``).

``ci`` (the default) is derandomized: the same examples on every run, a fixed number of
them, so that the suite is deterministic and stays well under two minutes. ``long``
draws many more, at random, and is run by hand::

    HYPOTHESIS_PROFILE=long pytest tests/fuzz

(``FUZZ_EXAMPLES=N`` sets the base number of examples of either profile.)

A failure found by ``long`` is printed with its example; pin it as an explicit test in
``tests/fuzz/test_regressions.py``.
"""

import os

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", max_examples=25, derandomize=True, deadline=None,
                          suppress_health_check=_QUIET, print_blob=True)
settings.register_profile("long", max_examples=400, deadline=None,
                          suppress_health_check=_QUIET, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
if os.environ.get("FUZZ_EXAMPLES"):  # another number of examples, for a quick look
    settings.register_profile("custom", settings.default,
                              max_examples=int(os.environ["FUZZ_EXAMPLES"]))
    settings.load_profile("custom")
