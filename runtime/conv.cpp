// fluxion_rt_windowed (runtime/conv.h): the params' encoding, and the fast float convolution.
//
// A convolution is a sum over (input feature, kernel offset) of a kernel weight times an input
// element that the window table (prims/conv_geometry.h) locates for each output position. Gathering
// those input elements into columns turns it into matrix products, which runtime/matmul.h computes
// with the Eigen build of the kernel's ISA level (bfloat16 operands: the AVX512-BF16 kernel of
// runtime/gemm_bf16.h on columns gathered in bfloat16, where the target has it):
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
// the products of col2im are with the S undilated input positions only. docs/nn.md has the
// measurements.
#include "runtime/conv.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "ir/eval_rules.h"
#include "prims/conv_geometry.h"
#include "runtime/call_arrays.h"
#include "runtime/gemm_bf16.h"
#include "runtime/matmul.h"
#include "runtime/openmp.h"
#include "runtime/pool.h"
#include "runtime/scratch.h"

namespace fluxion::runtime {

namespace {

enum class Coding { integer, boolean, list, spec, optional_dtype };
struct CodedParam {
  const char* name;
  Coding coding;
};

constexpr CodedParam kConvParams[] = {
    {"window_strides", Coding::list},          {"padding", Coding::list},           {"lhs_dilation", Coding::list},
    {"rhs_dilation", Coding::list},            {"lhs_spec", Coding::spec},          {"rhs_spec", Coding::spec},
    {"out_spec", Coding::spec},                {"feature_group_count", Coding::integer},
    {"batch_group_count", Coding::integer},    {"preferred_element_type", Coding::optional_dtype}};
constexpr CodedParam kWindowParams[] = {{"window_dimensions", Coding::list}, {"window_strides", Coding::list},
                                        {"padding", Coding::list},           {"base_dilation", Coding::list},
                                        {"window_dilation", Coding::list},   {"select_max", Coding::boolean}};

std::span<const CodedParam> coded_params(Prim p) {
  if (p == Prim::conv_general_dilated) return kConvParams;
  if (p == Prim::select_and_gather_add || p == Prim::select_and_scatter_add) return kWindowParams;
  return std::span(kWindowParams).first(5);
}

std::atomic<uint64_t> g_runs[4];
std::atomic<uint64_t> g_from_input;

}  // namespace

bool is_windowed(Prim p) {
  return p == Prim::conv_general_dilated || p == Prim::reduce_window_sum || p == Prim::reduce_window_max ||
         p == Prim::reduce_window_min || p == Prim::select_and_gather_add || p == Prim::select_and_scatter_add;
}

uint64_t conv_runs(ConvAlgorithm a) { return g_runs[int(a)].load(std::memory_order_relaxed); }
uint64_t conv_products_from_input() { return g_from_input.load(std::memory_order_relaxed); }

void encode_window_params(Prim p, const Params& params, std::vector<int64_t>& out) {
  for (const CodedParam& c : coded_params(p)) {
    switch (c.coding) {
      case Coding::integer: out.push_back(params.get_int(c.name)); break;
      case Coding::boolean: out.push_back(params.get_bool(c.name) ? 1 : 0); break;
      case Coding::optional_dtype: out.push_back(params.has(c.name) ? int64_t(params.get_dtype(c.name)) : -1); break;
      case Coding::list: {
        const IntList& l = params.get_ints(c.name);
        out.push_back(int64_t(l.size()));
        out.insert(out.end(), l.begin(), l.end());
        break;
      }
      case Coding::spec: {  // a permutation of at most 7 dims: its length and 3 bits per entry
        const IntList& l = params.get_ints(c.name);
        int64_t v = 0;
        for (size_t i = l.size(); i-- > 0;) v = v * 8 + l[i];
        out.push_back(v * 8 + int64_t(l.size()));
        break;
      }
    }
  }
}

Params decode_window_params(Prim p, const int64_t*& a) {
  Params params;
  for (const CodedParam& c : coded_params(p)) {
    switch (c.coding) {
      case Coding::integer: params.set(c.name, *a++); break;
      case Coding::boolean: params.set(c.name, *a++ != 0); break;
      case Coding::optional_dtype: {
        const int64_t d = *a++;
        if (d >= 0) params.set(c.name, DType(d));
        break;
      }
      case Coding::list: {
        const int64_t n = *a++;
        params.set(c.name, IntList(a, a + n));
        a += n;
        break;
      }
      case Coding::spec: {
        int64_t v = *a++;
        IntList l(size_t(v % 8));
        v /= 8;
        for (int64_t& d : l) {
          d = v % 8;
          v /= 8;
        }
        params.set(c.name, l);
        break;
      }
    }
  }
  return params;
}

namespace {

// How the GEMM forms cut their work: a product should have about kWideColumns columns (or inner
// dimension, by feature) -- at the deep stages' 8x8 and 4x4 outputs one image gives only 64 or 16,
// and Eigen packs the whole kernel again for every product -- within kColumnBudget elements of
// columns per thread.
constexpr int64_t kWideColumns = 512;
constexpr int64_t kColumnBudget = int64_t(1) << 21;

// Images per GEMM when each brings `cols` columns of `rows` rows, leaving every thread a block and
// evening the blocks out.
int64_t images_per_block(int64_t images, int64_t cols, int64_t rows, int threads) {
  int64_t nb = std::min(kWideColumns / std::max<int64_t>(1, cols), kColumnBudget / std::max<int64_t>(1, rows * cols));
  nb = std::clamp<int64_t>(nb, 1, std::max<int64_t>(1, (images + threads - 1) / std::max(threads, 1)));
  const int64_t blocks = (images + nb - 1) / nb;
  return (images + blocks - 1) / blocks;
}

// A row of the window table as runs of consecutive input elements: positions [p, p + len) read
// input elements [src, src + len). With unit strides along the input's innermost dim (NCHW at
// stride 1) a row is a few long runs, which copy much faster than an element-wise gather.
struct Run {
  int64_t p, src, len;
};
struct RowRuns {
  std::vector<Run> runs;
  std::vector<size_t> first;  // per kernel offset: its runs are [first[k], first[k + 1])
};
RowRuns row_runs(const std::vector<int64_t>& table, int64_t K, int64_t P) {
  RowRuns r;
  for (int64_t k = 0; k < K; ++k) {
    r.first.push_back(r.runs.size());
    const int64_t* t = table.data() + k * P;
    for (int64_t p = 0; p < P; ++p) {
      if (t[p] < 0) continue;
      const int64_t start = p;
      while (p + 1 < P && t[p + 1] == t[p] + 1) ++p;
      r.runs.push_back({start, t[start], p - start + 1});
    }
  }
  r.first.push_back(r.runs.size());
  return r;
}

// Whether runs pay off for a table: at least 4 elements per run on average.
bool long_runs(const RowRuns& r, const std::vector<int64_t>& table) {
  return int64_t(r.runs.size()) * 4 <= int64_t(std::count_if(table.begin(), table.end(), [](int64_t t) { return t >= 0; }));
}

// d[0, bytes) = s[0, bytes) (or zeros, `s` null) inline, for the short runs of a window row: whole
// 64-byte blocks, then the rest as two fixed-size copies that may overlap. A run is typically
// one image row (64 or 128 bytes) and the zeros between runs the padding (2-8 bytes), where a
// call of the library's memmove and memset per run cost about as much as the copies (a 3x3
// window row of a 32x32 bfloat16 image: 10-25% faster inline, float32 unchanged, in a
// single-thread microbenchmark).
inline void copy_short(char* d, const char* s, size_t bytes) {
  auto two = [&](auto size) {  // bytes in [size, 2 size]
    constexpr size_t c = decltype(size)::value;
    if (s) std::memcpy(d, s, c), std::memcpy(d + bytes - c, s + bytes - c, c);
    else std::memset(d, 0, c), std::memset(d + bytes - c, 0, c);
  };
  if (bytes >= 64) {
    size_t i = 0;
    for (; i + 64 <= bytes; i += 64) s ? (void)std::memcpy(d + i, s + i, 64) : (void)std::memset(d + i, 0, 64);
    if (i < bytes) s ? (void)std::memcpy(d + bytes - 64, s + bytes - 64, 64) : (void)std::memset(d + bytes - 64, 0, 64);
  } else if (bytes >= 32) two(std::integral_constant<size_t, 32>{});
  else if (bytes >= 16) two(std::integral_constant<size_t, 16>{});
  else if (bytes >= 8) two(std::integral_constant<size_t, 8>{});
  else if (bytes >= 4) two(std::integral_constant<size_t, 4>{});
  else if (bytes >= 2) two(std::integral_constant<size_t, 2>{});
  else if (bytes == 1) *d = s ? *s : 0;
}

// row[0, n) = the input elements that table row `t` reads from `src` (zeros where it reads none):
// by the row's runs [r0, r1) when `by_runs`, else element by element. (Zero is all-zero bits in
// every T here: float, double and bfloat16's bits.)
template <class T>
void fill_row(T* row, const T* src, const int64_t* t, int64_t n, const Run* r0, const Run* r1, bool by_runs) {
  if (!by_runs) {
    for (int64_t p = 0; p < n; ++p) row[p] = t[p] >= 0 ? src[t[p]] : T(0);
    return;
  }
  auto bytes = [](const T* p) { return reinterpret_cast<const char*>(p); };
  char* out = reinterpret_cast<char*>(row);
  int64_t at = 0;
  for (const Run* run = r0; run != r1; ++run) {
    copy_short(out + at * sizeof(T), nullptr, size_t(run->p - at) * sizeof(T));
    copy_short(out + run->p * sizeof(T), bytes(src + run->src), size_t(run->len) * sizeof(T));
    at = run->p + run->len;
  }
  copy_short(out + at * sizeof(T), nullptr, size_t(n - at) * sizeof(T));
}

// A convolution's GEMM forms over operands of T (float, double, or uint16_t: bfloat16 bits for
// the AVX512-BF16 GEMM) and products and outputs of Acc (T, or float for bfloat16).
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

