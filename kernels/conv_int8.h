// The int8 convolution of quantized inference (conv_general_dilated of int8 operands with
// preferred_element_type int32) as im2col + the int8 GEMM of kernels/gemm_int8.h: what
// fluxion_rt_conv_int8 (kernels/conv.h) runs for it instead of the reference kernel.
#pragma once
#include <span>

#include "ir/eval_rules.h"

namespace fluxion::runtime {

/// Computes the convolution into `out` and returns true when it is one this path takes: int8
/// operands, an int32 result, no feature or batch groups, nothing empty; else returns false
/// (the caller runs the reference kernel). Any layout (the specs) is read in place. Per block of
/// images (about 1024 output positions), the window columns [(input feature, kernel offset),
/// (image, output position)] are gathered as bytes (zeros at padding) and multiplied by the kernel
/// as an [output feature, (input feature, offset)] int8 matrix: int32 out[o, p], exact (the sums
/// wrap only past int32, as the reference's do). The GEMM path follows `isa_level` and the target's
/// VNNI (int8_gemm_path); blocks go to the threads, or a single block's rows.
bool int8_conv(std::span<const View> in, const View& out, const Params& params, int isa_level, bool target_avx512_vnni,
               bool target_avx_vnni, int threads);

}  // namespace fluxion::runtime
