// The loops of kernels/pool.h's kernels as templates on the element type, shared by the float32
// entry (kernels/pool_f32.cpp) and the one for every other dtype (kernels/pool.cpp): two objects, so
// that an exported float32 program links only the float32 loops.
//
// The reference kernels (prims/reduce_window.cpp) walk every window of every output element
// through multi-indices. Here the operand's dims split into three parts, from the params alone:
//   outer   leading dims the window leaves alone (a unit window at stride 1, no padding or
//           dilation): N and C of NCHW pooling, N of NHWC. Blocks of them are independent tasks.
//   window  the dims between: a table of operand offsets per (output row, window row) for all but
//           the last of them, and per window position of the last one, runs of output positions
//           that read the operand at a constant stride (padding cuts a run short).
//   inner   trailing dims the window leaves alone (C of NHWC): contiguous, the vectorised loop.
// Each output element sees its window's elements in the reference's order (row-major over the
// window), so the first maximum, the NaN rule and the sums' rounding are the reference's exactly.
#pragma once
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "ir/eval_rules.h"
#include "ir/primitive.h"
#include "kernels/openmp.h"
#include "kernels/scratch.h"

namespace fluxion::runtime::pool {

/// How many windowed reductions and selections the loops ran (fast_window_runs reads it).
inline std::atomic<uint64_t> g_runs{0};


// Output positions [o, o + n) of the last window dim read operand elements src + t * step.
struct Run {
  int64_t o, n, src, step;
};

struct PoolPlan {
  int64_t blocks = 1, inner = 1;     // outer blocks; elements of the inner dims
  int64_t x_block = 1, y_block = 1;  // elements per outer block, operand and output
  int64_t out_rows = 1, k_rows = 1;  // output rows and window rows (all window dims but the last)
  int64_t out_last = 1;              // output positions along the last window dim
  std::vector<int64_t> row_table;    // [out_row * k_rows + k_row]: operand offset in a block, or -1
  std::vector<std::vector<Run>> last_runs;  // per window position of the last window dim
};

// The operand index read by output position o at window position w along one dim, or -1.
inline int64_t window_index(int64_t o, int64_t w, int64_t x, int64_t stride, int64_t pad_lo, int64_t base_dil,
                     int64_t win_dil) {
  const int64_t q = o * stride + w * win_dil - pad_lo;
  return q >= 0 && q % base_dil == 0 && q / base_dil < x ? q / base_dil : -1;
}

inline PoolPlan plan(const Shape& x, const Shape& y, const Params& p) {
  const IntList &wdim = p.get_ints("window_dimensions"), &st = p.get_ints("window_strides"),
                &pad = p.get_ints("padding"), &bd = p.get_ints("base_dilation"), &wd = p.get_ints("window_dilation");
  const int rank = x.rank();
  auto untouched = [&](int d) {
    const size_t i = size_t(d);
    return wdim[i] == 1 && st[i] == 1 && pad[2 * i] == 0 && pad[2 * i + 1] == 0 && bd[i] == 1;
  };
  int first = 0, last = rank - 1;
  while (first < rank && untouched(first)) ++first;
  while (last > first && untouched(last)) --last;
  if (first == rank) first = last = rank - 1;  // nothing windowed: one unit window dim
  PoolPlan r;
  std::vector<int64_t> x_stride(size_t(rank), 1);
  for (int d = rank - 2; d >= 0; --d) x_stride[size_t(d)] = x_stride[size_t(d + 1)] * x[size_t(d + 1)];
  for (int d = 0; d < first; ++d) r.blocks *= x[size_t(d)];
  for (int d = last + 1; d < rank; ++d) r.inner *= x[size_t(d)];
  for (int d = first; d < rank; ++d) r.x_block *= x[size_t(d)], r.y_block *= y[size_t(d)];
  r.row_table = {0};
  for (int d = first; d < last; ++d) {
    const size_t i = size_t(d);
    std::vector<int64_t> next(size_t(r.out_rows * y[i] * r.k_rows * wdim[i]));
    const int64_t k_next = r.k_rows * wdim[i];
    for (int64_t pr = 0; pr < r.out_rows; ++pr)
      for (int64_t o = 0; o < y[i]; ++o)
        for (int64_t kr = 0; kr < r.k_rows; ++kr)
          for (int64_t w = 0; w < wdim[i]; ++w) {
            const int64_t before = r.row_table[size_t(pr * r.k_rows + kr)];
            const int64_t at = window_index(o, w, x[i], st[i], pad[2 * i], bd[i], wd[i]);
            next[size_t((pr * y[i] + o) * k_next + kr * wdim[i] + w)] = before < 0 || at < 0 ? -1 : before + at * x_stride[i];
          }
    r.row_table = std::move(next);
    r.out_rows *= y[i];
    r.k_rows = k_next;
  }
  const size_t l = size_t(last);
  r.out_last = y[l];
  for (int64_t w = 0; w < wdim[l]; ++w) {
    std::vector<Run> runs;
    for (int64_t o = 0; o < y[l]; ++o) {
      const int64_t at = window_index(o, w, x[l], st[l], pad[2 * l], bd[l], wd[l]);
      if (at < 0) continue;
      const int64_t src = at * r.inner;
      if (!runs.empty()) {
        Run& b = runs.back();
        if (b.o + b.n == o && (b.n == 1 || b.src + b.n * b.step == src)) {
          if (b.n == 1) b.step = src - b.src;
          ++b.n;
          continue;
        }
      }
      runs.push_back({o, 1, src, 0});
    }
    r.last_runs.push_back(std::move(runs));
  }
  return r;
}

// f(j, s, n, step) for every window element of output row `row` of a block, as segments: output
// elements [j, j + n) of the row ([out_last, inner]) read the block's operand elements s + t * step.
// Each output element sees its window's elements in window order.
template <class F>
inline void for_each_segment(const PoolPlan& p, int64_t row, F&& f) {
  const int64_t I = p.inner;
  for (int64_t kr = 0; kr < p.k_rows; ++kr) {
    const int64_t r = p.row_table[size_t(row * p.k_rows + kr)];
    if (r < 0) continue;
    for (const std::vector<Run>& runs : p.last_runs)
      for (const Run& run : runs) {
        if (I == 1) f(run.o, r + run.src, run.n, run.step);
        else
          for (int64_t t = 0; t < run.n; ++t) f((run.o + t) * I, r + run.src + t * run.step, I, int64_t(1));
      }
  }
}

// Runs body(block, row) for every output row of every block, the rows split into chunks over the
// threads.
template <class F>
void for_rows(const PoolPlan& p, int threads, F&& body) {
  const int64_t n = p.blocks * p.out_rows;
  const int64_t chunks = std::min<int64_t>(n, threads > 1 ? int64_t(threads) * 16 : 1);
  parallel_chunks(threads, chunks, [&](int64_t c) {
    for (int64_t t = n * c / chunks; t < n * (c + 1) / chunks; ++t) body(t / p.out_rows, t % p.out_rows);
  });
}

// acc[0, row_len) = the extremum of each window of output row `row` of block `xb` (the identity for
// an empty window). NaN propagates: a NaN candidate is taken (c != c) and a NaN kept (no
// comparison with it is true).
template <class T>
void extremum_row(const T* xb, const PoolPlan& p, int64_t row, bool is_max, compute_t<T>* acc) {
  using C = compute_t<T>;
  const C identity = std::numeric_limits<C>::has_infinity
                         ? (is_max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity())
                         : (is_max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max());
  std::fill(acc, acc + p.out_last * p.inner, identity);
  for_each_segment(p, row, [&](int64_t j, int64_t s, int64_t n, int64_t step) {
    C* __restrict a = acc + j;
    const T* __restrict src = xb + s;
    if (is_max)
      for (int64_t t = 0; t < n; ++t) {
        const C c = C(src[t * step]);
        a[t] = c > a[t] || c != c ? c : a[t];
      }
    else
      for (int64_t t = 0; t < n; ++t) {
        const C c = C(src[t * step]);
        a[t] = c < a[t] || c != c ? c : a[t];
      }
  });
}

// Every output row through a per-thread accumulator row: row_fn(block operand, row, acc) fills acc,
// store(acc[j]) gives the output element.
template <class T, class Acc, class RowFn, class Store>
void rows_into(const View& in, const View& out, const PoolPlan& p, int threads, RowFn row_fn, Store store) {
  const T* x = in.as<T>();
  T* y = out.as<T>();
  const int64_t row_len = p.out_last * p.inner;
  for_rows(p, threads, [&](int64_t b, int64_t row) {
    thread_local Scratch<Acc> buf;
    Acc* acc = buf.get(row_len);
    row_fn(x + b * p.x_block, row, acc);
    T* yr = y + b * p.y_block + row * row_len;
    for (int64_t j = 0; j < row_len; ++j) yr[j] = store(acc[j]);
  });
}

template <class T>
void extremum(const View& in, const View& out, const PoolPlan& p, bool is_max, int threads) {
  using C = compute_t<T>;
  rows_into<T, C>(
      in, out, p, threads, [&](const T* xb, int64_t row, C* acc) { extremum_row(xb, p, row, is_max, acc); },
      [](C v) { return T(v); });
}

// The sums accumulate in double (floats) or 64-bit integers, as the reference's do.
template <class T>
void window_sum(const View& in, const View& out, const PoolPlan& p, int threads) {
  using Acc = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, uint64_t>;
  auto sum_row = [&](const T* xb, int64_t row, Acc* acc) {
    std::fill(acc, acc + p.out_last * p.inner, Acc(0));
    for_each_segment(p, row, [&](int64_t j, int64_t s, int64_t n, int64_t step) {
      Acc* __restrict a = acc + j;
      const T* __restrict src = xb + s;
      for (int64_t t = 0; t < n; ++t) {
        if constexpr (std::is_same_v<Acc, uint64_t> && std::is_signed_v<T>) a[t] += uint64_t(int64_t(src[t * step]));
        else a[t] += static_cast<Acc>(static_cast<compute_t<T>>(src[t * step]));
      }
    });
  };
  rows_into<T, Acc>(in, out, p, threads, sum_row, [](Acc v) {
    if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) return T(float(v));
    else return static_cast<T>(v);
  });
}

