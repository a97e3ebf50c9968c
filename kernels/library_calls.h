// C entry points that compiled kernels call for work better done by a library than by generated
// code (sort, polygamma, matmul through Eigen). The JIT resolves them by name in the process.
//
// Each takes one int64_t array (the kernel builds it on its stack) so that one C signature serves
// every shape: the array holds the static facts (dtypes, shapes, params) as integers and the
// buffers as addresses. Nothing in it points at compile-time objects, so a kernel that calls them
// can be cached on disk and reloaded by another process.
#pragma once
#include <cstdint>
#include <span>

#include "ir/eval_rules.h"

extern "C" {
/// Runs the reference kernel of one primitive on runtime buffers. Layout:
///   [prim, n_in, n_out, n_params, param values (in the order of library_call_params(prim), each
///    encoded as its KernelParam says: one integer, or an IntList's length then its elements)...,
///    then per array (inputs, then outputs): dtype, rank, dims..., address]
void fluxion_rt_call_prim(int64_t* args);
/// Batched row-major matmul out[b] = lhs[b] @ rhs[b] of floats (kernels/matmul.h). Layout:
///   [dtype (float32 or float64; or bfloat16/float16 operands: out dtype + (operand dtype << 8), the
///   output float32 or the operands' type),
///   batch, m, n, k, trans_lhs, trans_rhs, isa_level, threads, lhs, rhs, out], where lhs is
///   [batch, m, k] ([batch, k, m] if trans_lhs) and rhs [batch, k, n] ([batch, n, k] if trans_rhs);
///   isa_level is the x86-64 level the kernel was compiled for (for int8 operands plus 256 if its
///   target has AVX512-VNNI and 512 if AVX-VNNI) and threads its thread count. (The name changed with the layout: a kernel cached on disk by an
///   older build calls fluxion_rt_matmul, finds no such symbol and is compiled again.)
void fluxion_rt_gemm(int64_t* args);
/// The same product of int8 operands into int32 (kernels/gemm_int8.h): fluxion_rt_gemm's layout with
/// dtype int32 + (int8 << 8). An entry of its own so that an exported int8 program links no float GEMM
/// (and a float one no int8 GEMM): the AOT runtime's archive members are pulled in per entry.
void fluxion_rt_gemm_int8(int64_t* args);
}

namespace fluxion::runtime {
/// The params a primitive's library call passes, in order (encoded as ir/eval_rules.h's
/// KernelParam says): the kernel params its block registers. Empty for a primitive that has no library call.
std::span<const KernelParam> library_call_params(Prim prim);
/// An exception a library call raised inside compiled code (a debug callback, a bounds check)
/// cannot unwind through generated frames: the call keeps the first one on its thread and returns,
/// and Executable::run rethrows it once the kernel has returned.
void rethrow_library_call_error();
}  // namespace fluxion::runtime
