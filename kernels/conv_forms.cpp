// The GEMM forms of a float convolution (kernels/conv_forms.h).
//
// A convolution is a sum over (input feature, kernel offset) of a kernel weight times an input
// element that the window table (prims/conv_geometry.h) locates for each output position. Gathering
// those input elements into columns turns it into matrix products, which kernels/matmul.h computes
// with the Eigen build of the kernel's ISA level (bfloat16 operands: the AVX512-BF16 kernel of
// kernels/gemm_tiles.h on columns gathered in bfloat16, where the target has it). Where an im2col
// product's panels are runs of the input, the AVX-512 tiles of kernels/gemm_tiles.h (bfloat16, and
// float32 on x86-64-v4) pack them straight from it, with no columns in between:
//   im2col             per (block of images b, feature group):
//                        out[O_g, (b, P)] = W_g[O_g, I K] x cols[I K, (b, P)]
//   im2col_by_feature  per block of input features c: out[(B, P), O] += cols_c[(B, P), (c, K)] x W_c[O, (c, K)]^T
//   col2im             per block of images b: t[(O, K), (b, S)] = W[(O, K), I] x x[I, (b, S)], then
//                        out[o, p] = the sum over k of t[(o, k), the input position s(k, p)]
// The first is the forward convolution's natural form (K = kernel offsets is small, P = output
// positions large; at small P the images of a block share one product). The second suits the
// kernel gradient, whose "window" is the whole image and whose output is the small kernel: its
// product has a long inner dimension, where the first form would multiply by a matrix only P = 9
// columns wide. The third suits the input gradient of a strided convolution, whose input is the
// cotangent dilated by the strides: im2col's columns would be mostly the dilation's zeros, while
// the products of col2im are with the S undilated input positions only. Where 1/16 of im2col's
// (kernel offset, position) pairs are padding (16x16 outputs and smaller, 3x3 windows) or its
// columns would be gathered (strided windows, and the dilated cotangents that col2im would take),
// its product runs as an implicit GEMM over the kernel offsets instead and skips them
// (im2col_by_tap, kernels/gemm_taps.h); where the by-feature columns are runs of the input, its
// product packs both operands straight from the arrays (features_from_input).
// docs/nn.md and docs/resnet_step.md have the measurements.
#include "kernels/conv_forms.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "ir/settings.h"
#include "kernels/conv_columns.h"
#include "kernels/gemm_taps.h"
#include "kernels/gemm_tiles.h"
#include "kernels/matmul.h"
#include "kernels/openmp.h"
#include "kernels/scratch.h"

namespace fluxion::runtime {

namespace {

std::atomic<uint64_t> g_from_input;
std::atomic<uint64_t> g_features_from_input;
std::atomic<uint64_t> g_by_tap;
std::atomic<uint64_t> g_rounded_as_stored;

// How the GEMM forms cut their work: a product should have about kWideColumns columns (or inner
// dimension, by feature) -- at the deep stages' 8x8 and 4x4 outputs one image gives only 64 or 16,
// and Eigen packs the whole kernel again for every product -- within kColumnBudget elements of
// columns per thread.
constexpr int64_t kWideColumns = 512;
constexpr int64_t kColumnBudget = int64_t(1) << 21;

// Images per GEMM when each brings `cols` columns of `rows` rows, leaving every thread a block and
// evening the blocks out, their count a multiple of the threads': at 4x4 outputs and 512 features,
// 128 images made 5 blocks of 26, one thread computing 3 and the other 2 while it waited (a
// per-parallel-region profile of the ResNet-18 step, docs/resnet_step.md); now 6 of 22 (the last 18).
int64_t images_per_block(int64_t images, int64_t cols, int64_t rows, int threads) {
  int64_t nb = std::min(kWideColumns / std::max<int64_t>(1, cols), kColumnBudget / std::max<int64_t>(1, rows * cols));
  nb = std::clamp<int64_t>(nb, 1, std::max<int64_t>(1, (images + threads - 1) / std::max(threads, 1)));
  int64_t blocks = (images + nb - 1) / nb;
  if (threads > 1 && blocks > threads) blocks = (blocks + threads - 1) / threads * threads;
  return (images + blocks - 1) / blocks;
}

// Whether an im2col product over operands of T whose panels are runs packs them straight from the
// input for the AVX-512 tiles of kernels/gemm_tiles.h: always for bfloat16 (only run where the
// AVX512-BF16 GEMM is allowed), for float32 where the kernel's level and the host are x86-64-v4
// (elsewhere Eigen's product of the level, on gathered columns) -- unless, for measurement
// (docs/nn.md), FLUXION_CONV_F32=eigen.
template <class T>
bool window_tiles(int isa) {
  static const bool f32_eigen = choice_setting("FLUXION_CONV_F32") == "eigen";
  if constexpr (std::is_same_v<T, uint16_t>) return true;
  else return std::is_same_v<T, float> && isa >= 4 && host_isa_level() >= 4 && !f32_eigen;
}

template <class T, class Acc = T>
struct ConvRun {
  const T* x;
  const T* w;
  Acc* y;
  const conv::ConvGeometry& g;
  std::vector<int64_t> table, koff, yoff;
  int isa, threads;
  RowRuns runs = row_runs(table, g.k_size(), g.out_size());
  bool by_runs = long_runs(runs, table);
  // Where set (float32 results of 16-bit convolutions), the results are rounded once to
  // `narrow_dtype` (bfloat16 or float16) into `narrow`, laid out as y, as they are stored -- from
  // the products' blocks while those are in cache -- instead of written to y in float32 and rounded
  // by a pass of their own over the whole output.
  void* narrow = nullptr;
  DType narrow_dtype = DType::float32;

