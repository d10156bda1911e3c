"""The untimed warm-up fit before every timed fit of the task benchmarks.

On this machine a fit that follows a second or more of idle time (another method's fit in
the other process) runs about twice as long as the same fit repeated at once: a 10 ms
NPKL pair fit took 17-25 ms after a 1 s sleep, and busy-waiting did not restore it, while
a fit on 20 of its pairs did. The benchmarks interleave psdlearn (in-process) and the
peers (in their own process) per seed, so without a warm-up whichever method ran after
the other's long fit paid that cost. Each method therefore first fits, untimed, on a few
of the same pairs in the process that then times it. Imported by both sides (no psdlearn).
"""

from __future__ import annotations

import numpy as np

#: Pairs of the warm-up fit: up to half of them of each sign, the first ones given.
WARMUP_PAIRS = 20
#: Wall seconds after which a warm-up fit is stopped (MMC on 20 pairs can run to the
#: peers' limit of 30 s; a stopped warm-up has still run the code it warms).
WARMUP_TIME_LIMIT = 2.0


def warmup_indices(signs, n=WARMUP_PAIRS):
    """Indices of the first ``n // 2`` pairs of each sign (both signs, so that every
    method accepts the subset)."""
    signs = np.asarray(signs)
    return np.sort(np.concatenate([np.flatnonzero(signs > 0)[: n // 2],
                                   np.flatnonzero(signs < 0)[: n // 2]]))
