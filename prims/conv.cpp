// conv_general_dilated[window_strides padding lhs_dilation rhs_dilation lhs_spec rhs_spec out_spec
// feature_group_count batch_group_count preferred_element_type?] lhs rhs (lax.conv_general_dilated):
// an n-D convolution (cross-correlation, as in every deep-learning framework) of any layout, with
// strides, explicit padding (negative crops), input and kernel dilation, feature groups (depthwise
// when there is one input feature per group) and batch groups. prims/conv_geometry.h has the
// params' meaning and checks.
//
// The derivatives follow JAX's: the convolution is bilinear, and its transpose with respect to
// either operand is another convolution (the input gradient correlates the cotangent with the
// reversed kernel, strides becoming input dilation; the kernel gradient correlates the input with
// the cotangent, strides becoming kernel dilation), with the specs swapped so that no operand is
// ever transposed in memory. Batching folds the vmapped dim into the batch dim, the output-feature
// dim or the groups. The jit calls kernels/conv.cpp (im2col + the ISA-dispatched GEMM).
#include <algorithm>
#include <numeric>

#include "lax/lax.h"
#include "prims/conv_geometry.h"
#include "prims/registry.h"

namespace fluxion {
namespace {

using conv::ConvParams;

// ---- shape ----------------------------------------------------------------------------------------

std::vector<AbstractArray> conv_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands, got " + std::to_string(in.size()));
  const AbstractArray &lhs = in[0], &rhs = in[1];
  if (lhs.dtype != rhs.dtype)
    rule_error(ErrorKind::Type, "operands must have the same dtype, got " + std::string(dtype_name(lhs.dtype)) +
                                    " and " + std::string(dtype_name(rhs.dtype)));
  if (is_bool(lhs.dtype)) rule_error(ErrorKind::Type, "operands must be numbers, got bool");
  Shape out;
  conv::conv_geometry(lhs.shape, rhs.shape, conv::conv_params(params), &out);
  DType d = lhs.dtype;
  bool weak = lhs.weak_type && rhs.weak_type;
  if (params.has("preferred_element_type")) {
    d = params.get_dtype("preferred_element_type");
    weak = false;
    if (is_float(lhs.dtype) != is_float(d) || is_bool(d))
      rule_error(ErrorKind::Type, "preferred_element_type " + std::string(dtype_name(d)) + " does not suit " +
                                      std::string(dtype_name(lhs.dtype)) + " operands");
  }
  return {AbstractArray{out, d, weak}};
}

// ---- reference kernel -----------------------------------------------------------------------------
// Per output row (batch, feature): for each input feature of its group and each kernel offset, one
// multiply-add over every output position through the window table. Floats accumulate in float
// (double for float64 operands or output), integers in uint64, wrapping as the output type would.

template <class In, class Out>
using conv_acc_t = std::conditional_t<std::is_same_v<In, double> || std::is_same_v<Out, double>, double,
                                      std::conditional_t<std::is_integral_v<compute_t<In>>, uint64_t, float>>;

template <class Acc, class T>
Acc to_acc(T v) {
  if constexpr (std::is_same_v<Acc, uint64_t> && std::is_signed_v<T>) return uint64_t(int64_t(v));
  else return static_cast<Acc>(static_cast<compute_t<T>>(v));
}

template <class In, class Out>
void conv_loop(const In* x, const In* w, Out* y, const conv::ConvGeometry& g) {
  using Acc = conv_acc_t<In, Out>;
  const std::vector<int64_t> table = conv::window_offsets(g), koff = conv::kernel_offsets(g),
                             yoff = conv::output_offsets(g);
  const int64_t K = g.k_size(), P = g.out_size();
  const int64_t o_per_group = g.o / g.groups, o_per_batch_group = g.o / g.batch_groups;
  std::vector<Acc> acc(static_cast<size_t>(P));
  for (int64_t n = 0; n < g.out_n; ++n)
    for (int64_t o = 0; o < g.o; ++o) {
      std::fill(acc.begin(), acc.end(), Acc(0));
      const int64_t group = o / o_per_group, n_in = (o / o_per_batch_group) * g.out_n + n;
      for (int64_t i = 0; i < g.ci; ++i) {
        const In* xi = x + n_in * g.x_n + (group * g.ci + i) * g.x_c;
        const In* wi = w + o * g.w_o + i * g.w_i;
        for (int64_t k = 0; k < K; ++k) {
          const Acc wk = to_acc<Acc>(wi[koff[size_t(k)]]);
          const int64_t* t = table.data() + k * P;
          for (int64_t p = 0; p < P; ++p)
            if (t[p] >= 0) acc[size_t(p)] += wk * to_acc<Acc>(xi[t[p]]);
        }
      }
      Out* yo = y + n * g.y_n + o * g.y_c;
      for (int64_t p = 0; p < P; ++p) {
        if constexpr (std::is_same_v<Out, float16_t> || std::is_same_v<Out, bfloat16_t>) yo[yoff[size_t(p)]] = Out(float(acc[size_t(p)]));
        else yo[yoff[size_t(p)]] = static_cast<Out>(acc[size_t(p)]);
      }
    }
}

void conv_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  if (out[0].size() == 0) return;
  const conv::ConvGeometry g = conv::conv_geometry(in[0].shape(), in[1].shape(), conv::conv_params(params));
  dispatch_dtype(in[0].dtype(), [&](auto xv) {
    using In = decltype(xv);
    dispatch_dtype(out[0].dtype(), [&](auto yv) {
      using Out = decltype(yv);
      if constexpr (!std::is_same_v<In, bool> && !std::is_same_v<Out, bool>)
        conv_loop<In, Out>(in[0].as<In>(), in[1].as<In>(), out[0].as<Out>(), g);
    });
  });
}