  int64_t groups() const { return std::max(g.groups, g.batch_groups); }
  int64_t o_per() const { return g.o / groups(); }

  void gemm(const T* a, const T* b, Acc* c, int64_t m, int64_t n, int64_t k, bool trans_rhs = false) const {
    Matmul mm;
    mm.is_double = std::is_same_v<T, double>;
    mm.operands = std::is_same_v<T, uint16_t> ? DType::bfloat16 : DType::float32;
    mm.m = m, mm.n = n, mm.k = k;
    mm.trans_rhs = trans_rhs;
    mm.lhs = a, mm.rhs = b, mm.out = c;
    matmul(mm, isa, 1);
  }

  // The kernel packed as [O, (i, k)] rows (im2col) or, `by_offset`, as [(O, k), i] rows (col2im),
  // on the threads into scratch of the calling thread (up to 9 MB at 512 -> 512 features: a fresh
  // vector faulted its pages in on every call).
  const T* packed_kernel(bool by_offset) const {
    const int64_t K = g.k_size(), per_block = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ci * K));
    thread_local Scratch<T> buf;
    T* packed = buf.get(g.o * g.ci * K);
    parallel_chunks(threads, (g.o + per_block - 1) / per_block, [&](int64_t block) {
      for (int64_t o = block * per_block; o < std::min(g.o, (block + 1) * per_block); ++o)
        for (int64_t i = 0; i < g.ci; ++i)
          for (int64_t k = 0; k < K; ++k)
            packed[by_offset ? (o * K + k) * g.ci + i : (o * g.ci + i) * K + k] =
                w[o * g.w_o + i * g.w_i + koff[size_t(k)]];
    });
    return packed;
  }

  // Calls body(first output image n0, images nn, input image of n0, first input feature, first
  // output feature) for every block of `nb` output images and feature group, on the threads.
  template <class F>
  void for_blocks(int64_t nb, F body) const {
    const int64_t grps = groups(), blocks = (g.out_n + nb - 1) / nb, per_batch_group = g.o / g.batch_groups;
    parallel_chunks(threads, blocks * grps, [&](int64_t task) {
      const int64_t n0 = task / grps * nb, grp = task % grps, o0 = grp * o_per();
      body(n0, std::min(nb, g.out_n - n0), (o0 / per_batch_group) * g.out_n + n0, g.groups > 1 ? grp * g.ci : 0, o0);
    });
  }

  // Whether each output feature's positions are one contiguous row (NC... layouts).
  bool direct_output() const {
    bool direct = g.y_c == g.out_size();
    for (int64_t p = 0; p < g.out_size() && direct; ++p) direct = yoff[size_t(p)] == p;
    return direct;
  }

