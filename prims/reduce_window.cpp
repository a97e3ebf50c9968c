// Windowed reductions and the max-pool gradient (jax.lax's reduce_window family). Every primitive
// here has the params [window_dimensions window_strides padding base_dilation window_dilation], one
// entry per operand dim (padding: a (lo, hi) pair per dim, flattened); window positions are taken
// in the operand dilated by base_dilation and padded, as conv_general_dilated's are.
//   reduce_window_{sum,max,min} x        the reduction of each window (identity where it is empty)
//   select_and_gather_add[select_max] t x    per window of x, t at the window's first max (min when
//                                        !select_max) of x: the JVP of reduce_window_max/min
//   select_and_scatter_add[select_max] s x   zeros of x's shape, each s added at its window's first
//                                        max of x: the transpose of the above (the max-pool gradient)
// The gather and the scatter are each other's transposes and share one selection, so reverse mode
// through max pooling is exact, ties included (the first maximum takes the whole gradient).
#include <cmath>
#include <limits>

#include "lax/lax.h"
#include "prims/conv_geometry.h"
#include "prims/registry.h"
#include "prims/strides.h"

namespace fluxion {
namespace {

using strides::ints_str;

// ---- the family's geometry ------------------------------------------------------------------------

struct WindowGeometry {
  Shape out, window;
  std::vector<std::vector<int64_t>> index;  // per dim: [o * window + w] -> operand index, or -1
  std::vector<int64_t> in_strides;
};

int64_t dilated(int64_t d, int64_t k) { return d == 0 ? 0 : 1 + k * (d - 1); }

WindowGeometry window_geometry(const Shape& x, const Params& p) {
  const IntList &wdim = p.get_ints("window_dimensions"), &st = p.get_ints("window_strides"),
                &pad = p.get_ints("padding"), &bd = p.get_ints("base_dilation"), &wd = p.get_ints("window_dilation");
  const int rank = x.rank();
  strides::check_length("window_dimensions", wdim, rank);
  strides::check_length("window_strides", st, rank);
  strides::check_length("base_dilation", bd, rank);
  strides::check_length("window_dilation", wd, rank);
  if (int64_t(pad.size()) != 2 * rank)
    rule_error(ErrorKind::Shape, "padding " + ints_str(pad) + " must hold a (low, high) pair per dim (rank " +
                                     std::to_string(rank) + ")");
  WindowGeometry g;
  for (int d = 0; d < rank; ++d) {
    const size_t i = size_t(d);
    if (wdim[i] < 0 || st[i] <= 0 || bd[i] <= 0 || wd[i] <= 0)
      rule_error(ErrorKind::Shape, "window_dimensions " + ints_str(wdim) + ", window_strides " + ints_str(st) +
                                       ", base_dilation " + ints_str(bd) + " and window_dilation " + ints_str(wd) +
                                       " must be positive");
    const int64_t padded = dilated(x[i], bd[i]) + pad[2 * i] + pad[2 * i + 1], window = dilated(wdim[i], wd[i]);
    if (padded < window)
      rule_error(ErrorKind::Shape, "in dim " + std::to_string(d) + " the window (" + std::to_string(window) +
                                       ") is larger than the padded operand (" + std::to_string(padded) + ")");
    const int64_t out = (padded - window) / st[i] + 1;
    g.out.push_back(out);
    g.window.push_back(wdim[i]);
    std::vector<int64_t> idx(size_t(out * wdim[i]), -1);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t w = 0; w < wdim[i]; ++w) {
        const int64_t q = o * st[i] + w * wd[i] - pad[2 * i];
        if (q >= 0 && q % bd[i] == 0 && q / bd[i] < x[i]) idx[size_t(o * wdim[i] + w)] = q / bd[i];
      }
    g.index.push_back(std::move(idx));
  }
  g.in_strides = strides_of(x);
  return g;
}

// Calls f(o, offsets) for every output element o (row-major) with the flat operand offsets of the
// window positions that read the operand (padding and dilation holes left out), in window order.
template <class F>
void for_each_window(const WindowGeometry& g, F f) {
  std::vector<int64_t> offs;
  strides::for_each_index(g.out, [&](int64_t o, const std::vector<int64_t>& oi) {
    offs.clear();
    strides::for_each_index(g.window, [&](int64_t, const std::vector<int64_t>& wi) {
      int64_t off = 0;
      for (size_t d = 0; d < oi.size(); ++d) {
        const int64_t at = g.index[d][size_t(oi[d] * g.window[d] + wi[d])];
        if (at < 0) return;
        off += at * g.in_strides[d];
      }
      offs.push_back(off);
    });
    f(o, offs);
  });
}

std::vector<AbstractArray> window_shape(std::span<const AbstractArray> in, const Params& params) {
  strides::expect_operands(in, 1);
  if (is_bool(in[0].dtype)) rule_error(ErrorKind::Type, "the operand must be numbers, got bool");
  return {AbstractArray{window_geometry(in[0].shape, params).out, in[0].dtype, in[0].weak_type}};
}

// The params with a unit window inserted at dim `d` (batching: the vmapped dim is not windowed).
Params with_unit_window(const Params& p, int64_t d) {
  Params r = p;
  auto insert = [&](const char* key, std::initializer_list<int64_t> v) {
    IntList l = p.get_ints(key);
    const int64_t at = std::string_view(key) == "padding" ? 2 * d : d;
    l.insert(l.begin() + at, v);
    r.set(key, l);
  };
  insert("window_dimensions", {1});
  insert("window_strides", {1});
  insert("padding", {0, 0});
  insert("base_dilation", {1});
  insert("window_dilation", {1});
  return r;
}

// Every operand batched at one dim, where the window is a unit one.
std::vector<BatchedArray> window_batch(Prim prim, std::span<const BatchedArray> a, const Params& params,
                                       int64_t axis_size, SourceLoc loc) {
  int64_t d = 0;
  std::vector<Array> xs = batch_like_first(a, axis_size, loc, d);
  return {BatchedArray{bind1(prim, xs, with_unit_window(params, d), loc), d}};
}
template <Prim P>
std::vector<BatchedArray> window_batch(std::span<const BatchedArray> a, const Params& params, int64_t axis_size,
                                       SourceLoc loc) {
  return window_batch(P, a, params, axis_size, loc);
}

// ---- reduce_window_sum: linear; its transpose spreads each cotangent over its window -------------

template <class T>
using sum_acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, uint64_t>;

void window_sum_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const WindowGeometry g = window_geometry(in[0].shape(), params);
  dispatch_dtype(in[0].dtype(), [&](auto v) {
    using T = decltype(v);
    using Acc = sum_acc_t<T>;
    const T* x = in[0].as<T>();
    T* y = out[0].as<T>();
    for_each_window(g, [&](int64_t o, const std::vector<int64_t>& offs) {
      Acc acc = 0;
      for (int64_t off : offs) {
        if constexpr (std::is_same_v<Acc, uint64_t> && std::is_signed_v<T>) acc += uint64_t(int64_t(x[off]));
        else acc += static_cast<Acc>(static_cast<compute_t<T>>(x[off]));
      }
      if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) y[o] = T(float(acc));
      else y[o] = static_cast<T>(acc);
    });
  });
}

