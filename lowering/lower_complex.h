// Internal to lowering/: complex64/complex128 values in the lowering (lower_complex.cpp).
//
// A complex dtype is MLIR's `complex<f32>` / `complex<f64>` in tensors and memrefs; its memref
// layout is the interleaved (re, im) pair, as std::complex buffers are, so the kernel ABI and the
// library calls take Fluxion's buffers unchanged. Rules build complex.* ops inside their linalg
// bodies; the CPU pipeline expands them into arith/math on the parts (convert-complex-to-standard)
// before the libm and LLVM conversions (convert-complex-to-llvm).
#pragma once
#include "lowering/lower.h"

namespace fluxion::lowering {

/// re + im*i as a constant of complex dtype d.
mlir::Value complex_constant(mlir::OpBuilder& b, mlir::Location l, DType d, double re, double im);
/// x + y and x * y in compute values of dtype d: float, integer (wrapping) or complex.
mlir::Value add_scalars(mlir::OpBuilder& b, mlir::Location l, mlir::Value x, mlir::Value y, DType d);
mlir::Value mul_scalars(mlir::OpBuilder& b, mlir::Location l, mlir::Value x, mlir::Value y, DType d);
/// convert_scalar when `from` or `to` is complex: real -> complex is exact (imaginary part 0),
/// complex -> real keeps the real part, complex -> bool is z != 0 (prims/convert.cpp).
mlir::Value convert_complex_scalar(mlir::OpBuilder& b, mlir::Location l, mlir::Value x, DType from, DType to);
/// Whether complex `v` replaces `best` in argmax (is_max) or argmin: v has a NaN part and best
/// has none, or neither has one and v orders after (before) best lexicographically, real parts
/// first (numpy's and JAX's order; prims/reduce.cpp's `beats`). An i1.
mlir::Value complex_beats(mlir::OpBuilder& b, mlir::Location l, mlir::Value v, mlir::Value best, bool is_max);
/// The rule of an elementwise primitive (unary, binary, comparison) whose operand is complex.
std::vector<mlir::Value> complex_elementwise(LowerCtx& c, const Eqn& e, std::span<const Operand> in,
                                             std::span<const AbstractArray> out);
/// real, imag, conj and complex (prims/complex.cpp).
void add_complex_lowerings(LowerTable& t);

}  // namespace fluxion::lowering