// Per output element of a row, the block offset of its window's first best element (or -1): the
// reference's rule (a candidate replaces the best so far when it is NaN or strictly better, a NaN
// stays) picks the window's first NaN, else the first element equal to its extremum. So: the
// extremum first (vectorised), then the first match -- two branch-free passes, where one pass
// comparing against the best so far branches at random on the data.
template <class T>
void select_row(const T* xb, const PoolPlan& p, int64_t row, bool is_max, compute_t<T>* best, int32_t* at) {
  using C = compute_t<T>;
  extremum_row(xb, p, row, is_max, best);
  std::fill(at, at + p.out_last * p.inner, int32_t(-1));
  for_each_segment(p, row, [&](int64_t j, int64_t s, int64_t n, int64_t step) {
    const C* __restrict m = best + j;
    int32_t* __restrict a = at + j;
    const T* __restrict src = xb + s;
    const int32_t s0 = int32_t(s), st = int32_t(step);
    for (int32_t t = 0; t < int32_t(n); ++t) {
      const C c = C(src[t * st]);
      a[t] = (a[t] < 0) & ((c == m[t]) | (c != c)) ? s0 + t * st : a[t];
    }
  });
}

// select_and_gather_add (t, x): per window, t at x's first best element.
template <class T>
void gather(std::span<const View> in, const View& out, const PoolPlan& p, bool is_max, int threads) {
  using C = compute_t<T>;
  const T *t = in[0].as<T>(), *x = in[1].as<T>();
  T* y = out.as<T>();
  const int64_t row_len = p.out_last * p.inner;
  for_rows(p, threads, [&](int64_t b, int64_t row) {
    thread_local Scratch<C> best_buf;
    thread_local Scratch<int32_t> at_buf;
    C* best = best_buf.get(row_len);
    int32_t* at = at_buf.get(row_len);
    select_row(x + b * p.x_block, p, row, is_max, best, at);
    const T* tb = t + b * p.x_block;
    T* yr = y + b * p.y_block + row * row_len;
    for (int64_t j = 0; j < row_len; ++j) yr[j] = at[j] < 0 ? T(C(0)) : tb[at[j]];
  });
}