// jax's _reduce_window_sum_transpose_rule: the cotangent, dilated by the strides and padded so that
// a stride-1 window sum (dilated as the forward window) lands on every operand element.
std::vector<Array> window_sum_transpose(std::span<const Array> ct, std::span<const LinearArg> a, const Params& params,
                                        SourceLoc loc) {
  const Shape& x = a[0].aval.shape;
  const WindowGeometry g = window_geometry(x, params);
  const IntList &wdim = params.get_ints("window_dimensions"), &st = params.get_ints("window_strides"),
                &pad = params.get_ints("padding"), &bd = params.get_ints("base_dilation"), &wd = params.get_ints("window_dilation");
  const IntList pads = conv::input_gradient_padding(x, g.window, g.out, st, pad, bd, wd);
  IntList config, zeros;
  for (int d = 0; d < x.rank(); ++d) {
    config.insert(config.end(), {pads[size_t(2 * d)], pads[size_t(2 * d + 1)], st[size_t(d)] - 1});
    zeros.insert(zeros.end(), {0, 0});
  }
  Array padded = lax::pad(ct[0], lax::scalar_like(ct[0], 0), config);
  Params p{{"window_dimensions", wdim}, {"window_strides", bd}, {"padding", zeros},
           {"base_dilation", IntList(size_t(x.rank()), 1)}, {"window_dilation", wd}};
  return {bind1(Prim::reduce_window_sum, {padded}, p, loc)};
}

const Registration reduce_window_sum_registration = PrimitiveRules{
    .prim = Prim::reduce_window_sum,
    .shape = &window_shape,
    .kernel = &window_sum_kernel,
    .jvp = &linear_jvp<Prim::reduce_window_sum>,
    .transpose = &window_sum_transpose,
    .linear = kLinear,
    .batch = &window_batch<Prim::reduce_window_sum>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

// ---- reduce_window_max / min ----------------------------------------------------------------------

// Whether `cand` replaces `best` (seen first): NaN wins and stays, else strictly better.
template <class C>
bool better(C cand, C best, bool is_max) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(best)) return false;
    if (std::isnan(cand)) return true;
  }
  return is_max ? cand > best : cand < best;
}

// The offset of the first best element of x in the window, or -1 for a window that reads nothing.
template <class T>
int64_t select(const T* x, const std::vector<int64_t>& offs, bool is_max) {
  int64_t best = -1;
  for (int64_t off : offs)
    if (best < 0 || better<compute_t<T>>(compute_t<T>(x[off]), compute_t<T>(x[best]), is_max)) best = off;
  return best;
}

template <bool IsMax>
void window_extremum_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const WindowGeometry g = window_geometry(in[0].shape(), params);
  dispatch_dtype(in[0].dtype(), [&](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    const T* x = in[0].as<T>();
    T* y = out[0].as<T>();
    const C identity = std::numeric_limits<C>::has_infinity
                           ? (IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity())
                           : (IsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max());
    for_each_window(g, [&](int64_t o, const std::vector<int64_t>& offs) {
      const int64_t best = select(x, offs, IsMax);
      y[o] = best < 0 ? T(identity) : x[best];
    });
  });
}

Params with_selection(const Params& p, bool is_max) {
  Params r = p;
  r.set("select_max", is_max);
  return r;
}

template <bool IsMax>
std::vector<Array> window_extremum_jvp(std::span<const Array> x, std::span<const Array> t, std::span<const Array>,
                                       const Params& params, SourceLoc loc) {
  return {bind1(Prim::select_and_gather_add, {t[0], x[0]}, with_selection(params, IsMax), loc)};
}

