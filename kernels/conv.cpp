// fluxion_rt_conv (kernels/conv.h): the operand types of a float convolution -- float32 and
// float64 as they are, bfloat16 on bfloat16 columns for the AVX512-BF16 GEMM, other 16-bit floats
// widened to float32 and rounded once at the end -- handed to the GEMM forms of
// kernels/conv_forms.h. (int8 x int8 -> int32: kernels/conv_int8.cpp; the reduce_window family:
// kernels/pool.cpp; everything else: the reference kernel, kernels/library_calls.cpp.)
#include "kernels/conv.h"

#include <span>
#include <type_traits>

#include "ir/eval_rules.h"  // View
#include "prims/conv_geometry.h"
#include "kernels/call_arrays.h"
#include "kernels/conv_forms.h"
#include "kernels/matmul.h"
#include "kernels/scratch.h"

namespace fluxion::runtime {

namespace {

// to[i] = the elements of a float view as C, for the 16-bit floats and mixed precision.
template <class C>
void widen_into(const View& v, C* to) {
  dispatch_dtype(v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<compute_t<T>>)
      for (int64_t i = 0; i < v.size(); ++i) to[i] = C(compute_t<T>(v.as<T>()[i]));
  });
}

// Stores computed values into a float view of another dtype (rounding once).
template <class C>
void narrow_into(const C* from, const View& v) {
  dispatch_dtype(v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<compute_t<T>>)
      for (int64_t i = 0; i < v.size(); ++i) v.as<T>()[i] = T(compute_t<T>(from[i]));
  });
}

// Whether a convolution of these dtypes runs on bfloat16 columns: both operands bfloat16, a 16-bit
// or float32 result, and the AVX512-BF16 GEMM allowed for the kernel's target (native_bf16_for).
bool bf16_columns(DType x, DType w, DType out, int isa) {
  return x == DType::bfloat16 && w == DType::bfloat16 && out != DType::float64 && native_bf16_for(isa);
}

// Runs a float convolution with a GEMM form, or returns false (integers, empty operands). Where
// bf16_columns, the columns and the kernel stay bfloat16 -- gathered and packed at half the bytes --
// for the AVX512-BF16 GEMM, whose float32 sums are rounded once as they are stored. Other float16
// and bfloat16 operands (and a preferred_element_type output) are computed in float32 -- as the
// reference kernel accumulates them -- through widened copies, rounded once the same way.
bool fast_conv(std::span<const View> in, const View& out, const Params& params, int isa, int threads) {
  const DType d = in[0].dtype(), od = out.dtype();
  if (!is_float(d) || !is_float(od)) return false;
  const conv::ConvGeometry g = conv::conv_geometry(in[0].shape(), in[1].shape(), conv::conv_params(params));
  if (out.size() == 0 || g.ci * g.k_size() == 0) return false;
  if (bf16_columns(d, in[1].dtype(), od, isa)) {
    const uint16_t* x = static_cast<const uint16_t*>(in[0].data);
    const uint16_t* w = static_cast<const uint16_t*>(in[1].data);
    if (od == DType::float32) run_conv_form(x, w, out.as<float>(), g, isa, threads);
    else run_conv_form(x, w, od, out.data, g, isa, threads);
    return true;
  }
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const DType t = dtype_of_v<T>;
    thread_local Scratch<T> x_buf, w_buf, y_buf;  // the copies in T: megabytes, kept by the calling thread
    const T* xs = d == t ? in[0].as<T>() : x_buf.get(in[0].size());
    const T* ws = d == t ? in[1].as<T>() : w_buf.get(in[1].size());
    if (d != t) {
      if constexpr (std::is_same_v<T, float>) {  // 16-bit operands: the parallel widening of kernels/matmul.h
        widen_to_f32(d, in[0].data, x_buf.data.get(), in[0].size(), isa, threads);
        widen_to_f32(d, in[1].data, w_buf.data.get(), in[1].size(), isa, threads);
      } else {
        widen_into(in[0], x_buf.data.get()), widen_into(in[1], w_buf.data.get());
      }
    }
    if constexpr (std::is_same_v<T, float>) {
      if (od != t) return run_conv_form(xs, ws, od, out.data, g, isa, threads);  // 16-bit results, rounded as stored
    }
    T* ys = od == t ? out.as<T>() : y_buf.get(out.size());
    run_conv_form(xs, ws, ys, g, isa, threads);
    if (od != t) narrow_into(ys, out);
  };
  if (d == DType::float64 || od == DType::float64) run(double{});
  else run(float{});
  return true;
}

}  // namespace
}  // namespace fluxion::runtime

using namespace fluxion;

extern "C" void fluxion_rt_conv(int64_t* a) {
  const runtime::WindowedCall c = runtime::read_windowed_call(a);
  if (!runtime::fast_conv(c.in, c.out[0], c.params, c.isa, c.threads)) runtime::run_windowed_reference(c);
}
