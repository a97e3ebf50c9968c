// The jit's library call for the windowed primitives (conv_general_dilated and the reduce_window
// family, prims/conv.cpp and prims/reduce_window.cpp): lowering/lower_conv.cpp encodes the eqn's
// params and buffers into one int64 array, and an entry per family runs it -- a float32/float64
// convolution as im2col + the ISA-dispatched GEMM of kernels/matmul.h on the kernel's threads,
// bfloat16 on bfloat16 columns into the AVX512-BF16 GEMM where the target has it, float16 (and
// bfloat16 elsewhere) in float32 the same way, the reduce_window family and the max-pool derivatives
// through the strided loops of kernels/pool.h, everything else through the primitive's reference
// kernel.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/call_arrays.h"

#include "ir/params.h"
#include "ir/primitive.h"
#include "ir/shape.h"

extern "C" {
/// The windowed library calls, one entry per family so that an exported program links only the
/// kernels its equations reach (the AOT runtime's archive members are pulled in per entry). Every
/// entry takes one layout: [prim, n_in, n_out, isa_level (plus 256 if the target has AVX512-VNNI,
/// 512 if AVX-VNNI: the int8 convolution's GEMM path), threads, the params (encode_window_params),
/// then per array (inputs, then outputs): dtype, rank, dims..., address]. windowed_entry says which
/// an equation calls; each falls back to the reference kernel for what its kernel declines at run
/// time (a symbolic dim that turns out empty).
/// A float convolution (kernels/conv.cpp).
void fluxion_rt_conv(int64_t* args);
/// An int8 x int8 -> int32 convolution without groups (kernels/conv_int8.cpp).
void fluxion_rt_conv_int8(int64_t* args);
/// The reduce_window family and the max-pool derivatives on float32 (kernels/pool_f32.cpp) and on
/// any other dtype (kernels/pool.cpp).
void fluxion_rt_pool_f32(int64_t* args);
void fluxion_rt_pool(int64_t* args);
/// The reference kernel, for what none of the above takes (kernels/library_calls.cpp: libfluxion
/// only; the AOT runtime has no reference kernels, and fx::export_ refuses programs calling it).
void fluxion_rt_windowed(int64_t* args);
}

namespace fluxion::runtime {

/// Whether `p` travels through the windowed library calls.
bool is_windowed(Prim p);
/// The entry an equation of a windowed primitive calls: a kernel of this folder -- a float
/// convolution, an int8 x int8 -> int32 one without groups, the reduce_window family on numbers (the
/// selections on floats), nothing empty (a symbolic dim counts as non-empty) -- or else
/// "fluxion_rt_windowed", the reference kernel.
const char* windowed_entry(Prim p, std::span<const AbstractArray> in, std::span<const AbstractArray> out,
                           const Params& params);
/// Whether a kernel of this folder runs the equation. The AOT runtime carries only these kernels, so
/// fx::export_ refuses the others (docs/export.md).
inline bool windowed_has_kernel(Prim p, std::span<const AbstractArray> in, std::span<const AbstractArray> out,
                                const Params& params) {
  return std::string_view(windowed_entry(p, in, out, params)) != "fluxion_rt_windowed";
}

/// A windowed call's arguments read back: the target's facts, the params and the arrays (`in` and
/// `out` view `arrays`).
struct WindowedCall {
  Prim prim;
  int isa, threads;
  bool avx512_vnni, avx_vnni;
  Params params;
  CallArrays arrays;
  std::span<const View> in, out;
};
WindowedCall read_windowed_call(const int64_t* args);
/// The reference kernel on a call's arrays (windowed_reference), counted as a reference convolution
/// when it is one: what every entry does with what its kernel declines.
void run_windowed_reference(const WindowedCall& c);
/// The reference kernel of a windowed call none of this folder's kernels takes: eval_rules(p).kernel
/// in libfluxion (kernels/library_calls.cpp); in the AOT runtime (kernels/aot_runtime.cpp), which has
/// no reference kernels, a message and abort -- export_ refuses such programs before they get there.
void windowed_reference(Prim p, std::span<const View> in, std::span<const View> out, const Params& params);
/// Appends the params of an eqn of a windowed primitive, in the fixed order both sides know.
void encode_window_params(Prim p, const Params& params, std::vector<int64_t>& out);
/// Reads them back from `*cursor`, advancing it.
Params decode_window_params(Prim p, const int64_t*& cursor);

/// The algorithms a convolution can take: the reference kernel (integers, empty operands), im2col
/// (per block of images and feature group, one GEMM of the packed kernel with the images' window
/// columns side by side), im2col by feature (per block of input features, one GEMM of those
/// features' kernel slices with their columns over all images, summed: for windows larger than the
/// output, as the kernel gradient's are), or col2im (per block of images, one GEMM of the kernel
/// with the input, its products then summed into the outputs the window table pairs them with: for
/// inputs dilated so that most window elements are holes, as a strided convolution's input
/// gradient's are), or for int8 operands with an int32 result im2col into the int8 GEMM
/// (kernels/conv_int8.h).
enum class ConvAlgorithm { reference, im2col, im2col_by_feature, col2im, im2col_int8 };
/// How many convolutions took `a` in this process (tests check which path compiled code took).
uint64_t conv_runs(ConvAlgorithm a);
/// Counts a convolution that took `a`.
void count_conv_run(ConvAlgorithm a);
/// How many bfloat16 im2col products packed their right operand straight from the input
/// (kernels/gemm_tiles.h, WindowRuns) instead of from gathered columns.
uint64_t conv_products_from_input();
/// How many by-feature products (the kernel gradient's form) packed both operands straight from the
/// convolution's arrays (kernels/gemm_tiles.h, FeatureWindows) instead of gathered columns and a
/// copied kernel.
uint64_t conv_features_from_input();
/// How many im2col convolutions ran their product by kernel offset, skipping the padding
/// (kernels/gemm_taps.h, TapColumns), the input gradients of strided convolutions among them.
uint64_t conv_im2col_by_tap();
/// How many convolutions with 16-bit results rounded them as each block was stored (all of them
/// since the rounding pass over the whole float32 output went; tests check the path ran).
uint64_t conv_rounded_as_stored();

}  // namespace fluxion::runtime
