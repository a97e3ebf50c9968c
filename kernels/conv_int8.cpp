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
  bool by_runs = false, direct = false;  // direct: each output feature's positions one contiguous run
  Int8Path path;

  // Images [n0, n0 + nb) side by side: columns [(c, k), (image, position)], one product (the
  // kernel packed once for them all), then each image's rows stored (copied where `direct`).
  void block(int64_t n0, int64_t nb, int gemm_threads) const {
    const int64_t K = g.k_size(), P = g.out_size(), CK = g.ci * K, ld = nb * P;
    thread_local Scratch<int8_t> cols_buf;
    thread_local Scratch<int32_t> rows_buf;
    int8_t* cols = cols_buf.get(CK * ld);
    int32_t* rows = rows_buf.get(g.o * ld);
    for (int64_t j = 0; j < nb; ++j)
      for (int64_t c = 0; c < g.ci; ++c) {
        const int8_t* src = x + (n0 + j) * g.x_n + c * g.x_c;
        for (int64_t k = 0; k < K; ++k)
          fill_row(cols + (c * K + k) * ld + j * P, src, table.data() + k * P, P,
                   runs.runs.data() + runs.first[size_t(k)], runs.runs.data() + runs.first[size_t(k) + 1], by_runs);
      }
    int8_gemm_with(path, Int8Gemm{g.o, ld, CK, weights.data(), false, cols, rows}, gemm_threads);
    for (int64_t j = 0; j < nb; ++j)
      for (int64_t o = 0; o < g.o; ++o) {
        const int32_t* from = rows + o * ld + j * P;
        int32_t* to = y + (n0 + j) * g.y_n + o * g.y_c;
        if (direct) std::copy(from, from + P, to);
        else
          for (int64_t p = 0; p < P; ++p) to[yoff[size_t(p)]] = from[p];
      }
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
  r.direct = true;
  for (int64_t p = 0; p < P && r.direct; ++p) r.direct = r.yoff[size_t(p)] == p;
  // Blocks of images of about kColumns columns (the kernel's packing shared by them: one image of
  // 14x14 per product packed the kernel as often as it multiplied it), to the threads when there
  // are enough blocks, else each block's rows.
  constexpr int64_t kColumns = 1024;
  const int64_t nb = std::clamp<int64_t>(kColumns / P, 1, g.n), blocks = (g.n + nb - 1) / nb;
  auto run = [&](int64_t b, int gemm_threads) { r.block(b * nb, std::min(nb, g.n - b * nb), gemm_threads); };
  if (blocks >= threads) parallel_chunks(threads, blocks, [&](int64_t b) { run(b, 1); });
  else
    for (int64_t b = 0; b < blocks; ++b) run(b, threads);
  count_conv_run(ConvAlgorithm::im2col_int8);
  return true;
}

}  // namespace fluxion::runtime

using namespace fluxion;

extern "C" void fluxion_rt_conv_int8(int64_t* a) {
  const runtime::WindowedCall c = runtime::read_windowed_call(a);
  if (!runtime::int8_conv(c.in, c.out[0], c.params, c.isa, c.avx512_vnni, c.avx_vnni, c.threads))
    runtime::run_windowed_reference(c);
}