const Registration reduce_window_max_registration = PrimitiveRules{
    .prim = Prim::reduce_window_max,
    .shape = &window_shape,
    .kernel = &window_extremum_kernel<true>,
    .jvp = &window_extremum_jvp<true>,
    .batch = &window_batch<Prim::reduce_window_max>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

const Registration reduce_window_min_registration = PrimitiveRules{
    .prim = Prim::reduce_window_min,
    .shape = &window_shape,
    .kernel = &window_extremum_kernel<false>,
    .jvp = &window_extremum_jvp<false>,
    .batch = &window_batch<Prim::reduce_window_min>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

// ---- select_and_gather_add / select_and_scatter_add: linear in their first operand ----------------

void check_float_pair(std::span<const AbstractArray> in) {
  strides::expect_operands(in, 2);
  if (in[0].dtype != in[1].dtype || !is_float(in[0].dtype))
    rule_error(ErrorKind::Type, "operands must be floats of one dtype, got " + std::string(dtype_name(in[0].dtype)) +
                                    " and " + std::string(dtype_name(in[1].dtype)));
}

std::vector<AbstractArray> gather_shape(std::span<const AbstractArray> in, const Params& params) {
  check_float_pair(in);
  const Shape out = window_geometry(in[1].shape, params).out;
  if (in[0].shape != in[1].shape)
    rule_error(ErrorKind::Shape, "the tangent " + in[0].shape.str() + " and the operand " + in[1].shape.str() +
                                     " must have one shape");
  return {AbstractArray{out, in[0].dtype, in[0].weak_type}};
}

std::vector<AbstractArray> scatter_shape(std::span<const AbstractArray> in, const Params& params) {
  check_float_pair(in);
  const Shape windows = window_geometry(in[1].shape, params).out;
  if (in[0].shape != windows)
    rule_error(ErrorKind::Shape, "the source " + in[0].shape.str() + " must have the shape of the windows " + windows.str());
  return {AbstractArray{in[1].shape, in[0].dtype, in[0].weak_type}};
}

template <bool Scatter>
void select_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const WindowGeometry g = window_geometry(in[1].shape(), params);
  const bool is_max = params.get_bool("select_max");
  dispatch_dtype(in[0].dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      using C = compute_t<T>;
      const T* t = in[0].as<T>();
      const T* x = in[1].as<T>();
      T* y = out[0].as<T>();
      if constexpr (Scatter) {
        std::vector<C> acc(size_t(out[0].size()), C(0));
        for_each_window(g, [&](int64_t o, const std::vector<int64_t>& offs) {
          const int64_t best = select(x, offs, is_max);
          if (best >= 0) acc[size_t(best)] += C(t[o]);
        });
        for (size_t i = 0; i < acc.size(); ++i) y[i] = T(acc[i]);
      } else {
        for_each_window(g, [&](int64_t o, const std::vector<int64_t>& offs) {
          const int64_t best = select(x, offs, is_max);
          y[o] = best < 0 ? T(C(0)) : t[best];
        });
      }
    }
  });
}

// Linear in the first operand; the second only selects.
template <Prim P>
std::vector<Array> select_jvp(std::span<const Array> x, std::span<const Array> t, std::span<const Array>,
                              const Params& params, SourceLoc loc) {
  if (is_zero(t[0])) return {Array()};
  return {bind1(P, {t[0], x[1]}, params, loc)};
}

template <Prim Other>
std::vector<Array> select_transpose(std::span<const Array> ct, std::span<const LinearArg> a, const Params& params,
                                    SourceLoc loc) {
  if (a[1].linear) throw TypeError("TypeError: transpose of a windowed selection: the selecting operand is linear");
  return {bind1(Other, {ct[0], a[1].value}, params, loc), Array()};
}

const Registration select_and_gather_add_registration = PrimitiveRules{
    .prim = Prim::select_and_gather_add,
    .shape = &gather_shape,
    .kernel = &select_kernel<false>,
    .jvp = &select_jvp<Prim::select_and_gather_add>,
    .transpose = &select_transpose<Prim::select_and_scatter_add>,
    .linear = {.operands = 0b01},
    .batch = &window_batch<Prim::select_and_gather_add>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

const Registration select_and_scatter_add_registration = PrimitiveRules{
    .prim = Prim::select_and_scatter_add,
    .shape = &scatter_shape,
    .kernel = &select_kernel<true>,
    .jvp = &select_jvp<Prim::select_and_scatter_add>,
    .transpose = &select_transpose<Prim::select_and_gather_add>,
    .linear = {.operands = 0b01},
    .batch = &window_batch<Prim::select_and_scatter_add>,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

}  // namespace
}  // namespace fluxion