// select_and_scatter_add (s, x): each s added at its window's first best element of x, in the
// reference's order (output elements row-major), so the sums round as its do. Blocks are
// independent: they are the tasks.
template <class T>
void scatter(std::span<const View> in, const View& out, const PoolPlan& p, bool is_max, int threads) {
  using C = compute_t<T>;
  const T *src = in[0].as<T>(), *x = in[1].as<T>();
  T* y = out.as<T>();
  const int64_t row_len = p.out_last * p.inner;
  const int64_t chunks = std::min<int64_t>(p.blocks, threads > 1 ? int64_t(threads) * 16 : 1);
  parallel_chunks(threads, chunks, [&](int64_t c) {
    thread_local Scratch<C> best_buf, acc_buf;
    thread_local Scratch<int32_t> at_buf;
    C* best = best_buf.get(row_len);
    int32_t* at = at_buf.get(row_len);
    for (int64_t b = p.blocks * c / chunks; b < p.blocks * (c + 1) / chunks; ++b) {
      T* yb = y + b * p.x_block;
      C* acc = std::is_same_v<T, C> ? reinterpret_cast<C*>(yb) : acc_buf.get(p.x_block);
      std::fill(acc, acc + p.x_block, C(0));
      for (int64_t row = 0; row < p.out_rows; ++row) {
        select_row(x + b * p.x_block, p, row, is_max, best, at);
        const T* sr = src + b * p.y_block + row * row_len;
        for (int64_t j = 0; j < row_len; ++j)
          if (at[j] >= 0) acc[at[j]] += C(sr[j]);
      }
      if constexpr (!std::is_same_v<T, C>)
        for (int64_t i = 0; i < p.x_block; ++i) yb[i] = T(acc[i]);
    }
  });
}

/// Runs `prim` on element type T (a number; the selections on floats), or returns false for what the
/// reference kernel must (a rank-0 operand, no elements, more elements than int32 offsets reach).
template <class T>
bool run_window(Prim prim, std::span<const View> in, std::span<const View> out, const Params& params, int threads) {
  using C = compute_t<T>;
  const View& x = in.back();  // the operand the windows are taken over (the selections' second)
  if (x.shape().rank() == 0 || x.size() == 0 || out[0].size() == 0) return false;
  if (x.size() > std::numeric_limits<int32_t>::max()) return false;  // the selections' offsets are int32
  if constexpr (!std::is_arithmetic_v<C> || std::is_same_v<T, bool>) {
    return false;
  } else {
    const PoolPlan p = plan(x.shape(), prim == Prim::select_and_scatter_add ? in[0].shape() : out[0].shape(), params);
    bool done = true;
    switch (prim) {
      case Prim::reduce_window_max: extremum<T>(x, out[0], p, true, threads); break;
      case Prim::reduce_window_min: extremum<T>(x, out[0], p, false, threads); break;
      case Prim::reduce_window_sum: window_sum<T>(x, out[0], p, threads); break;
      default:
        done = false;
        if constexpr (std::is_floating_point_v<C>) {
          const bool is_max = params.get_bool("select_max");
          if (prim == Prim::select_and_gather_add) gather<T>(in, out[0], p, is_max, threads), done = true;
          if (prim == Prim::select_and_scatter_add) scatter<T>(in, out[0], p, is_max, threads), done = true;
        }
    }
    if (done) g_runs.fetch_add(1, std::memory_order_relaxed);
    return done;
  }
}

}  // namespace fluxion::runtime::pool
