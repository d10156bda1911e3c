"""The Dask side of distributed NPKL: the client, pinned tasks, failure detection, the comm log.

Every block of rows lives on one worker for the whole fit: its tasks are submitted with
``workers=[address], allow_other_workers=False``, so its rows of ``E`` and ``L`` never
move; only the halo rows and a few scalars per iteration travel. The tasks are pure (each
returns new arrays and never writes into its inputs), so a value Dask recomputes is the
same value. A worker that leaves the cluster in the middle of a fit cannot be recovered
from (its blocks had no other copy): :meth:`Runtime.gather` notices it and raises
:class:`WorkerLostError` instead of waiting for tasks pinned to a dead address.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CommRecord", "Runtime", "WorkerLostError", "attach_transfer_log", "get_client"]

#: Seconds between two checks of the worker set while waiting for a result.
POLL_SECONDS = 0.5


class WorkerLostError(RuntimeError):
    """A worker holding blocks of a distributed fit left the cluster during the fit."""


def get_client():
    """The current ``dask.distributed`` client, or a new LocalCluster's, with a warning."""
    from distributed import Client, LocalCluster
    from distributed import get_client as current

    try:
        return current()
    except ValueError:
        pass
    warnings.warn("no dask.distributed Client is running: starting a LocalCluster on this "
                  "machine (create a Client first to run on your cluster).", UserWarning,
                  stacklevel=4)
    return Client(LocalCluster(processes=True))


@dataclass
class CommRecord:
    """Communication and compute of one iteration (one ADMM iteration or one BCD sweep).

    Attributes
    ----------
    iteration : int
    halo_rows : int
        Rows of the other factor / of ``E`` sent between blocks (sum over every halo
        exchange of the iteration).
    halo_bytes : int
        ``8 * rank * halo_rows``: the payload of the halo exchanges.
    reduce_bytes : int
        Payload of the global reductions (scalars per block sent to the client).
    wall_s : float
        Client-side seconds of the iteration, from the first submission to the reduced
        scalars.
    compute_s : float
        Critical-path compute: per phase, the slowest block's kernel seconds, summed.
    compute_sum_s : float
        Kernel seconds summed over the blocks (the work).
    reduce_s : float
        Seconds the client spent fetching the reduced scalars once they were ready.
    start, stop : float
        Epoch seconds of the iteration on the client.
    comm_s : float
        ``wall_s - compute_s``: halo transfers, reductions and Dask's scheduling.
    halo_s, halo_bytes_measured : float
        Seconds and bytes of the incoming transfers of halo pieces during the iteration,
        summed over the workers, from Dask's own transfer logs (:func:`attach_transfer_log`;
        transfers of different workers overlap in time).
    """

    iteration: int
    halo_rows: int
    halo_bytes: int
    reduce_bytes: int
    wall_s: float
    compute_s: float
    compute_sum_s: float
    reduce_s: float
    start: float
    stop: float
    comm_s: float = field(init=False)
    halo_s: float = float("nan")
    halo_bytes_measured: float = float("nan")

    def __post_init__(self):
        self.comm_s = max(self.wall_s - self.compute_s, 0.0)

    def as_dict(self):
        """The record as a plain dict."""
        return dict(self.__dict__)