  // Stores a product's [O_g, (image j, position p)] block `out` (rows of length ld) into the output
  // features [o0, o0 + O_g) of images [n0, n0 + nn).
  void store(const Acc* out, int64_t ld, int64_t n0, int64_t nn, int64_t o0, bool direct) const {
    const int64_t P = g.out_size();
    for (int64_t j = 0; j < nn; ++j)
      for (int64_t o = 0; o < o_per(); ++o) {
        const Acc* src = out + o * ld + j * P;
        Acc* dst = y + (n0 + j) * g.y_n + (o0 + o) * g.y_c;
        if (direct) std::copy(src, src + P, dst);
        else
          for (int64_t p = 0; p < P; ++p) dst[yoff[size_t(p)]] = src[p];
      }
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

  // Bfloat16 only: per (k, half-panel of kBf16Runs positions), Bf16WindowRuns' run offset and mask,
  // where each reads one run of the input (stride 1 along the input's contiguous dim, output rows of
  // 16 or a multiple: NCHW at ResNet-18's 32x32 and 16x16 stages); else empty (columns gathered).
  struct PanelRuns {
    std::vector<int64_t> base;
    std::vector<uint16_t> mask;
  };
  PanelRuns panel_runs() const {
    const int64_t K = g.k_size(), P = g.out_size(), W = kBf16Runs;
    PanelRuns r;
    if (!std::is_same_v<T, uint16_t> || P % kBf16Cols != 0) return r;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p0 = 0; p0 < P; p0 += W) {
        int64_t base = 0;
        uint16_t mask = 0;
        for (int64_t l = 0; l < W; ++l) {
          const int64_t t = table[size_t(k * P + p0 + l)];
          if (t < 0) continue;
          if (mask == 0) base = t - l;
          else if (t != base + l) return {};
          mask = uint16_t(mask | 1u << l);
        }
        r.base.push_back(base), r.mask.push_back(mask);
      }
    return r;
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
      const bool in_place = nn == 1 && direct;
      Acc* out = in_place ? y + n0 * g.y_n + o0 * g.y_c : out_buf.get(o_per() * ld);
      if (!pr.base.empty()) {
        const MatmulBlock b{o_per(), ld, rows, wg, rows, false, nullptr, 0, false, out, ld};
        const Bf16WindowRuns cols{reinterpret_cast<const uint16_t*>(x) + n_in * g.x_n + c0 * g.x_c, g.x_n, g.x_c, K, P,
                                  pr.base.data(), pr.mask.data()};
        const Bf16Packs packs = bf16_pack_scratch();
        gemm_bf16_window_block(b, cols, packs.a, packs.b);
        g_from_input.fetch_add(1, std::memory_order_relaxed);
      } else {
        T* cols = cols_buf.get(rows * ld);
        for (int64_t j = 0; j < nn; ++j) gather_columns(cols + j * P, ld, n_in + j, c0);
        gemm(wg, cols, out, o_per(), ld, rows);
      }
      if (!in_place) store(out, ld, n0, nn, o0, direct);
    });
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
    parallel_chunks(int(parts), parts, [&](int64_t part) {
      thread_local Scratch<T> cols_buf, w_buf;
      thread_local Scratch<Acc> out_buf;
      Acc* sum = sums[size_t(part)];
      const Run* r = pruns.runs.data();
      const int64_t lo = g.c * part / parts, hi = g.c * (part + 1) / parts;
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
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t o = 0; o < g.o; ++o) {
          const int64_t i = (b * P + p) * g.o + o;
          Acc v = sums[0][i];
          for (int64_t part = 1; part < parts; ++part) v += sums[size_t(part)][i];
          y[b * g.y_n + o * g.y_c + yoff[size_t(p)]] = v;
        }
  }
};

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

