// The GEMM forms of a float convolution (kernels/conv_forms.cpp): im2col, im2col by feature and
// col2im over the window table of prims/conv_geometry.h, each a series of matrix products on the
// kernel's threads. kernels/conv.cpp's library call picks the operand types; the form is chosen
// per geometry here (conv.h's ConvAlgorithm says what each form is).
#pragma once
#include <cstdint>

#include "ir/dtype.h"
#include "prims/conv_geometry.h"
#include "kernels/conv.h"

namespace fluxion::runtime {

/// y = the convolution of x and w of geometry `g`, by the form its shape suits, on up to `threads`
/// threads with the products of x86-64 level `isa`. bfloat16 operands (their bits) accumulate in
/// float32 through the AVX512-BF16 GEMM: only call that overload where native_bf16_for(isa).
void run_conv_form(const float* x, const float* w, float* y, const conv::ConvGeometry& g, int isa, int threads);
void run_conv_form(const double* x, const double* w, double* y, const conv::ConvGeometry& g, int isa, int threads);
void run_conv_form(const uint16_t* x, const uint16_t* w, float* y, const conv::ConvGeometry& g, int isa, int threads);

/// The same with float32 accumulation and the results rounded once to `out_dtype` (bfloat16 or
/// float16) into `out`, as each block of them is stored.
void run_conv_form(const float* x, const float* w, DType out_dtype, void* out, const conv::ConvGeometry& g, int isa,
                   int threads);
void run_conv_form(const uint16_t* x, const uint16_t* w, DType out_dtype, void* out, const conv::ConvGeometry& g, int isa,
                   int threads);

}  // namespace fluxion::runtime