  // Stores the P results `src` of output feature o of image n (at the positions yoff, or contiguous
  // where `direct`), rounded where `narrow`.
  void store_row(const Acc* src, int64_t n, int64_t o, bool direct) const {
    const int64_t P = g.out_size(), at = n * g.y_n + o * g.y_c;
    if constexpr (std::is_same_v<Acc, float>) {
      if (narrow) {
        uint16_t* dst = static_cast<uint16_t*>(narrow) + at;
        thread_local Scratch<uint16_t> row;
        uint16_t* rounded = direct ? dst : row.get(P);
        narrow_from_f32(src, narrow_dtype, rounded, P, isa, 1);
        if (!direct)
          for (int64_t p = 0; p < P; ++p) dst[yoff[size_t(p)]] = rounded[p];
        return;
      }
    }
    Acc* dst = y + at;
    if (direct) std::copy(src, src + P, dst);
    else
      for (int64_t p = 0; p < P; ++p) dst[yoff[size_t(p)]] = src[p];
  }

  // Stores a product's [O_g, (image j, position p)] block `out` (rows of length ld) into the output
  // features [o0, o0 + O_g) of images [n0, n0 + nn).
  void store(const Acc* out, int64_t ld, int64_t n0, int64_t nn, int64_t o0, bool direct) const {
    for (int64_t j = 0; j < nn; ++j)
      for (int64_t o = 0; o < o_per(); ++o) store_row(out + o * ld + j * g.out_size(), n0 + j, o0 + o, direct);
  }