// ---- helpers of the rules -------------------------------------------------------------------------

Array conv(const Array& lhs, const Array& rhs, const ConvParams& c, const Params& like, SourceLoc loc) {
  Params p = conv::to_params(c);
  if (like.has("preferred_element_type")) p.set("preferred_element_type", like.get_dtype("preferred_element_type"));
  return bind1(Prim::conv_general_dilated, {lhs, rhs}, p, loc);
}

// jax's _reshape_axis_out_of: dim `src` of size s becomes two dims (size1, s / size1) at src, src+1.
Array split_dim(const Array& x, int64_t src, int64_t size1) {
  Shape s = x.shape();
  std::vector<int64_t> d = s.dims();
  const int64_t n = d[size_t(src)];
  d[size_t(src)] = n / size1;
  d.insert(d.begin() + src, size1);
  return lax::reshape(x, Shape(d));
}

// jax's _reshape_axis_into: dim `src` merges into dim `dst` (numbered without src) as its major part.
Array merge_dim(const Array& x, int64_t src, int64_t dst) {
  const int64_t rank = x.ndim();
  IntList perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  Array t = x;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (!identity) t = lax::transpose(x, perm);
  std::vector<int64_t> d;
  const std::vector<int64_t> xs = x.shape().dims();
  for (int64_t i = 0; i < rank; ++i)
    if (i != src) d.push_back(xs[size_t(i)]);
  d[size_t(dst)] *= xs[size_t(src)];
  return lax::reshape(t, Shape(d));
}

IntList swap_roles(const IntList& spec) {
  IntList s = spec;
  std::swap(s[0], s[1]);
  return s;
}

IntList spatial_of(const IntList& spec) { return IntList(spec.begin() + 2, spec.end()); }

// ---- derivatives ----------------------------------------------------------------------------------

std::vector<Array> conv_jvp(std::span<const Array> x, std::span<const Array> t, std::span<const Array>,
                            const Params& params, SourceLoc loc) {
  const ConvParams c = conv::conv_params(params);
  Array da = is_zero(t[0]) ? Array() : conv(t[0], x[1], c, params, loc);
  Array db = is_zero(t[1]) ? Array() : conv(x[0], t[1], c, params, loc);
  return {add_tangents(da, db, loc)};
}

// The cotangent of lhs: the cotangent convolved with the reversed kernel, roles of its features
// swapped; the forward strides dilate the cotangent and the forward input dilation strides it.
Array transpose_lhs(const Array& ct, const AbstractArray& lhs, const Array& rhs_in, const ConvParams& f, SourceLoc loc) {
  const conv::ConvGeometry g = conv::conv_geometry(lhs.shape, rhs_in.shape(), f);
  Array rhs = rhs_in;
  ConvParams t = f;
  t.batch_group_count = 1;
  const int64_t groups = std::max(f.feature_group_count, f.batch_group_count);
  if (groups > 1) {  // move the groups from the kernel's output features into its input features
    rhs = split_dim(rhs, f.rhs_spec[0], groups);
    rhs = merge_dim(rhs, f.rhs_spec[0], f.rhs_spec[1]);
    t.feature_group_count = groups;
  }
  t.lhs_spec = f.out_spec;
  t.rhs_spec = swap_roles(f.rhs_spec);
  t.out_spec = f.lhs_spec;
  t.window_strides = f.lhs_dilation;
  t.lhs_dilation = f.window_strides;
  t.padding = conv::input_gradient_padding(g.in_sp, g.k_sp, g.out_sp, g.stride, f.padding, g.lhs_dil, g.rhs_dil);
  Array g_in = lax::convert(ct, rhs.dtype(), rhs.weak_type());
  Array r = conv(g_in, bind1(Prim::rev, {rhs}, Params{{"dimensions", spatial_of(f.rhs_spec)}}, loc), t, Params{}, loc);
  if (f.batch_group_count > 1) {  // the batch groups came out as features: put them back
    r = split_dim(r, f.lhs_spec[1], f.batch_group_count);
    r = merge_dim(r, f.lhs_spec[1], f.lhs_spec[0]);
  }
  return lax::convert(r, lhs.dtype, lhs.weak_type);
}