// The GEMM form of a float convolution: by feature when the window has more than twice the output's
// positions (the kernel gradient; at 4x4 -> 3x3, K = 16 and P = 9, im2col over blocks of images was
// 15% faster, at 8x8 by feature 1.46x faster: docs/nn.md) and the columns of all images at once stay small, col2im when the input has at
// most half as many positions as the output (dilated by the strides of the convolution whose input
// gradient it is), im2col otherwise. For measurement only (docs/nn.md), FLUXION_CONV_FORM=im2col,
// by_feature or col2im forces a form where it applies (by feature: without groups).
ConvAlgorithm conv_form(const conv::ConvGeometry& g) {
  static const std::string forced = [] {
    const char* v = std::getenv("FLUXION_CONV_FORM");
    return std::string(v ? v : "");
  }();
  const bool ungrouped = g.groups == 1 && g.batch_groups == 1;
  if (forced == "im2col") return ConvAlgorithm::im2col;
  if (forced == "col2im") return ConvAlgorithm::col2im;
  if (forced == "by_feature" && ungrouped) return ConvAlgorithm::im2col_by_feature;
  if (ungrouped && g.k_size() > 2 * g.out_size() && g.k_size() * g.out_n * g.out_size() <= (int64_t(1) << 22))
    return ConvAlgorithm::im2col_by_feature;
  if (2 * g.in_sp.numel() <= g.out_size()) return ConvAlgorithm::col2im;
  return ConvAlgorithm::im2col;
}