  // cols[r * ld + p] for rows r = (i, k) of the input features [c0, c0 + ci) of image n_in.
  void gather_columns(T* cols, int64_t ld, int64_t n_in, int64_t c0) const {
    const int64_t K = g.k_size(), P = g.out_size();
    for (int64_t i = 0; i < g.ci; ++i) {
      const T* src = x + n_in * g.x_n + (c0 + i) * g.x_c;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t* t = table.data() + k * P;
        const Run* r = runs.runs.data();
        fill_row(cols + (i * K + k) * ld, src, t, P, r + runs.first[size_t(k)], r + runs.first[size_t(k) + 1], by_runs);
      }
    }
  }

  // Per (k, half-panel of kWindowRun positions), WindowRuns' run offset and mask, where each reads
  // one run of the input (stride 1 along the input's contiguous dim, output rows of 16 or a
  // multiple: NCHW at ResNet-18's 32x32 and 16x16 stages) and the product runs on the AVX-512 tiles
  // (window_tiles); else empty (columns gathered).
  struct PanelRuns {
    std::vector<int64_t> base;
    std::vector<uint16_t> mask;
  };
  PanelRuns panel_runs() const {
    if (!window_tiles<T>(isa) || g.out_size() % kTileCols != 0) return {};
    return runs_of(table.data(), g.k_size(), g.out_size());
  }
  // The runs of kWindowRun entries of `rows` rows of `len` entries of a table t (len a multiple of
  // kWindowRun) where each reads one run of consecutive input elements, else empty.
  static PanelRuns runs_of(const int64_t* t, int64_t rows, int64_t len) {
    PanelRuns r;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t p0 = 0; p0 < len; p0 += kWindowRun) {
        int64_t base = 0;
        uint16_t mask = 0;
        for (int64_t l = 0; l < kWindowRun; ++l) {
          const int64_t e = t[i * len + p0 + l];
          if (e < 0) continue;
          if (mask == 0) base = e - l;
          else if (e != base + l) return {};
          mask = uint16_t(mask | 1u << l);
        }
        r.base.push_back(base), r.mask.push_back(mask);
      }
    return r;
  }

  // The by-feature form's runs (FeatureWindows) where its product packs both operands straight from
  // x and w on the AVX-512 tiles: window rows of runs of kWindowRun up to padding (NCHW at stride 1:
  // the kernel gradients at ResNet-18's 32x32, 16x16 and 8x8 stages -- at 8x8 a run spans two
  // image rows, the padding between them where the next row's first element would be), windows of
  // a multiple of 2 kWindowRun positions and contiguous in w; else empty (columns gathered, kernel
  // copied).
  PanelRuns feature_runs(const std::vector<int64_t>& by_position) const {
    const int64_t K = g.k_size();
    if (!window_tiles<T>(isa) || K % (2 * kWindowRun) != 0) return {};
    for (int64_t k = 0; k < K; ++k)
      if (koff[size_t(k)] != k) return {};
    return runs_of(by_position.data(), g.out_size(), K);
  }

  // One part's by-feature product of features [lo, hi) into `sum` ([(b, p), o]) from x and w.
  void features_from_input(const PanelRuns& fr, int64_t lo, int64_t hi, Acc* sum) const {
    if constexpr (std::is_same_v<Acc, float> && !std::is_same_v<T, double>) {
      const FeatureWindows f{x + lo * g.x_c, g.x_n, g.x_c, g.out_size(), g.k_size(), fr.base.data(), fr.mask.data(),
                             w + lo * g.w_i, g.w_o, g.w_i, hi - lo};
      const TilePacks packs = tile_pack_scratch();
      const int64_t rows = g.out_n * g.out_size();
      if constexpr (std::is_same_v<T, float>) gemm_f32_feature_block(rows, g.o, f, sum, g.o, packs.a, packs.b);
      else gemm_bf16_feature_block(rows, g.o, f, sum, g.o, packs.a, packs.b);
      g_features_from_input.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Per block of images and feature group: out[O_g, (b, P)] = W_g[O_g, I K] x cols[I K, (b, P)],
  // the block's columns side by side (one image when its P alone makes a wide product), or packed
  // by the product straight from the input (panel runs).
  void im2col() const {
    const int64_t K = g.k_size(), P = g.out_size(), rows = g.ci * K;
    const T* packed = packed_kernel(false);
    const bool direct = direct_output();
    const PanelRuns pr = panel_runs();
    for_blocks(images_per_block(g.out_n, P, rows, threads), [&](int64_t n0, int64_t nn, int64_t n_in, int64_t c0, int64_t o0) {
      thread_local Scratch<T> cols_buf;
      thread_local Scratch<Acc> out_buf;
      const int64_t ld = nn * P;
      const T* wg = packed + o0 * rows;
      const bool in_place = nn == 1 && direct && !narrow;
      Acc* out = in_place ? y + n0 * g.y_n + o0 * g.y_c : out_buf.get(o_per() * ld);
      if (!pr.base.empty()) {
        const MatmulBlock b{o_per(), ld, rows, wg, rows, false, nullptr, 0, false, out, ld};
        const WindowRuns cols{x + n_in * g.x_n + c0 * g.x_c, g.x_n, g.x_c, K, P, pr.base.data(), pr.mask.data()};
        const TilePacks packs = tile_pack_scratch();
        if constexpr (std::is_same_v<T, float>) gemm_f32_window_block(b, cols, packs.a, packs.b);
        else gemm_bf16_window_block(b, cols, packs.a, packs.b);
        g_from_input.fetch_add(1, std::memory_order_relaxed);
      } else {
        T* cols = cols_buf.get(rows * ld);
        for (int64_t j = 0; j < nn; ++j) gather_columns(cols + j * P, ld, n_in + j, c0);
        gemm(wg, cols, out, o_per(), ld, rows);
      }
      if (!in_place) store(out, ld, n0, nn, o0, direct);
    });
  }

  // Panel i of the tap product's kernel (TapColumns) straight from w: per step q of tap k = q /
  // steps, the word of kTileRows output features' values at input features per (q % steps) and on
  // -- in the order the tiles read it, so that the stores are sequential and only the loads gather.
  // Packing [O, (k, i)] rows first (packed_kernel) and then the panels was 3-4% slower at 4x4 and
  // 512 features (docs/resnet_step.md).
  void pack_tap_panel(int64_t i, int64_t steps, uint32_t* dst) const {
    constexpr int64_t per = std::is_same_v<T, uint16_t> ? 2 : 1;
    for (int64_t q = 0; q < g.k_size() * steps; ++q) {
      const int64_t at = (q % steps) * per * g.w_i + koff[size_t(q / steps)];
      for (int64_t r = 0; r < kTileRows; ++r, ++dst) {
        const int64_t o = i * kTileRows + r;
        T v[per] = {};
        if (o < g.o)
          for (int64_t e = 0; e < per; ++e) v[e] = w[o * g.w_o + at + e * g.w_i];
        std::memcpy(dst, v, 4);
      }
    }
  }

  // Whether im2col's product runs by tap (gemm_*_tap_block), skipping the products with padding:
  // where the target has the tiles, without groups, a batch of whole panels (images a multiple of
  // kTileCols), input features whole words of the packed operands, a window of more than one
  // offset, and either at least 1/16 of the (offset, position) pairs padding (ResNet-18's 16x16, 8x8
  // and 4x4 stages: 8%, 16%, 31%) or columns that would be gathered (strided windows: its 3x3
  // stride-2 convolutions, 1.2-1.6x in bfloat16). At 32x32 (4%) the product packed from the input's
  // runs measured faster, and so did the 1x1 strided ones' gathered columns (docs/resnet_step.md).
  bool by_tap() const {
    const int64_t per = std::is_same_v<T, uint16_t> ? 2 : 1;
    if (!window_tiles<T>(isa) || groups() != 1 || g.out_n % kTileCols != 0 || g.ci % per != 0 || g.k_size() < 2)
      return false;
    return std::count(table.begin(), table.end(), int64_t(-1)) * 16 >= int64_t(table.size()) || panel_runs().base.empty();
  }

  // im2col by tap: per block of kTileCols images, out[O, (p, b)] = the sum over kernel offsets k of
  // W_k[O, I] x x_k[I, (p, b)], x_k's column (p, b) being input position s(k, p) of image b -- with
  // the images innermost, a panel of kTileCols columns is one position p, all padding or none, so
  // the product skips the padding's panels (at 4x4 outputs and 3x3 windows, 44 of 144 (k, p)) --
  // from the block's input transposed to the packed layout [s, I / per, b, per] (TapColumns).
  void im2col_by_tap() const {
    const int64_t K = g.k_size(), P = g.out_size(), S = g.in_sp.numel(), nb = kTileCols;
    const int64_t per = std::is_same_v<T, uint16_t> ? 2 : 1, steps = g.ci / per;
    const int64_t panels = (g.o + kTileRows - 1) / kTileRows, row_steps = K * steps;
    thread_local Scratch<uint32_t> w_buf;
    uint32_t* w_tiles = w_buf.get(panels * kTileRows * row_steps);
    parallel_chunks(threads, panels, [&](int64_t i) { pack_tap_panel(i, steps, w_tiles + i * kTileRows * row_steps); });
    const bool direct = direct_output();
    conv::ConvGeometry rowmajor = g;        // the table with the input's positions numbered 0..S-1
    rowmajor.x_sp = strides_of(g.in_sp);
    const std::vector<int64_t> source = conv::window_offsets(rowmajor), xoff = conv::input_offsets(g);
    bool x_rows = true;  // each input feature's positions one contiguous run (NC...)
    for (int64_t s = 0; s < S && x_rows; ++s) x_rows = xoff[size_t(s)] == s;
    parallel_chunks(threads, g.out_n / nb, [&](int64_t block) {
      thread_local Scratch<T> xt_buf;
      thread_local Scratch<Acc> out_buf;
      const int64_t n0 = block * nb, ld = P * nb;
      T* xt = xt_buf.get(g.ci * S * nb);
      Acc* out = out_buf.get(g.o * ld);
      if constexpr (std::is_same_v<Acc, float> && !std::is_same_v<T, double>) {
        const T* xb = x + n0 * g.x_n;
        if constexpr (std::is_same_v<T, float>) {
          if (x_rows) tap_transpose_f32(xb, g.x_n, g.x_c, g.ci, S, xt);
        } else if (x_rows) {
          tap_transpose_bf16(xb, g.x_n, g.x_c, g.ci, S, xt);
        }
        if (!x_rows)  // channels last and other layouts, element by element
          for (int64_t s = 0; s < S; ++s)
            for (int64_t i = 0; i < g.ci; ++i)
              for (int64_t b = 0; b < nb; ++b)
                xt[((s * steps + i / per) * nb + b) * per + i % per] = xb[b * g.x_n + i * g.x_c + xoff[size_t(s)]];
        const TapColumns t{w_tiles, xt, source.data(), K, P, g.ci};
        if constexpr (std::is_same_v<T, float>) gemm_f32_tap_block(g.o, t, out, ld);
        else gemm_bf16_tap_block(g.o, t, out, ld);
        if (direct && !narrow) return tap_store_f32(out, g.o, P, y + n0 * g.y_n, g.y_n, g.y_c);
        if (direct && narrow_dtype == DType::bfloat16)
          return tap_store_bf16(out, g.o, P, static_cast<uint16_t*>(narrow) + n0 * g.y_n, g.y_n, g.y_c);
      }
      store_by_position(out, n0, nb);
    });
    g_by_tap.fetch_add(1, std::memory_order_relaxed);
  }

  // Stores a tap product's [O, (p, b)] block (the nb images innermost) into images [n0, n0 + nb):
  // per output feature, its P x nb results rounded in one call where `narrow`, then scattered image
  // by image. Gathering each (image, feature)'s P results and storing them as a row (store_row)
  // cost a conversion call per 16 values at 4x4 -- 65536 calls per convolution at batch 128 and 512
  // features (docs/resnet_step.md).
  void store_by_position(const Acc* out, int64_t n0, int64_t nb) const {
    const int64_t ld = g.out_size() * nb;
    for (int64_t o = 0; o < g.o; ++o) {
      if constexpr (std::is_same_v<Acc, float>) {
        if (narrow) {
          thread_local Scratch<uint16_t> rounded_buf;
          uint16_t* rounded = rounded_buf.get(ld);
          narrow_from_f32(out + o * ld, narrow_dtype, rounded, ld, isa, 1);
          scatter_by_position(rounded, static_cast<uint16_t*>(narrow), n0, nb, o);
          continue;
        }
      }
      scatter_by_position(out + o * ld, y, n0, nb, o);
    }
  }
  template <class V>
  void scatter_by_position(const V* src, V* dst, int64_t n0, int64_t nb, int64_t o) const {
    const int64_t P = g.out_size();
    for (int64_t b = 0; b < nb; ++b) {
      V* d = dst + (n0 + b) * g.y_n + o * g.y_c;
      for (int64_t p = 0; p < P; ++p) d[yoff[size_t(p)]] = src[p * nb + b];
    }
  }

  // The transposed form, for windows that read a sparse input -- the input gradient of a strided
  // convolution reads the cotangent dilated by the strides, where im2col's columns are mostly the
  // dilation's zeros: per block of images, over the input's S positions s,
  //   t[(o, k), (b, s)] = W[(o, k), I] x x[I, (b, s)],   out[o, p] = sum over k of t[(o, k), s(k, p)]
  // where s(k, p) is the input position the window table pairs with kernel offset k and output
  // position p (none for most pairs).
  void col2im() const {
    const int64_t K = g.k_size(), P = g.out_size(), S = g.in_sp.numel(), m = o_per() * K;
    const T* packed = packed_kernel(true);
    conv::ConvGeometry rowmajor = g;  // the table with the input's positions numbered as t's columns
    rowmajor.x_sp = strides_of(g.in_sp);
    const std::vector<int64_t> st = conv::window_offsets(rowmajor), xoff = conv::input_offsets(g);
    std::vector<std::pair<int64_t, int64_t>> pairs;  // (p, s) per k: [first[k], first[k + 1])
    std::vector<size_t> first;
    for (int64_t k = 0; k < K; ++k) {
      first.push_back(pairs.size());
      for (int64_t p = 0; p < P; ++p)
        if (st[size_t(k * P + p)] >= 0) pairs.emplace_back(p, st[size_t(k * P + p)]);
    }
    first.push_back(pairs.size());
    bool x_rows = g.x_c == S;  // each input feature's positions one contiguous row (NC...)
    for (int64_t s = 0; s < S && x_rows; ++s) x_rows = xoff[size_t(s)] == s;
    const bool direct = direct_output();
    for_blocks(images_per_block(g.out_n, S, std::max(g.ci, m), threads), [&](int64_t n0, int64_t nn, int64_t n_in, int64_t c0, int64_t o0) {
      thread_local Scratch<T> in_buf;
      thread_local Scratch<Acc> t_buf, acc_buf;
      const int64_t ld = nn * S;
      const T* xs = x + n_in * g.x_n + c0 * g.x_c;
      if (nn > 1 || !x_rows) {
        T* b = in_buf.get(g.ci * ld);
        for (int64_t i = 0; i < g.ci; ++i)
          for (int64_t j = 0; j < nn; ++j)
            for (int64_t s = 0; s < S; ++s) b[i * ld + j * S + s] = xs[j * g.x_n + i * g.x_c + xoff[size_t(s)]];
        xs = b;
      }
      Acc* t = t_buf.get(m * ld);
      gemm(packed + o0 * K * g.ci, xs, t, m, ld, g.ci);
      Acc* acc = acc_buf.get(o_per() * P);  // one image's [O_g, P] outputs
      for (int64_t j = 0; j < nn; ++j) {
        std::fill(acc, acc + o_per() * P, Acc(0));
        for (int64_t o = 0; o < o_per(); ++o)
          for (int64_t k = 0; k < K; ++k) {
            const Acc* row = t + (o * K + k) * ld + j * S;
            for (size_t e = first[size_t(k)]; e < first[size_t(k) + 1]; ++e)
              acc[o * P + pairs[e].first] += row[pairs[e].second];
          }
        store(acc, P, n0 + j, 1, o0, direct);
      }
    });
  }

  // The columns are laid out [(b, p), (c, k)] -- one row per image and output position, along the
  // window of each feature c of a block -- where a window row of the input is one run (the kernel
  // gradient's window is a whole image), and the product per block of features is
  // out[(b, p), o] = cols[(b, p), (c, K)] x W[O, (c, K)]^T, summed over the blocks.
  void im2col_by_feature() const {
    const int64_t K = g.k_size(), P = g.out_size(), B = g.out_n, rows = B * P;
    std::vector<int64_t> by_position(table.size());  // [p * K + k]
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p) by_position[size_t(p * K + k)] = table[size_t(k * P + p)];
    const RowRuns pruns = row_runs(by_position, P, K);
    const bool pruns_long = long_runs(pruns, by_position);
    const int64_t parts = std::clamp<int64_t>(threads, 1, g.c);
    // Features per product: an inner dimension of about kWideColumns within the column budget.
    const int64_t cf = std::clamp<int64_t>(std::min(kWideColumns / K, kColumnBudget / std::max<int64_t>(1, rows * K)), 1,
                                           (g.c + parts - 1) / parts);
    thread_local std::vector<Scratch<Acc>> sum_bufs;  // per part, kept by the calling thread
    if (int64_t(sum_bufs.size()) < parts) sum_bufs.resize(size_t(parts));
    std::vector<Acc*> sums;
    for (int64_t part = 0; part < parts; ++part) sums.push_back(sum_bufs[size_t(part)].get(rows * g.o));
    const PanelRuns fr = feature_runs(by_position);
    parallel_chunks(int(parts), parts, [&](int64_t part) {
      thread_local Scratch<T> cols_buf, w_buf;
      thread_local Scratch<Acc> out_buf;
      Acc* sum = sums[size_t(part)];
      const Run* r = pruns.runs.data();
      const int64_t lo = g.c * part / parts, hi = g.c * (part + 1) / parts;
      if (!fr.base.empty()) return features_from_input(fr, lo, hi, sum);
      for (int64_t c0 = lo; c0 < hi; c0 += cf) {
        const int64_t nc = std::min(cf, hi - c0), ld = nc * K;
        T* cols = cols_buf.get(rows * ld);
        T* wc = w_buf.get(g.o * ld);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t p = 0; p < P; ++p)
            for (int64_t c = 0; c < nc; ++c)
              fill_row(cols + (b * P + p) * ld + c * K, x + b * g.x_n + (c0 + c) * g.x_c, by_position.data() + p * K, K,
                       r + pruns.first[size_t(p)], r + pruns.first[size_t(p) + 1], pruns_long);
        for (int64_t o = 0; o < g.o; ++o)
          for (int64_t c = 0; c < nc; ++c)
            for (int64_t k = 0; k < K; ++k) wc[o * ld + c * K + k] = w[o * g.w_o + (c0 + c) * g.w_i + koff[size_t(k)]];
        if (c0 == lo) {  // the first product writes the sum itself
          gemm(cols, wc, sum, rows, g.o, ld, /*trans_rhs=*/true);
          continue;
        }
        Acc* out = out_buf.get(rows * g.o);
        gemm(cols, wc, out, rows, g.o, ld, /*trans_rhs=*/true);
        for (int64_t i = 0; i < rows * g.o; ++i) sum[i] += out[i];
      }
    });
    const bool direct = direct_output();
    std::vector<Acc> row(static_cast<size_t>(P));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t o = 0; o < g.o; ++o) {
        for (int64_t p = 0; p < P; ++p) {
          const int64_t i = (b * P + p) * g.o + o;
          row[size_t(p)] = sums[0][i];
          for (int64_t part = 1; part < parts; ++part) row[size_t(p)] += sums[size_t(part)][i];
        }
        store_row(row.data(), b, o, direct);
      }
  }
};

