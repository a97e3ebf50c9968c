// The windowed library calls' shared part (kernels/conv.h): which entry an equation calls, reading a
// call's arguments back, and the count of convolutions per algorithm. Every entry links it, so it
// holds nothing of any one kernel.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <span>

#include "kernels/conv.h"
#include "kernels/conv_forms.h"

namespace fluxion::runtime {

namespace {

std::atomic<uint64_t> g_runs[5];  // per ConvAlgorithm

// A dim of 0 (a symbolic dim is not known to be empty).
bool known_empty(const AbstractArray& a) {
  for (int64_t d : a.shape)
    if (d == 0) return true;
  return false;
}
// More elements than the pooling kernels' int32 offsets reach (only when every dim is known).
bool beyond_int32(const AbstractArray& a) {
  int64_t n = 1;
  for (int64_t d : a.shape) {
    if (d < 0) return false;  // symbolic
    n = std::min<int64_t>(n * d, int64_t(1) << 40);
  }
  return n > std::numeric_limits<int32_t>::max();
}

constexpr const char* kReference = "fluxion_rt_windowed";

}  // namespace

const char* windowed_entry(Prim p, std::span<const AbstractArray> in, std::span<const AbstractArray> out,
                           const Params& params) {
  for (const AbstractArray& a : in)
    if (known_empty(a)) return kReference;
  if (!is_windowed(p) || out.empty() || known_empty(out[0])) return kReference;
  if (p == Prim::conv_general_dilated) {  // kernels/conv.cpp's fast_conv, kernels/conv_int8.cpp
    const DType x = in[0].dtype, w = in[1].dtype, y = out[0].dtype;
    if (is_float(x) && is_float(y)) return "fluxion_rt_conv";
    const bool int8 = x == DType::int8 && w == DType::int8 && y == DType::int32 &&
                      params.get_int("feature_group_count") == 1 && params.get_int("batch_group_count") == 1;
    return int8 ? "fluxion_rt_conv_int8" : kReference;
  }
  const AbstractArray& x = in.back();  // kernels/pool.h's loops
  if (x.shape.rank() == 0 || beyond_int32(x) || is_bool(x.dtype) || is_complex(x.dtype)) return kReference;
  if ((p == Prim::select_and_gather_add || p == Prim::select_and_scatter_add) && !is_float(x.dtype)) return kReference;
  return x.dtype == DType::float32 ? "fluxion_rt_pool_f32" : "fluxion_rt_pool";
}

bool is_windowed(Prim p) {
  return p == Prim::conv_general_dilated || p == Prim::reduce_window_sum || p == Prim::reduce_window_max ||
         p == Prim::reduce_window_min || p == Prim::select_and_gather_add || p == Prim::select_and_scatter_add;
}

WindowedCall read_windowed_call(const int64_t* a) {
  WindowedCall c{Prim(a[0]), int(a[3] & 0xff), int(a[4]), (a[3] & 256) != 0, (a[3] & 512) != 0, {}, {}, {}, {}};
  const int64_t n_in = a[1], n_out = a[2];
  const int64_t* p = a + 5;
  c.params = decode_window_params(c.prim, p);
  c.arrays = read_call_arrays(p, n_in + n_out);
  const std::vector<View>& views = c.arrays.views;
  c.in = std::span<const View>(views.data(), size_t(n_in));
  c.out = std::span<const View>(views.data() + n_in, size_t(n_out));
  return c;
}

void run_windowed_reference(const WindowedCall& c) {
  if (c.prim == Prim::conv_general_dilated) count_conv_run(ConvAlgorithm::reference);
  windowed_reference(c.prim, c.in, c.out, c.params);
}

uint64_t conv_runs(ConvAlgorithm a) { return g_runs[int(a)].load(std::memory_order_relaxed); }
void count_conv_run(ConvAlgorithm a) { g_runs[int(a)].fetch_add(1, std::memory_order_relaxed); }

}  // namespace fluxion::runtime