class Runtime:
    """Blocks pinned to workers, and waits that fail loudly when a worker is lost.

    Parameters
    ----------
    client : distributed.Client
    n_blocks : int
        Number of slabs; slab ``b`` lives on ``workers[b * len(workers) // n_blocks]``
        (consecutive slabs on one worker, so that the even and the odd slabs, the two
        colours of the BCD sweep, are both spread over every worker).
    coordinator : bool, default=False
        Add block ``n_blocks`` (the constrained rows of the BCD solver) on the first worker.
    """

    def __init__(self, client, n_blocks, coordinator=False):
        self.client = client
        self.workers = sorted(client.nthreads())
        if not self.workers:
            raise RuntimeError("the dask cluster has no worker.")
        w = len(self.workers)
        self.n_blocks = int(n_blocks)
        self.fetch_s = 0.0
        self.home = [self.workers[b * w // self.n_blocks] for b in range(self.n_blocks)]
        if coordinator:
            self.home.append(self.workers[0])

    def submit(self, block, fn, *args):
        """Run ``fn(*args)`` on the worker of ``block`` (None: anywhere)."""
        if block is None:
            return self.client.submit(fn, *args, pure=False)
        return self.client.submit(fn, *args, workers=[self.home[block]],
                                  allow_other_workers=False, pure=False)

    def check_workers(self):
        """Raise :class:`WorkerLostError` if a worker that holds blocks has left."""
        alive = set(self.client.nthreads())
        lost = sorted(set(self.home) - alive)
        if lost:
            raise WorkerLostError(
                f"worker(s) {lost} left the cluster during the distributed NPKL fit; their "
                "rows of E and L had no other copy, so the fit is aborted (no embedding is "
                "returned). Fit again on a stable cluster.")

    def wait(self, futures):
        """Wait until ``futures`` are done (on the workers), checking the workers meanwhile."""
        from distributed import wait

        while True:
            try:
                wait(futures, timeout=POLL_SECONDS)
                break
            except TimeoutError:
                self.check_workers()
        self.check_workers()
        bad = [f for f in np.ravel(np.asarray(futures, dtype=object))
               if f.status in ("cancelled", "lost")]
        if bad:
            raise WorkerLostError(f"{len(bad)} task(s) of the distributed NPKL fit were lost "
                                  f"({bad[0].status}); the fit is aborted.")

    def gather(self, futures):
        """Results of ``futures``, checking the workers while waiting and fetching.

        A worker lost during the fetch makes Dask reschedule its keys, whose tasks are
        pinned to it and so never run: the fetch runs in a helper thread, and the loss
        raises :class:`WorkerLostError` here (the pending keys are cancelled, which ends
        the fetch) instead of a wait without end.
        """
        from concurrent.futures import ThreadPoolExecutor

        self.wait(futures)
        t0 = time.perf_counter()
        pool = ThreadPoolExecutor(1)
        fetch = pool.submit(self.client.gather, futures)
        try:
            while True:
                try:
                    out = fetch.result(timeout=POLL_SECONDS)
                    break
                except TimeoutError:
                    self._check_or_cancel(futures)
                except Exception:  # e.g. NoValidWorkerError: a lost worker says more
                    self.check_workers()
                    raise
        finally:
            pool.shutdown(wait=False)
        self.fetch_s = time.perf_counter() - t0
        return out

    def _check_or_cancel(self, futures):
        try:
            self.check_workers()
        except WorkerLostError:
            self.client.cancel(list(np.ravel(np.asarray(futures, dtype=object))))
            raise


def _halo_transfers(dask_worker):
    """``(start, duration, bytes)`` of the worker's incoming transfers of halo pieces."""
    out = []
    for entry in dask_worker.transfer_incoming_log:
        halo = [b for k, b in entry["keys"].items() if str(k).startswith("_take")]
        if halo:
            out.append((entry["start"], entry["duration"], float(sum(halo))))
    return out


def attach_transfer_log(rt, records):
    """Fill ``halo_s`` and ``halo_bytes_measured`` of the ``records`` (dicts) from the
    workers' transfer logs (a transfer counts in the iteration during which it started)."""
    logs = [t for ts in rt.client.run(_halo_transfers).values() for t in ts]
    if not logs or not records:
        return
    starts = np.array([t[0] for t in logs])
    stops = np.array([r["stop"] for r in records])
    which = np.searchsorted(stops, starts)
    first = records[0]["start"]
    for rec in records:
        rec["halo_s"] = rec["halo_bytes_measured"] = 0.0
    for (start, duration, nbytes), k in zip(logs, which, strict=True):
        if start >= first and k < len(records):
            records[k]["halo_s"] += duration
            records[k]["halo_bytes_measured"] += nbytes