// The GEMM form of a float convolution: by feature when the window has more than twice the output's
// positions (the kernel gradient; at 4x4 -> 3x3, K = 16 and P = 9, im2col over blocks of images was
// 15% faster, at 8x8 by feature 1.46x faster: docs/nn.md) and the columns of all images at once stay small, col2im when the input has at
// most half as many positions as the output (dilated by the strides of the convolution whose input
// gradient it is), im2col otherwise. For measurement only (docs/nn.md), FLUXION_CONV_FORM=im2col,
// by_feature or col2im forces a form where it applies (by feature: without groups).
ConvAlgorithm conv_form(const conv::ConvGeometry& g) {
  static const std::string forced = choice_setting("FLUXION_CONV_FORM").value_or("");
  const bool ungrouped = g.groups == 1 && g.batch_groups == 1;
  if (forced == "im2col") return ConvAlgorithm::im2col;
  if (forced == "col2im") return ConvAlgorithm::col2im;
  if (forced == "by_feature" && ungrouped) return ConvAlgorithm::im2col_by_feature;
  if (ungrouped && g.k_size() > 2 * g.out_size() && g.k_size() * g.out_n * g.out_size() <= (int64_t(1) << 22))
    return ConvAlgorithm::im2col_by_feature;
  if (2 * g.in_sp.numel() <= g.out_size()) return ConvAlgorithm::col2im;
  return ConvAlgorithm::im2col;
}