// The cotangent of rhs: the input convolved with the cotangent, each with batch and feature roles
// swapped; feature groups become batch groups and back.
Array transpose_rhs(const Array& ct, const Array& lhs, const AbstractArray& rhs, const ConvParams& f, SourceLoc loc) {
  const conv::ConvGeometry g = conv::conv_geometry(lhs.shape(), rhs.shape, f);
  ConvParams t = f;
  t.feature_group_count = f.batch_group_count;
  t.batch_group_count = f.feature_group_count;
  t.lhs_spec = swap_roles(f.lhs_spec);
  t.rhs_spec = swap_roles(f.out_spec);
  t.out_spec = swap_roles(f.rhs_spec);
  t.window_strides = f.rhs_dilation;
  t.rhs_dilation = f.window_strides;
  t.padding = conv::kernel_gradient_padding(g.in_sp, g.k_sp, g.out_sp, g.stride, f.padding, g.lhs_dil, g.rhs_dil);
  Array g_in = lax::convert(ct, lhs.dtype(), lhs.weak_type());
  return lax::convert(conv(lhs, g_in, t, Params{}, loc), rhs.dtype, rhs.weak_type);
}

std::vector<Array> conv_transpose(std::span<const Array> ct, std::span<const LinearArg> a, const Params& params,
                                  SourceLoc loc) {
  if (a[0].linear && a[1].linear)
    throw TypeError("TypeError: transpose of conv_general_dilated: both operands are linear (the program is not linear)");
  const ConvParams f = conv::conv_params(params);
  if (ct[0].size() == 0) return {a[0].linear ? lax::zeros(a[0].aval) : Array(), a[1].linear ? lax::zeros(a[1].aval) : Array()};
  if (a[0].linear) return {transpose_lhs(ct[0], a[0].aval, a[1].value, f, loc), Array()};
  return {Array(), transpose_rhs(ct[0], a[0].value, a[1].aval, f, loc)};
}

// ---- batching (jax's _conv_general_dilated_batch_rule) --------------------------------------------
// Dims in the specs are the unbatched operand's; merge_dim's destination is numbered without the
// batch dim, so the specs index it directly.

std::vector<BatchedArray> conv_batch(std::span<const BatchedArray> a, const Params& params, int64_t axis_size,
                                     SourceLoc loc) {
  ConvParams c = conv::conv_params(params);
  const int64_t lb = a[0].dim, rb = a[1].dim;
  const Array &lhs = a[0].value, &rhs = a[1].value;
  const IntList &ls = c.lhs_spec, &rs = c.rhs_spec, &os = c.out_spec;
  if (lb != kNotMapped && rb != kNotMapped) {
    Array new_lhs;
    if (c.batch_group_count > 1) {
      new_lhs = merge_dim(lhs, lb, ls[0]);
      c.batch_group_count *= axis_size;
    } else {
      new_lhs = merge_dim(lhs, lb, ls[1]);
      c.feature_group_count *= axis_size;
    }
    Array out = conv(new_lhs, merge_dim(rhs, rb, rs[0]), c, params, loc);
    return {BatchedArray{split_dim(out, os[1], axis_size), os[1]}};
  }
  if (lb != kNotMapped) {
    Array new_lhs;
    if (c.batch_group_count == 1) {
      new_lhs = merge_dim(lhs, lb, ls[0]);
    } else {  // the groups stay outermost in the batch dim: split them out, fold the vmapped dim in
      new_lhs = split_dim(lhs, ls[0] + (lb <= ls[0] ? 1 : 0), c.batch_group_count);
      new_lhs = merge_dim(new_lhs, lb + (ls[0] < lb ? 1 : 0), ls[0] + 1);
      new_lhs = merge_dim(new_lhs, ls[0], ls[0]);
    }
    Array out = conv(new_lhs, rhs, c, params, loc);
    return {BatchedArray{split_dim(out, os[0], axis_size), os[0]}};
  }
  if (c.feature_group_count == 1 && c.batch_group_count == 1) {
    Array out = conv(lhs, merge_dim(rhs, rb, rs[0]), c, params, loc);
    return {BatchedArray{split_dim(out, os[1], axis_size), os[1]}};
  }
  const int64_t groups = std::max(c.feature_group_count, c.batch_group_count);
  Array new_rhs = split_dim(rhs, rs[0] + (rb <= rs[0] ? 1 : 0), groups);
  new_rhs = merge_dim(new_rhs, rb + (rs[0] < rb ? 1 : 0), rs[0] + 1);
  new_rhs = merge_dim(new_rhs, rs[0], rs[0]);
  Array out = conv(lhs, new_rhs, c, params, loc);
  out = split_dim(out, os[1], groups);
  out = split_dim(out, os[1] + 1, axis_size);
  return {BatchedArray{merge_dim(out, os[1], os[1] + 1), os[1]}};
}

const Registration conv_general_dilated_registration = PrimitiveRules{
    .prim = Prim::conv_general_dilated,
    .shape = &conv_shape,
    .kernel = &conv_kernel,
    .jvp = &conv_jvp,
    .transpose = &conv_transpose,
    .linear = {.operands = 0b11, .one_at_a_time = true},
    .batch = &conv_batch,
    .gpu = GpuLowering::generic,
    .reads = Reads::whole,
};

}  // namespace
}  // namespace fluxion
