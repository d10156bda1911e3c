"""A model of the time per iteration of distributed NPKL on ``P`` machines.

Built from measured quantities (those of the distributed benchmark, see the method notes):

- ``row_s``: compute seconds per row and iteration (the kernels, one core), from the
  per-block kernel times of ``comm_history_`` (``compute_sum_s / n``);
- ``boundary_rows``: halo rows a slab receives across one slab boundary, measured at
  ``n0`` points; a slab boundary of data of intrinsic dimension ``dim`` holds a number
  of points that grows as ``n^((dim - 1) / dim)`` (a cross-section of the point cloud),
  independent of ``P``;
- ``task_s``: seconds of Dask scheduling per task, from the measured
  ``comm_s`` of an iteration minus its modelled transfers, divided by its tasks.

Per iteration, with ``P`` machines each holding one slab (two neighbours), ``E`` of rank
``r`` and ``x`` halo exchanges (ADMM: 2, BCD: 1 plus the coordinator's):

.. math::

    T(P) = \\underbrace{row_s \\, n / P}_{compute}
         + \\underbrace{x \\, (2\\, b(n)\\, 8 r / B + 2 \\lambda)}_{halo}
         + \\underbrace{\\lambda \\lceil \\log_2 P \\rceil}_{reduction}
         + \\underbrace{task_s \\, \\tau P}_{scheduler}

with ``b(n) = boundary_rows (n / n0)^((dim - 1) / dim)``, network bandwidth ``B`` and
latency ``lambda`` (assumed, not measured here: one machine has no network), and
``tau`` tasks per block and iteration. The Dask scheduler is one process, so its share
grows with ``P``: it, not the network, limits the useful ``P`` for a fixed ``n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Measured", "model_time"]


@dataclass(frozen=True)
class Measured:
    """The measured inputs of :func:`model_time` (see the module docstring)."""

    row_s: float
    boundary_rows: float
    n0: int
    dim: float
    task_s: float
    tasks_per_block: float
    exchanges: int
    rank: int


def model_time(P, n, measured, *, bandwidth=1.25e9, latency=1e-4):
    """Modelled seconds per iteration on ``P`` machines, by component.

    Parameters
    ----------
    P : int
        Machines (one slab each).
    n : int
        Points.
    measured : Measured
    bandwidth : float, default=1.25e9
        Bytes per second per machine (10 Gbit/s Ethernet).
    latency : float, default=1e-4
        Seconds per message (TCP round trip inside a data centre).

    Returns
    -------
    dict
        ``compute``, ``halo``, ``reduction``, ``scheduler`` and ``total`` seconds, and
        ``halo_bytes`` received per machine and iteration.
    """
    m = measured
    compute = m.row_s * n / P
    boundary = m.boundary_rows * (n / m.n0) ** ((m.dim - 1.0) / m.dim)
    halo_bytes = 0.0 if P == 1 else m.exchanges * 2.0 * boundary * 8.0 * m.rank
    halo = 0.0 if P == 1 else halo_bytes / bandwidth + m.exchanges * 2.0 * latency
    reduction = latency * math.ceil(math.log2(P)) if P > 1 else 0.0
    scheduler = m.task_s * m.tasks_per_block * P
    return {"compute": compute, "halo": halo, "reduction": reduction, "scheduler": scheduler,
            "total": compute + halo + reduction + scheduler, "halo_bytes": halo_bytes}
