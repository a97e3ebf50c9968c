// im2col + int8 GEMM for int8 convolutions (kernels/conv_int8.h).
#include "kernels/conv_int8.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "prims/conv_geometry.h"
#include "kernels/conv.h"
#include "kernels/conv_columns.h"
#include "kernels/conv_forms.h"
#include "kernels/gemm_int8.h"
#include "kernels/openmp.h"
#include "kernels/scratch.h"

namespace fluxion::runtime {

namespace {

// What every image's product shares: the kernel as an [o, (c, k)] matrix, the window table and
// its runs, where the outputs go.
struct Int8ConvRun {
  const conv::ConvGeometry& g;
  const int8_t* x;
  int32_t* y;
  std::vector<int8_t> weights;  // [o, c * K + k]
  std::vector<int64_t> table, yoff;
  RowRuns runs;
  bool by_runs = false, direct = false;  // direct: each output feature's positions one contiguous row
  Int8Path path;

  // Image n: columns, the product, and the store (through `rows` unless direct).
  void image(int64_t n, int gemm_threads) const {
    const int64_t K = g.k_size(), P = g.out_size(), CK = g.ci * K;
    thread_local Scratch<int8_t> cols_buf;
    thread_local Scratch<int32_t> rows_buf;
    int8_t* cols = cols_buf.get(CK * P);
    for (int64_t c = 0; c < g.ci; ++c) {
      const int8_t* src = x + n * g.x_n + c * g.x_c;
      for (int64_t k = 0; k < K; ++k)
        fill_row(cols + (c * K + k) * P, src, table.data() + k * P, P, runs.runs.data() + runs.first[size_t(k)],
                 runs.runs.data() + runs.first[size_t(k) + 1], by_runs);
    }
    int32_t* rows = direct ? y + n * g.y_n : rows_buf.get(g.o * P);
    int8_gemm_with(path, Int8Gemm{g.o, P, CK, weights.data(), false, cols, rows}, gemm_threads);
    if (!direct)
      for (int64_t o = 0; o < g.o; ++o)
        for (int64_t p = 0; p < P; ++p) y[n * g.y_n + o * g.y_c + yoff[size_t(p)]] = rows[o * P + p];
  }
};

}  // namespace

bool int8_conv(std::span<const View> in, const View& out, const Params& params, int isa_level, bool target_avx512_vnni,
               bool target_avx_vnni, int threads) {
  if (in[0].dtype() != DType::int8 || in[1].dtype() != DType::int8 || out.dtype() != DType::int32) return false;
  const conv::ConvGeometry g = conv::conv_geometry(in[0].shape(), in[1].shape(), conv::conv_params(params));
  if (g.groups != 1 || g.batch_groups != 1 || out.size() == 0 || g.ci * g.k_size() == 0) return false;
  const int64_t K = g.k_size(), P = g.out_size(), CK = g.ci * K;
  Int8ConvRun r{g, in[0].as<int8_t>(), out.as<int32_t>(), std::vector<int8_t>(size_t(g.o * CK)), conv::window_offsets(g),
                conv::output_offsets(g), {}, false, false, int8_gemm_path(isa_level, target_avx512_vnni, target_avx_vnni)};
  const std::vector<int64_t> koff = conv::kernel_offsets(g);
  const int8_t* w = in[1].as<int8_t>();
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t c = 0; c < g.ci; ++c)
      for (int64_t k = 0; k < K; ++k) r.weights[size_t(o * CK + c * K + k)] = w[o * g.w_o + c * g.w_i + koff[size_t(k)]];
  r.runs = row_runs(r.table, K, P);
  r.by_runs = long_runs(r.runs, r.table);
  r.direct = g.y_c == P;
  for (int64_t p = 0; p < P && r.direct; ++p) r.direct = r.yoff[size_t(p)] == p;
  // Whole images to the threads when there are enough of them, else each image's rows.
  if (g.n >= threads) parallel_chunks(threads, g.n, [&](int64_t n) { r.image(n, 1); });
  else
    for (int64_t n = 0; n < g.n; ++n) r.image(n, threads);
  count_conv_run(ConvAlgorithm::im2col_int8);
  return true;
}

}  // namespace fluxion::runtime
