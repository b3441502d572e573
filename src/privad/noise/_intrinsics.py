"""Numba intrinsics of :mod:`privad.noise._kernels` (private; imports Numba).

Kept apart from the kernels' algorithm code so that the same kernel source also runs as
plain Python (see ``PYTHON_TWIN`` in :mod:`privad.noise._kernels`), where these three are
replaced by NumPy-scalar functions with the same results.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["_data_ptr", "_float_bits", "_mul128", "njit"]


@intrinsic
def _data_ptr(typingctx, arr):
    """A raw pointer to the data of a contiguous array (no reference counting).

    The helpers take the word store as this pointer, not as an array: Numba
    reference-counts array arguments on every call (an atomic operation, ~10-20 ns here),
    which would cost more than the sampling itself. The kernel keeps the array alive.
    """
    if not isinstance(arr, types.Array):
        return None
    sig = types.CPointer(arr.dtype)(arr)

    def codegen(context, builder, signature, args):
        ary = context.make_array(arr)(context, builder, value=args[0])
        return ary.data

    return sig, codegen


@intrinsic
def _mul128(typingctx, a, b):
    """(high, low) 64-bit halves of the exact 128-bit product of uint64 ``a`` and ``b``."""
    if a != types.uint64 or b != types.uint64:
        return None
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        i128 = ir.IntType(128)
        prod = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        hi = builder.trunc(builder.lshr(prod, ir.Constant(i128, 64)), i64)
        lo = builder.trunc(prod, i64)
        return context.make_tuple(builder, signature.return_type, (hi, lo))

    return sig, codegen


@intrinsic
def _float_bits(typingctx, x):
    """The IEEE 754 bit pattern of a float64, as int64."""
    if x != types.float64:
        return None
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen
