"""Software prefetch of embedding rows for the Gauss-Seidel passes over a large graph.

A pass over an ``n``-row embedding ``E`` reads, for each row ``i``, the rows ``e_k`` of
its graph neighbours. Past the cache (``n r`` doubles of tens of MB and more) each of
these reads waits for memory, and the next row's reads cannot start earlier because the
row being written may be one of them. Announcing the neighbour rows of a row a few
positions ahead (``llvm.prefetch``, a hint that never changes a result) lets those loads
overlap the current row's arithmetic: measured 3x on a gather pass over a 1e6-point kNN
graph with ``r = 50``.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["PREFETCH_DISTANCE", "prefetch_neighbour_rows"]

#: Rows ahead whose neighbours are prefetched (1-4 measured equal; 8 slower).
PREFETCH_DISTANCE = 2
#: Bytes of a cache line.
_LINE_BYTES = 64


@intrinsic
def _prefetch(typingctx, arr, i, j):
    """Read-prefetch the cache line of ``arr[i, j]`` (2-D array) into all cache levels."""
    if not (isinstance(arr, types.Array) and arr.ndim == 2):
        return None
    sig = types.void(arr, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], args[2]])
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # (address, read = 0, locality = 3 (keep in all levels), data cache = 1)
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), ir.Constant(i32, 0),
                          ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True)
def prefetch_neighbour_rows(i, E, Lp, Li):
    """Prefetch every row ``e_k`` with ``L_ik`` stored (CSR ``Lp``, ``Li``), line by line.

    Not used for the constrained rows: their updates are compute-bound (the small dual
    QPs), and on a1a, whose embedding fits in cache, the hints cost 8% of a sweep.
    """
    r = E.shape[1]
    per_line = _LINE_BYTES // E.itemsize  # 8 doubles or 16 singles
    for t in range(Lp[i], Lp[i + 1]):
        k = Li[t]
        for c in range(0, r, per_line):
            _prefetch(E, k, c)