// Runs the GEMM form conv_form chooses for `g`: y = the convolution of x and w.
template <class T, class Acc>
void run_form(const T* x, const T* w, Acc* y, const conv::ConvGeometry& g, int isa, int threads) {
  ConvRun<T, Acc> r{x, w, y, g, conv::window_offsets(g), conv::kernel_offsets(g), conv::output_offsets(g), isa, threads};
  const ConvAlgorithm form = conv_form(g);
  if (form == ConvAlgorithm::im2col_by_feature) r.im2col_by_feature();
  else if (form == ConvAlgorithm::col2im) r.col2im();
  else r.im2col();
  g_runs[int(form)].fetch_add(1, std::memory_order_relaxed);
}

// Whether a convolution of these dtypes runs on bfloat16 columns: both operands bfloat16, a 16-bit
// or float32 result, and the AVX512-BF16 GEMM allowed for the kernel's target (native_bf16_for).
bool bf16_columns(DType x, DType w, DType out, int isa) {
  return x == DType::bfloat16 && w == DType::bfloat16 && out != DType::float64 && native_bf16_for(isa);
}

// Runs a float convolution with a GEMM form, or returns false (integers, empty operands). Where
// bf16_columns, the columns and the kernel stay bfloat16 -- gathered and packed at half the bytes --
// for the AVX512-BF16 GEMM, whose float32 products are rounded once at the end. Other float16 and
// bfloat16 operands (and a preferred_element_type output) are computed in float32 -- as the
// reference kernel accumulates them -- through widened copies, rounded once at the end.
bool fast_conv(std::span<const View> in, const View& out, const Params& params, int isa, int threads) {
  const DType d = in[0].dtype(), od = out.dtype();
  if (!is_float(d) || !is_float(od)) return false;
  const conv::ConvGeometry g = conv::conv_geometry(in[0].shape(), in[1].shape(), conv::conv_params(params));
  if (out.size() == 0 || g.ci * g.k_size() == 0) return false;
  if (bf16_columns(d, in[1].dtype(), od, isa)) {
    thread_local Scratch<float> y_buf;
    float* ys = od == DType::float32 ? out.as<float>() : y_buf.get(out.size());
    run_form(static_cast<const uint16_t*>(in[0].data), static_cast<const uint16_t*>(in[1].data), ys, g, isa, threads);
    if (od != DType::float32) narrow_from_f32(ys, od, out.data, out.size(), isa, threads);
    return true;
  }
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const DType t = dtype_of_v<T>;
    thread_local Scratch<T> x_buf, w_buf, y_buf;  // the copies in T: megabytes, kept by the calling thread
    const T* xs = d == t ? in[0].as<T>() : x_buf.get(in[0].size());
    const T* ws = d == t ? in[1].as<T>() : w_buf.get(in[1].size());
    T* ys = od == t ? out.as<T>() : y_buf.get(out.size());
    if (d != t) {
      if constexpr (std::is_same_v<T, float>) {  // 16-bit operands: the parallel widening of runtime/matmul.h
        widen_to_f32(d, in[0].data, x_buf.data.get(), in[0].size(), isa, threads);
        widen_to_f32(d, in[1].data, w_buf.data.get(), in[1].size(), isa, threads);
      } else {
        widen_into(in[0], x_buf.data.get()), widen_into(in[1], w_buf.data.get());
      }
    }
    run_form(xs, ws, ys, g, isa, threads);
    if (od == t) return;
    if constexpr (std::is_same_v<T, float>) narrow_from_f32(ys, od, out.data, out.size(), isa, threads);
    else narrow_into(ys, out);
  };
  if (d == DType::float64 || od == DType::float64) run(double{});
  else run(float{});
  return true;
}

}  // namespace
}  // namespace fluxion::runtime

using namespace fluxion;

extern "C" void fluxion_rt_windowed(int64_t* a) {
  const Prim prim = Prim(a[0]);
  const int64_t n_in = a[1], n_out = a[2];
  const int isa = int(a[3]), threads = int(a[4]);
  const int64_t* p = a + 5;
  const Params params = runtime::decode_window_params(prim, p);
  const runtime::CallArrays arrays = runtime::read_call_arrays(p, n_in + n_out);
  const std::vector<View>& views = arrays.views;
  const std::span<const View> ins(views.data(), size_t(n_in)), outs(views.data() + n_in, size_t(n_out));
  if (prim == Prim::conv_general_dilated && runtime::fast_conv(ins, outs[0], params, isa, threads)) return;
  if (prim == Prim::conv_general_dilated) runtime::g_runs[int(runtime::ConvAlgorithm::reference)]++;
  else if (runtime::fast_window(prim, ins, outs, params, threads)) return;
  eval_rules(prim).kernel(ins, outs, params);
}