// Runs the GEMM form conv_form chooses for `g`: y = the convolution of x and w, or its rounding to
// `narrow_dtype` into `narrow` where that is set.
template <class T, class Acc>
void run_form(const T* x, const T* w, Acc* y, const conv::ConvGeometry& g, int isa, int threads, void* narrow = nullptr,
              DType narrow_dtype = DType::float32) {
  ConvRun<T, Acc> r{x, w, y, g, conv::window_offsets(g), conv::kernel_offsets(g), conv::output_offsets(g), isa, threads};
  r.narrow = narrow, r.narrow_dtype = narrow_dtype;
  ConvAlgorithm form = conv_form(g);
  // The input gradients of strided convolutions: the tap product skips the dilation's holes as it
  // does padding, with no scatter-add of col2im's per-offset products (1.3-1.8x at ResNet-18's 3x3
  // stride-2 convolutions, docs/resnet_step.md).
  if (form == ConvAlgorithm::col2im && r.by_tap()) form = ConvAlgorithm::im2col;
  if (form == ConvAlgorithm::im2col_by_feature) r.im2col_by_feature();
  else if (form == ConvAlgorithm::col2im) r.col2im();
  else if (r.by_tap()) r.im2col_by_tap();
  else r.im2col();
  count_conv_run(form);
  if (narrow) g_rounded_as_stored.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

uint64_t conv_products_from_input() { return g_from_input.load(std::memory_order_relaxed); }
uint64_t conv_features_from_input() { return g_features_from_input.load(std::memory_order_relaxed); }
uint64_t conv_im2col_by_tap() { return g_by_tap.load(std::memory_order_relaxed); }
uint64_t conv_rounded_as_stored() { return g_rounded_as_stored.load(std::memory_order_relaxed); }

void run_conv_form(const float* x, const float* w, float* y, const conv::ConvGeometry& g, int isa, int threads) {
  run_form(x, w, y, g, isa, threads);
}
void run_conv_form(const float* x, const float* w, DType out_dtype, void* out, const conv::ConvGeometry& g, int isa,
                   int threads) {
  run_form(x, w, static_cast<float*>(nullptr), g, isa, threads, out, out_dtype);
}
void run_conv_form(const double* x, const double* w, double* y, const conv::ConvGeometry& g, int isa, int threads) {
  run_form(x, w, y, g, isa, threads);
}
void run_conv_form(const uint16_t* x, const uint16_t* w, float* y, const conv::ConvGeometry& g, int isa, int threads) {
  run_form(x, w, y, g, isa, threads);
}
void run_conv_form(const uint16_t* x, const uint16_t* w, DType out_dtype, void* out, const conv::ConvGeometry& g, int isa,
                   int threads) {
  run_form(x, w, static_cast<float*>(nullptr), g, isa, threads, out, out_dtype);
}

}  // namespace fluxion::runtime
