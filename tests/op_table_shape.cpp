// Op-table entries of the shape and indexing ops (api/shape_ops.h, api/indexing.h), with host
// references written as plain index arithmetic over HostArray, and focused cases for what the
// table cannot express (lax-style pad with interior and negative padding, duplicate indices).
//
// Samples whose operands are all converted to the dtype under test use values in [0, 101): exact
// in every numeric dtype. Index operands must keep an integer dtype, so entries with indices use
// `fixed_dtype` samples, built once per data dtype (bool included).
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "op_table.h"

namespace optable {
namespace {

// ---- host arrays ------------------------------------------------------------------------------------
int64_t numel(const fx::Shape& s) { return s.numel(); }

std::vector<int64_t> unravel(int64_t i, const fx::Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[size_t(d)] = i % s[size_t(d)];
    i /= s[size_t(d)];
  }
  return idx;
}

int64_t ravel_index(const std::vector<int64_t>& idx, const fx::Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + idx[d];
  return i;
}

// Distinct-looking values in [0, 101), or 0/1 for bool.
HostArray values(fx::Shape shape, fx::DType dtype = fx::float64, int64_t seed = 0) {
  HostArray h{shape, {}, dtype};
  for (int64_t i = 0; i < numel(shape); ++i) {
    const int64_t v = (i * 37 + seed * 11 + 5) % 101;
    h.data.push_back(dtype == fx::bool_ ? double(v % 2) : double(v));
  }
  return h;
}

// Small values (<= 10) for sums that must stay exact in int8 and uint8.
HostArray small_values(fx::Shape shape, fx::DType dtype, int64_t seed = 0) {
  HostArray h{shape, {}, dtype};
  for (int64_t i = 0; i < numel(shape); ++i) {
    const int64_t v = (i * 7 + seed * 3 + 1) % 11;
    h.data.push_back(dtype == fx::bool_ ? double(v % 2) : double(v));
  }
  return h;
}

HostArray ints(fx::Shape shape, std::vector<double> data, fx::DType dtype = fx::int32) {
  return HostArray{std::move(shape), std::move(data), dtype};
}

HostArray with_shape(const HostArray& x, fx::Shape shape, fx::DType dtype) { return HostArray{shape, x.data, dtype}; }

// ---- references ------------------------------------------------------------------------------------
HostArray ref_transpose(const HostArray& x, const std::vector<int64_t>& perm, fx::DType dt) {
  fx::Shape os;
  for (int64_t p : perm) os.push_back(x.shape[size_t(p)]);
  HostArray out{os, std::vector<double>(size_t(numel(os))), dt};
  for (int64_t o = 0; o < numel(os); ++o) {
    std::vector<int64_t> oi = unravel(o, os), ii(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) ii[size_t(perm[d])] = oi[d];
    out.data[size_t(o)] = x.data[size_t(ravel_index(ii, x.shape))];
  }
  return out;
}

HostArray ref_flip(const HostArray& x, const std::vector<int64_t>& axes, fx::DType dt) {
  HostArray out{x.shape, x.data, dt};
  for (int64_t o = 0; o < numel(x.shape); ++o) {
    std::vector<int64_t> ii = unravel(o, x.shape);
    for (int64_t a : axes) ii[size_t(a)] = x.shape[size_t(a)] - 1 - ii[size_t(a)];
    out.data[size_t(o)] = x.data[size_t(ravel_index(ii, x.shape))];
  }
  return out;
}

HostArray ref_concatenate(const std::vector<HostArray>& xs, int64_t axis, fx::DType dt) {
  fx::Shape os = xs[0].shape;
  os[size_t(axis)] = 0;
  for (const HostArray& x : xs) os[size_t(axis)] += x.shape[size_t(axis)];
  HostArray out{os, std::vector<double>(size_t(numel(os))), dt};
  for (int64_t o = 0; o < numel(os); ++o) {
    std::vector<int64_t> idx = unravel(o, os);
    size_t k = 0;
    while (idx[size_t(axis)] >= xs[k].shape[size_t(axis)]) idx[size_t(axis)] -= xs[k++].shape[size_t(axis)];
    out.data[size_t(o)] = xs[k].data[size_t(ravel_index(idx, xs[k].shape))];
  }
  return out;
}

HostArray ref_slice(const HostArray& x, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
                    const std::vector<int64_t>& strides, fx::DType dt) {
  fx::Shape os;
  for (size_t d = 0; d < start.size(); ++d) os.push_back((limit[d] - start[d] + strides[d] - 1) / strides[d]);
  HostArray out{os, {}, dt};
  for (int64_t o = 0; o < numel(os); ++o) {
    std::vector<int64_t> idx = unravel(o, os);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] = start[d] + idx[d] * strides[d];
    out.data.push_back(x.data[size_t(ravel_index(idx, x.shape))]);
  }
  return out;
}

// lax.pad, computed from the output side: an output position maps back to an operand element
// only if it lies on the lattice lo + i * (interior + 1) with 0 <= i < size.
HostArray ref_pad(const HostArray& x, double value, const std::vector<int64_t>& config, fx::DType dt) {
  fx::Shape os;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t n = x.shape[d];
    os.push_back(config[3 * d] + config[3 * d + 1] + n + std::max<int64_t>(n - 1, 0) * config[3 * d + 2]);
  }
  HostArray out{os, {}, dt};
  for (int64_t o = 0; o < numel(os); ++o) {
    std::vector<int64_t> idx = unravel(o, os);
    bool inside = true;
    for (size_t d = 0; d < idx.size() && inside; ++d) {
      const int64_t t = idx[d] - config[3 * d], step = config[3 * d + 2] + 1;
      inside = t >= 0 && t % step == 0 && t / step < x.shape[d];
      idx[d] = inside ? t / step : 0;
    }
    out.data.push_back(inside ? x.data[size_t(ravel_index(idx, x.shape))] : value);
  }
  return out;
}

int64_t wrap_clip(double i, int64_t n) {
  int64_t k = int64_t(i);
  if (k < 0) k += n;
  return std::clamp<int64_t>(k, 0, n - 1);
}

// The first nb dims of x and indices are paired batch dims (take's batch_dims).
HostArray ref_take(const HostArray& x, const HostArray& indices, int64_t axis, fx::DType dt, int64_t nb = 0) {
  fx::Shape os;
  for (int64_t d = 0; d < axis; ++d) os.push_back(x.shape[size_t(d)]);
  for (int d = int(nb); d < indices.shape.rank(); ++d) os.push_back(indices.shape[size_t(d)]);
  for (size_t d = size_t(axis) + 1; d < x.shape.size(); ++d) os.push_back(x.shape[d]);
  HostArray out{os, {}, dt};
  const int ir = indices.shape.rank() - int(nb);
  for (int64_t o = 0; o < numel(os); ++o) {
    std::vector<int64_t> oi = unravel(o, os), xi;
    std::vector<int64_t> ii(oi.begin(), oi.begin() + nb);
    ii.insert(ii.end(), oi.begin() + axis, oi.begin() + axis + ir);
    xi.assign(oi.begin(), oi.begin() + axis);
    xi.push_back(wrap_clip(indices.data[size_t(ravel_index(ii, indices.shape))], x.shape[size_t(axis)]));
    xi.insert(xi.end(), oi.begin() + axis + ir, oi.end());
    out.data.push_back(x.data[size_t(ravel_index(xi, x.shape))]);
  }
  return out;
}

// x.at[indices].set/add(updates) along axis: negative indices wrap, others out of range are dropped.
HostArray ref_scatter(const HostArray& x, const HostArray& indices, const HostArray& updates, int64_t axis, bool add,
                      fx::DType dt, int64_t nb = 0) {
  HostArray out{x.shape, x.data, dt};
  const int ir = indices.shape.rank() - int(nb);
  const int64_t n = x.shape[size_t(axis)];
  for (int64_t u = 0; u < numel(updates.shape); ++u) {
    std::vector<int64_t> ui = unravel(u, updates.shape);
    std::vector<int64_t> ii(ui.begin(), ui.begin() + nb);
    ii.insert(ii.end(), ui.begin() + axis, ui.begin() + axis + ir);
    int64_t k = int64_t(indices.data[size_t(ravel_index(ii, indices.shape))]);
    if (k < 0) k += n;
    if (k < 0 || k >= n) continue;
    std::vector<int64_t> xi(ui.begin(), ui.begin() + axis);
    xi.push_back(k);
    xi.insert(xi.end(), ui.begin() + axis + ir, ui.end());
    double& dst = out.data[size_t(ravel_index(xi, x.shape))];
    const double v = updates.data[size_t(u)];
    dst = !add ? v : dt == fx::bool_ ? double(dst != 0 || v != 0) : dst + v;
  }
  return out;
}

std::vector<int64_t> clamped_starts(const std::vector<HostArray>& args, size_t first, const fx::Shape& x,
                                    const fx::Shape& window) {
  std::vector<int64_t> s;
  for (size_t d = 0; d < x.size(); ++d)
    s.push_back(std::clamp<int64_t>(int64_t(args[first + d].data[0]), 0, x[d] - window[d]));
  return s;
}

HostArray ref_dynamic_slice(const std::vector<HostArray>& a, const std::vector<int64_t>& sizes, fx::DType dt) {
  const fx::Shape window(sizes);
  std::vector<int64_t> start = clamped_starts(a, 1, a[0].shape, window), limit;
  for (size_t d = 0; d < sizes.size(); ++d) limit.push_back(start[d] + sizes[d]);
  return ref_slice(a[0], start, limit, std::vector<int64_t>(sizes.size(), 1), dt);
}

HostArray ref_dynamic_update_slice(const std::vector<HostArray>& a, fx::DType dt) {
  const HostArray &x = a[0], &u = a[1];
  std::vector<int64_t> start = clamped_starts(a, 2, x.shape, u.shape);
  HostArray out{x.shape, x.data, dt};
  for (int64_t i = 0; i < numel(u.shape); ++i) {
    std::vector<int64_t> idx = unravel(i, u.shape);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += start[d];
    out.data[size_t(ravel_index(idx, x.shape))] = u.data[size_t(i)];
  }
  return out;
}

std::vector<fx::DType> all_types() {
  std::vector<fx::DType> t = kNumericTypes;
  t.push_back(fx::bool_);
  return t;
}

Sample sample(std::vector<HostArray> args, std::string label) { return Sample{std::move(args), std::move(label)}; }
Sample fixed(std::vector<HostArray> args, std::string label) { return Sample{std::move(args), std::move(label), true}; }
ErrorSample error(std::vector<HostArray> args, fx::ErrorKind kind, std::string label) {
  return ErrorSample{std::move(args), kind, std::move(label)};
}

// Entries over one data operand: samples for each shape, values converted to each dtype tested.
OpInfo unary_entry(std::string name, std::function<fx::Array(const fx::Array&)> op,
                   std::function<HostArray(const HostArray&, fx::DType)> ref, std::vector<fx::Shape> shapes) {
  OpInfo info;
  info.name = std::move(name);
  info.op = [op](const std::vector<fx::Array>& a) { return op(a[0]); };
  info.reference = [ref](const std::vector<HostArray>& a, fx::DType dt) { return ref(a[0], dt); };
  for (const fx::Shape& s : shapes) info.samples.push_back(sample({values(s)}, "x" + s.str()));
  for (const fx::Shape& s : shapes) info.samples.push_back(fixed({values(s, fx::bool_)}, "bool x" + s.str()));
  info.dtypes = kNumericTypes;
  return info;
}

void add_layout_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape;

  OpInfo reshape = unary_entry(
      "reshape", [](const fx::Array& x) { return fx::reshape(x, {2, -1}); },
      [](const HostArray& x, fx::DType dt) { return with_shape(x, Shape{2, numel(x.shape) / 2}, dt); },
      {Shape{2, 3}, Shape{6}, Shape{0, 4}, Shape{2, 2, 2}});
  reshape.errors = {error({values(Shape{3})}, kShape, "3 elements into (2, -1)"),
                    error({values(Shape{5, 1})}, kShape, "5 elements into (2, -1)")};
  t.push_back(reshape);

  t.push_back(unary_entry(
      "ravel", [](const fx::Array& x) { return fx::ravel(x); },
      [](const HostArray& x, fx::DType dt) { return with_shape(x, Shape{numel(x.shape)}, dt); },
      {Shape{}, Shape{0}, Shape{2, 3}, Shape{2, 1, 3}}));

  // transpose with axes: (2, 0, -2) on rank-3 operands; other ranks cannot take three axes.
  OpInfo transpose = unary_entry(
      "transpose", [](const fx::Array& x) { return fx::transpose(x, {2, 0, -2}); },
      [](const HostArray& x, fx::DType dt) { return ref_transpose(x, {2, 0, 1}, dt); },
      {Shape{2, 3, 4}, Shape{1, 2, 3}, Shape{2, 0, 3}});
  transpose.errors = {error({values(Shape{2, 3})}, kShape, "3 axes for rank 2"),
                      error({values(Shape{})}, kShape, "3 axes for rank 0")};
  t.push_back(transpose);

  t.push_back(unary_entry(
      "transpose_reversed", [](const fx::Array& x) { return fx::transpose(x); },
      [](const HostArray& x, fx::DType dt) {
        std::vector<int64_t> perm;
        for (int d = x.shape.rank() - 1; d >= 0; --d) perm.push_back(d);
        return ref_transpose(x, perm, dt);
      },
      {Shape{}, Shape{3}, Shape{2, 3}, Shape{2, 3, 4}, Shape{0, 3}}));

  OpInfo swapaxes = unary_entry(
      "swapaxes", [](const fx::Array& x) { return fx::swapaxes(x, 0, -1); },
      [](const HostArray& x, fx::DType dt) {
        std::vector<int64_t> perm;
        for (int d = 0; d < x.shape.rank(); ++d) perm.push_back(d);
        std::swap(perm.front(), perm.back());
        return ref_transpose(x, perm, dt);
      },
      {Shape{2, 3}, Shape{2, 3, 4}, Shape{4}, Shape{3, 0}});
  swapaxes.errors = {error({values(Shape{})}, kShape, "axis 0 of a 0-d array")};
  t.push_back(swapaxes);

  OpInfo moveaxis = unary_entry(
      "moveaxis", [](const fx::Array& x) { return fx::moveaxis(x, 0, -1); },
      [](const HostArray& x, fx::DType dt) {
        std::vector<int64_t> perm;
        for (int d = 1; d < x.shape.rank(); ++d) perm.push_back(d);
        perm.push_back(0);
        return ref_transpose(x, perm, dt);
      },
      {Shape{2, 3}, Shape{2, 3, 4}, Shape{4}});
  moveaxis.errors = {error({values(Shape{})}, kShape, "axis 0 of a 0-d array")};
  t.push_back(moveaxis);

  OpInfo expand_dims = unary_entry(
      "expand_dims", [](const fx::Array& x) { return fx::expand_dims(x, 1); },
      [](const HostArray& x, fx::DType dt) {
        Shape s = x.shape;
        s.insert(1, 1);
        return with_shape(x, s, dt);
      },
      {Shape{3}, Shape{2, 3}, Shape{0, 2}});
  expand_dims.errors = {error({values(Shape{})}, kShape, "axis 1 for a result of rank 1")};
  t.push_back(expand_dims);

  OpInfo squeeze = unary_entry(
      "squeeze", [](const fx::Array& x) { return fx::squeeze(x, {0}); },
      [](const HostArray& x, fx::DType dt) { return with_shape(x, Shape(x.shape.begin() + 1, x.shape.end()), dt); },
      {Shape{1}, Shape{1, 3}, Shape{1, 0}, Shape{1, 1, 2}});
  squeeze.errors = {error({values(Shape{3})}, kShape, "axis of size 3"),
                    error({values(Shape{})}, kShape, "axis 0 of a 0-d array")};
  t.push_back(squeeze);

  t.push_back(unary_entry(
      "squeeze_all", [](const fx::Array& x) { return fx::squeeze(x); },
      [](const HostArray& x, fx::DType dt) {
        Shape s;
        for (int64_t d : x.shape)
          if (d != 1) s.push_back(d);
        return with_shape(x, s, dt);
      },
      {Shape{1, 3, 1}, Shape{2, 3}, Shape{}, Shape{1}, Shape{0, 1}}));

  OpInfo flip = unary_entry(
      "flip", [](const fx::Array& x) { return fx::flip(x, {0, -1}); },
      [](const HostArray& x, fx::DType dt) { return ref_flip(x, {0, int64_t(x.shape.rank() - 1)}, dt); },
      {Shape{2, 3}, Shape{2, 3, 4}, Shape{0, 3}});
  flip.errors = {error({values(Shape{3})}, kShape, "axes 0 and -1 are the same axis of a 1-d array"),
                 error({values(Shape{})}, kShape, "axis 0 of a 0-d array")};
  t.push_back(flip);

  t.push_back(unary_entry(
      "flip_all", [](const fx::Array& x) { return fx::flip(x); },
      [](const HostArray& x, fx::DType dt) {
        std::vector<int64_t> all;
        for (int d = 0; d < x.shape.rank(); ++d) all.push_back(d);
        return ref_flip(x, all, dt);
      },
      {Shape{}, Shape{4}, Shape{2, 3}, Shape{0}}));

  OpInfo slice = unary_entry(
      "slice", [](const fx::Array& x) { return fx::slice(x, {0, 1}, {2, 3}); },
      [](const HostArray& x, fx::DType dt) { return ref_slice(x, {0, 1}, {2, 3}, {1, 1}, dt); },
      {Shape{2, 3}, Shape{3, 4}, Shape{2, 5}});
  slice.errors = {error({values(Shape{1, 3})}, kShape, "limit 2 beyond size 1"),
                  error({values(Shape{3})}, kShape, "two bounds for rank 1")};
  t.push_back(slice);

  t.push_back(unary_entry(
      "slice_strided", [](const fx::Array& x) { return fx::slice(x, {0, 1}, {3, 5}, {2, 3}); },
      [](const HostArray& x, fx::DType dt) { return ref_slice(x, {0, 1}, {3, 5}, {2, 3}, dt); },
      {Shape{3, 5}, Shape{4, 6}, Shape{3, 7}}));

  OpInfo pad = unary_entry(
      "pad", [](const fx::Array& x) { return fx::pad(x, {{1, 2}, {0, 1}}, 7); },
      [](const HostArray& x, fx::DType dt) { return ref_pad(x, dt == fx::bool_ ? 1 : 7, {1, 2, 0, 0, 1, 0}, dt); },
      {Shape{2, 3}, Shape{0, 2}, Shape{1, 1}});
  pad.errors = {error({values(Shape{3})}, kShape, "two pad pairs for rank 1")};
  t.push_back(pad);

  t.push_back(unary_entry(
      "pad_every_axis", [](const fx::Array& x) { return fx::pad(x, {{2, 1}}); },
      [](const HostArray& x, fx::DType dt) {
        std::vector<int64_t> config;
        for (int d = 0; d < x.shape.rank(); ++d) config.insert(config.end(), {2, 1, 0});
        return ref_pad(x, 0, config, dt);
      },
      {Shape{}, Shape{3}, Shape{2, 2}, Shape{0}}));

  OpInfo tile = unary_entry(
      "tile", [](const fx::Array& x) { return fx::tile(x, {2, 3}); },
      [](const HostArray& x, fx::DType dt) {
        // x padded to rank >= 2 with leading 1s; out[i] = x[i mod size] on every axis.
        Shape xs = x.shape;
        while (xs.rank() < 2) xs.insert(0, 1);
        Shape os = xs;
        os[os.size() - 2] *= 2;
        os[os.size() - 1] *= 3;
        HostArray out{os, {}, dt};
        for (int64_t o = 0; o < numel(os); ++o) {
          std::vector<int64_t> idx = unravel(o, os);
          for (size_t d = 0; d < idx.size(); ++d) idx[d] %= xs[d];
          out.data.push_back(x.data[size_t(ravel_index(idx, xs))]);
        }
        return out;
      },
      {Shape{}, Shape{3}, Shape{2, 2}, Shape{2, 1, 2}, Shape{0, 2}});
  t.push_back(tile);
}

void add_join_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  OpInfo concatenate;
  concatenate.name = "concatenate";
  concatenate.op = [](const std::vector<fx::Array>& a) { return fx::concatenate(a, 1); };
  concatenate.reference = [](const std::vector<HostArray>& a, fx::DType dt) { return ref_concatenate(a, 1, dt); };
  concatenate.samples = {
      sample({values(Shape{2, 3}), values(Shape{2, 1}, fx::float64, 1)}, "two"),
      sample({values(Shape{2, 0}), values(Shape{2, 2}, fx::float64, 1)}, "empty first"),
      sample({values(Shape{1, 2, 3}), values(Shape{1, 4, 3}, fx::float64, 1), values(Shape{1, 1, 3}, fx::float64, 2)},
             "three"),
      sample({values(Shape{3, 2})}, "one"),
      fixed({values(Shape{2, 2}, fx::bool_), values(Shape{2, 1}, fx::bool_, 1)}, "bool"),
      fixed({values(Shape{2, 2}, fx::int32), values(Shape{2, 1}, fx::float32, 1)}, "int32 and float32 promote"),
  };
  concatenate.dtypes = kNumericTypes;
  concatenate.errors = {
      error({values(Shape{3}), values(Shape{3})}, fx::ErrorKind::Shape, "axis 1 of rank 1"),
      error({values(Shape{2, 3}), values(Shape{3, 3})}, fx::ErrorKind::Shape, "sizes differ off the axis"),
      error({values(Shape{2, 3}), values(Shape{2})}, fx::ErrorKind::Shape, "ranks differ"),
  };
  t.push_back(concatenate);

  OpInfo stack;
  stack.name = "stack";
  stack.op = [](const std::vector<fx::Array>& a) { return fx::stack(a, -1); };
  stack.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    std::vector<HostArray> expanded;
    for (const HostArray& x : a) {
      Shape s = x.shape;
      s.push_back(1);
      expanded.push_back(with_shape(x, s, dt));
    }
    return ref_concatenate(expanded, a[0].shape.rank(), dt);
  };
  stack.samples = {
      sample({values(Shape{2, 3}), values(Shape{2, 3}, fx::float64, 1)}, "matrices"),
      sample({values(Shape{}), values(Shape{}, fx::float64, 1), values(Shape{}, fx::float64, 2)}, "scalars"),
      sample({values(Shape{0}), values(Shape{0})}, "empty"),
      fixed({values(Shape{3}, fx::bool_), values(Shape{3}, fx::bool_, 1)}, "bool"),
  };
  stack.dtypes = kNumericTypes;
  stack.errors = {error({values(Shape{2}), values(Shape{3})}, fx::ErrorKind::Shape, "shapes differ")};
  t.push_back(stack);
}

void add_indexing_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape, kType = fx::ErrorKind::Type;

  OpInfo take;
  take.name = "take";
  take.op = [](const std::vector<fx::Array>& a) { return fx::take(a[0], a[1], -1); };
  take.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    return ref_take(a[0], a[1], a[0].shape.rank() - 1, dt);
  };
  for (fx::DType d : all_types()) {
    const std::string n(fx::dtype_long_name(d));
    take.samples.push_back(fixed({values(Shape{4}, d), ints(Shape{2}, {2, 0})}, n + " vector"));
    take.samples.push_back(
        fixed({values(Shape{2, 5}, d), ints(Shape{2, 3}, {-1, 4, 0, -5, 9, -9})}, n + " wrap and clip"));
  }
  take.samples.push_back(fixed({values(Shape{3, 4}), ints(Shape{}, {1}, fx::int64)}, "0-d int64 index"));
  take.samples.push_back(fixed({values(Shape{3, 4}), ints(Shape{0}, {}, fx::uint8)}, "no indices"));
  take.samples.push_back(fixed({values(Shape{2, 3}), ints(Shape{2}, {-3, 2}, fx::int8)}, "int8 indices"));
  take.dtypes = {fx::float32};
  take.errors = {error({values(Shape{4}), values(Shape{2})}, kType, "float indices"),
                 error({values(Shape{}), ints(Shape{1}, {0})}, kShape, "0-d operand"),
                 error({values(Shape{2, 0}), ints(Shape{1}, {0})}, kShape, "take from an empty axis")};
  t.push_back(take);

  OpInfo take_flat;
  take_flat.name = "take_flat";
  take_flat.op = [](const std::vector<fx::Array>& a) { return fx::take(a[0], a[1]); };
  take_flat.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    return ref_take(with_shape(a[0], Shape{numel(a[0].shape)}, a[0].dtype), a[1], 0, dt);
  };
  take_flat.samples = {fixed({values(Shape{2, 3}), ints(Shape{2, 2}, {5, 0, -1, 3})}, "matrix"),
                       fixed({values(Shape{}), ints(Shape{2}, {0, 0})}, "scalar")};
  take_flat.dtypes = {fx::float32};
  t.push_back(take_flat);

  OpInfo dynamic_slice;
  dynamic_slice.name = "dynamic_slice";
  dynamic_slice.op = [](const std::vector<fx::Array>& a) { return fx::dynamic_slice(a[0], {a[1], a[2]}, {2, 2}); };
  dynamic_slice.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    return ref_dynamic_slice(a, {2, 2}, dt);
  };
  for (fx::DType d : all_types()) {
    const std::string n(fx::dtype_long_name(d));
    dynamic_slice.samples.push_back(fixed({values(Shape{3, 4}, d), ints({}, {1}), ints({}, {2})}, n + " inside"));
    dynamic_slice.samples.push_back(
        fixed({values(Shape{3, 4}, d), ints({}, {-4}), ints({}, {9}, fx::int64)}, n + " clamped"));
  }
  dynamic_slice.samples.push_back(fixed({values(Shape{2, 2}), ints({}, {0}, fx::uint32), ints({}, {7}, fx::uint8)}, "whole"));
  dynamic_slice.dtypes = {fx::float32};
  dynamic_slice.errors = {error({values(Shape{3, 4}), values(Shape{}), ints({}, {0})}, kType, "float start"),
                          error({values(Shape{1, 4}), ints({}, {0}), ints({}, {0})}, kShape, "size 2 > 1"),
                          error({values(Shape{3, 4}), ints(Shape{1}, {0}), ints({}, {0})}, kShape, "1-d start")};
  t.push_back(dynamic_slice);

  OpInfo dynamic_update_slice;
  dynamic_update_slice.name = "dynamic_update_slice";
  dynamic_update_slice.op = [](const std::vector<fx::Array>& a) {
    return fx::dynamic_update_slice(a[0], a[1], {a[2], a[3]});
  };
  dynamic_update_slice.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    return ref_dynamic_update_slice(a, dt);
  };
  for (fx::DType d : all_types()) {
    const std::string n(fx::dtype_long_name(d));
    dynamic_update_slice.samples.push_back(
        fixed({values(Shape{3, 4}, d), values(Shape{2, 2}, d, 3), ints({}, {1}), ints({}, {1})}, n + " inside"));
    dynamic_update_slice.samples.push_back(
        fixed({values(Shape{3, 4}, d), values(Shape{1, 3}, d, 3), ints({}, {5}), ints({}, {-2})}, n + " clamped"));
  }
  dynamic_update_slice.samples.push_back(
      fixed({values(Shape{3, 4}), values(Shape{0, 2}, fx::float64, 3), ints({}, {1}), ints({}, {1})}, "empty update"));
  dynamic_update_slice.dtypes = {fx::float32};
  dynamic_update_slice.errors = {
      error({values(Shape{3, 4}), values(Shape{4, 1}), ints({}, {0}), ints({}, {0})}, kShape, "update too big"),
      error({values(Shape{3, 4}), values(Shape{2}), ints({}, {0}), ints({}, {0})}, kShape, "update rank 1"),
      error({values(Shape{3, 4}), values(Shape{1, 1}), ints({}, {0}), values(Shape{})}, kType, "float start")};
  t.push_back(dynamic_update_slice);

  for (bool add : {false, true}) {
    OpInfo at;
    at.name = add ? "at_add" : "at_set";
    at.op = add ? std::function([](const std::vector<fx::Array>& a) { return fx::at_add(a[0], a[1], a[2], 1); })
                : std::function([](const std::vector<fx::Array>& a) { return fx::at_set(a[0], a[1], a[2], 1); });
    at.reference = [add](const std::vector<HostArray>& a, fx::DType dt) {
      return ref_scatter(a[0], a[1], a[2], 1, add, dt);
    };
    for (fx::DType d : all_types()) {
      const std::string n(fx::dtype_long_name(d));
      // Distinct indices (set is then order-free); -1 wraps to 3; 4 and -6 are dropped.
      at.samples.push_back(fixed({small_values(Shape{2, 4}, d), ints(Shape{4}, {0, -1, 4, -6}),
                                  small_values(Shape{2, 4}, d, 1)},
                                 n + " wrap and drop"));
    }
    // Duplicates accumulate under add.
    if (add)
      at.samples.push_back(fixed({small_values(Shape{2, 3}, fx::int8), ints(Shape{2, 2}, {1, 1, 2, 1}),
                                  small_values(Shape{2, 2, 2}, fx::int8, 2)},
                                 "int8 duplicates"));
    at.samples.push_back(
        fixed({small_values(Shape{2, 3, 2}, fx::float32), ints(Shape{}, {2}, fx::uint8), small_values(Shape{2, 2}, fx::float32, 4)},
              "0-d index"));
    at.samples.push_back(
        fixed({small_values(Shape{2, 3}, fx::float32), ints(Shape{0}, {}), small_values(Shape{2, 0}, fx::float32)}, "no indices"));
    at.dtypes = {fx::float32};
    at.errors = {error({values(Shape{2, 3}), values(Shape{1}), values(Shape{2, 1})}, kType, "float indices"),
                 error({values(Shape{2, 3}), ints(Shape{2}, {0, 1}), values(Shape{3, 2})}, kShape, "updates shape"),
                 error({values(Shape{3}), ints(Shape{1}, {0}), values(Shape{1})}, kShape, "axis 1 of rank 1")};
    t.push_back(at);
  }

  // batch_dims: leading dims of x and indices paired elementwise (what vmap emits).
  OpInfo take_batched;
  take_batched.name = "take_batch_dims";
  take_batched.op = [](const std::vector<fx::Array>& a) { return fx::take(a[0], a[1], 2, 1); };
  take_batched.reference = [](const std::vector<HostArray>& a, fx::DType dt) { return ref_take(a[0], a[1], 2, dt, 1); };
  for (fx::DType d : all_types()) {
    const std::string n(fx::dtype_long_name(d));
    take_batched.samples.push_back(
        fixed({values(Shape{2, 3, 4}, d), ints(Shape{2, 3}, {3, -1, 0, 9, -7, 2})}, n + " per-row, wrap and clip"));
  }
  take_batched.samples.push_back(fixed({values(Shape{3, 2, 5, 2}), ints(Shape{3, 2, 2}, {0, 4, 1, 3, 2, 2, 4, 0, 1, 1, 3, 3})},
                                       "two index dims, trailing dim"));
  take_batched.samples.push_back(fixed({values(Shape{2, 1, 3}), ints(Shape{2}, {2, 0}, fx::uint8)}, "0-d index per row"));
  take_batched.dtypes = {fx::float32};
  // (error messages name the op, "take(": batch_dims errors are tested in test_vmap_indexing.cpp)
  t.push_back(take_batched);

  for (bool add : {false, true}) {
    OpInfo at;
    at.name = add ? "at_add_batch_dims" : "at_set_batch_dims";
    at.op = add ? std::function([](const std::vector<fx::Array>& a) { return fx::at_add(a[0], a[1], a[2], 1, 1); })
                : std::function([](const std::vector<fx::Array>& a) { return fx::at_set(a[0], a[1], a[2], 1, 1); });
    at.reference = [add](const std::vector<HostArray>& a, fx::DType dt) {
      return ref_scatter(a[0], a[1], a[2], 1, add, dt, 1);
    };
    for (fx::DType d : all_types()) {
      const std::string n(fx::dtype_long_name(d));
      // Distinct indices per row; -1 wraps, 4 and -6 are dropped.
      at.samples.push_back(fixed({small_values(Shape{2, 4, 2}, d), ints(Shape{2, 3}, {0, -1, 4, 2, -6, 1}),
                                  small_values(Shape{2, 3, 2}, d, 1)},
                                 n + " per-row, wrap and drop"));
    }
    if (add)
      at.samples.push_back(fixed({small_values(Shape{2, 3}, fx::int8), ints(Shape{2, 3}, {1, 1, 2, 0, 0, 0}),
                                  small_values(Shape{2, 3}, fx::int8, 2)},
                                 "int8 duplicates per row"));
    at.dtypes = {fx::float32};
    t.push_back(at);
  }
}

}  // namespace

void add_shape_ops(std::vector<OpInfo>& t) {
  add_layout_ops(t);
  add_join_ops(t);
  add_indexing_ops(t);
}

// ---- focused tests ---------------------------------------------------------------------------------
namespace {

fx::Array device_array(const HostArray& h, fx::DType dtype) {
  return fx::astype(fx::array(h.data, h.shape), dtype);
}

HostArray host_of(const fx::Array& a) {
  return HostArray{a.shape(), fx::astype(a, fx::float64).to_vector<double>(), a.dtype()};
}

void check_same(const HostArray& got, const HostArray& want, const std::string& what) {
  INFO(what);
  CHECK(got.shape == want.shape);
  CHECK(got.dtype == want.dtype);
  CHECK(got.data == want.data);
}

}  // namespace

// Runs every entry above eagerly and as a traced program (make_ir + eval), against the reference,
// and checks each error sample's kind and message, eagerly and under tracing. (The generic driver
// in tests/test_op_table.cpp runs more properties; this keeps the family's tests self-contained.)
TEST_CASE("shape op table: eager and traced results match the host references") {
  std::vector<OpInfo> table;
  add_shape_ops(table);
  for (const OpInfo& info : table) {
    for (const Sample& s : info.samples) {
      const std::vector<fx::DType> dtypes = s.fixed_dtype ? std::vector<fx::DType>{fx::float64} : info.dtypes;
      for (fx::DType dt : dtypes) {
        std::vector<fx::Array> args;
        for (const HostArray& h : s.args) args.push_back(device_array(h, s.fixed_dtype ? h.dtype : dt));
        const std::string what = info.name + " / " + s.label + " / " + std::string(fx::dtype_name(dt));
        fx::Array eager = info.op(args);
        // The reference sees the operands as the op saw them (bool operands hold 0/1).
        std::vector<HostArray> seen;
        for (const fx::Array& a : args) seen.push_back(host_of(a));
        check_same(host_of(eager), info.reference(seen, eager.dtype()), what + " (eager)");
        fx::Program p = fx::make_ir(info.op)(args);
        fx::verify(p);
        std::ostringstream text;
        text << p;
        CHECK_MESSAGE(!text.str().empty(), what);
        std::vector<fx::Array> traced = fx::eval(p, args);
        REQUIRE(traced.size() == 1);
        check_same(host_of(traced[0]), host_of(eager), what + " (make_ir + eval)\n" + text.str());
      }
    }
    for (const ErrorSample& e : info.errors) {
      std::vector<fx::Array> args;
      for (const HostArray& h : e.args) args.push_back(device_array(h, h.dtype));
      for (bool traced : {false, true}) {
        INFO(info.name << " / " << e.label << (traced ? " (traced)" : " (eager)"));
        bool raised = false;
        try {
          if (traced) fx::make_ir(info.op)(args);
          else info.op(args);
        } catch (const fx::Error& err) {
          raised = true;
          const std::string msg = err.what();
          INFO(msg);
          CHECK(err.kind() == e.kind);
          CHECK(msg.find(info.name + "(") != std::string::npos);
          CHECK(msg.find("op_table_shape.cpp:") != std::string::npos);
        }
        CHECK(raised);
      }
    }
  }
}

TEST_CASE("shape ops: api.md examples") {
  fx::Array a = fx::array({1.f, 2.f, 3.f});
  fx::Array m = fx::array({{1.0, 2.0}, {3.0, 4.0}});
  CHECK(fx::reshape(m, {4}).to_vector<double>() == std::vector<double>{1, 2, 3, 4});
  CHECK(fx::reshape(m, {-1, 1}).shape() == fx::Shape{4, 1});
  CHECK(fx::transpose(m).to_vector<double>() == std::vector<double>{1, 3, 2, 4});
  CHECK(fx::transpose(m, {1, 0}).to_vector<double>() == std::vector<double>{1, 3, 2, 4});
  CHECK(fx::expand_dims(a, 0).shape() == fx::Shape{1, 3});
  CHECK(fx::squeeze(fx::expand_dims(a, 0), {0}).shape() == fx::Shape{3});
  CHECK(fx::concatenate({a, a}, 0).to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  fx::Array st = fx::stack({a, a}, 1);
  CHECK(st.shape() == fx::Shape{3, 2});
  CHECK(st.to_vector<float>() == std::vector<float>{1, 1, 2, 2, 3, 3});
  CHECK(fx::slice(m, {0, 1}, {2, 2}).to_vector<double>() == std::vector<double>{2, 4});
  CHECK(fx::take(a, fx::array({2, 0}), 0).to_vector<float>() == std::vector<float>{3, 1});
  CHECK(fx::dynamic_slice(a, {fx::scalar(1)}, {2}).to_vector<float>() == std::vector<float>{2, 3});
  CHECK(fx::dynamic_update_slice(a, fx::ones({1}), {fx::scalar(0)}).to_vector<float>() ==
        std::vector<float>{1, 2, 3});
  CHECK(fx::dynamic_update_slice(a, fx::zeros({2}), {fx::scalar(5)}).to_vector<float>() ==
        std::vector<float>{1, 0, 0});
  CHECK(fx::pad(a, {{1, 2}}).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 0, 0});
}

TEST_CASE("shape ops: no-ops add no eqns, reshape always binds") {
  fx::Array m = fx::ones({2, 3});
  auto count = [&](auto f) { return fx::make_ir(f)(m).eqns.size(); };
  CHECK(count([](const fx::Array& x) { return fx::transpose(x, {0, 1}); }) == 0);
  CHECK(count([](const fx::Array& x) { return fx::squeeze(x); }) == 0);
  CHECK(count([](const fx::Array& x) { return fx::flip(x, fx::IntList{}); }) == 0);
  CHECK(count([](const fx::Array& x) { return fx::pad(x, {{0, 0}}); }) == 0);
  CHECK(count([](const fx::Array& x) { return fx::reshape(x, {2, 3}); }) == 1);
  CHECK(count([](const fx::Array& x) { return fx::swapaxes(x, 0, 1); }) == 1);
}

TEST_CASE("shape ops: axes and values that numpy rejects") {
  fx::Array m = fx::ones({2, 3});
  CHECK_THROWS_AS(fx::reshape(m, {-1, -1}), fx::ShapeError);
  CHECK_THROWS_AS(fx::reshape(m, {-2, 3}), fx::ShapeError);
  CHECK_THROWS_AS(fx::reshape(m, {0, -1}), fx::ShapeError);
  CHECK_THROWS_AS(fx::transpose(m, {0, 0}), fx::ShapeError);
  CHECK_THROWS_AS(fx::expand_dims(m, 3), fx::ShapeError);
  CHECK(fx::expand_dims(m, -1).shape() == fx::Shape{2, 3, 1});
  CHECK(fx::expand_dims(m, {0, -1}).shape() == fx::Shape{1, 2, 3, 1});
  CHECK_THROWS_AS(fx::pad(m, {{-1, 0}}), fx::ValueError);
  CHECK_THROWS_AS(fx::pad(m, {{1, 0}}, fx::ones({2})), fx::ShapeError);
  CHECK_THROWS_AS(fx::slice(m, {0, 0}, {2, 3}, {1, 0}), fx::ShapeError);
  CHECK_THROWS_AS(fx::concatenate({}, 0), fx::ValueError);
  CHECK_THROWS_AS(fx::concatenate({fx::scalar(1.f), fx::scalar(2.f)}, 0), fx::ShapeError);
  CHECK_THROWS_AS(fx::tile(m, {-1}), fx::ValueError);
  CHECK_THROWS_AS(fx::dynamic_slice(m, {0}, {1, 1}), fx::ShapeError);
  // A C++ integer is an index too.
  CHECK(fx::dynamic_slice(m, {1, 1}, {1, 2}).shape() == fx::Shape{1, 2});
  CHECK(fx::take(fx::arange(5), 7).item<int32_t>() == 4);
  CHECK(fx::at_set(fx::arange(3), 1, 9).to_vector<int32_t>() == std::vector<int32_t>{0, 9, 2});
  CHECK(fx::at_add(fx::zeros({3}), fx::array({0, 0, 2}), 1.f).to_vector<float>() == std::vector<float>{2, 0, 1});
}

TEST_CASE("shape ops: an int8 index into a long axis wraps without overflow") {
  fx::Array x = fx::arange(300);
  fx::Array i = fx::array(std::vector<int8_t>{-1, -100});
  CHECK(fx::take(x, i, 0).to_vector<int32_t>() == std::vector<int32_t>{299, 200});
  // Traced indices are wrapped by staged ops, widened first.
  fx::Program p = fx::make_ir([](const fx::Array& a, const fx::Array& k) { return fx::take(a, k, 0); })(x, i);
  CHECK(fx::eval(p, {x, i})[0].to_vector<int32_t>() == std::vector<int32_t>{299, 200});
}

// lax.pad's interior and negative padding are reachable only through the primitive.
TEST_CASE("pad primitive: interior and negative padding match lax.pad, eagerly and traced") {
  struct Case {
    fx::Shape shape;
    std::vector<int64_t> config;
  };
  const std::vector<Case> cases = {
      {{4}, {1, 2, 1}},          {{4}, {-1, -2, 0}},       {{4}, {-2, 1, 2}},  {{2, 3}, {0, -1, 1, 2, -3, 1}},
      {{3}, {-3, -4, 2}},        {{0}, {1, 1, 3}},         {{}, {}},           {{1, 2}, {0, 0, 5, 1, 0, 0}},
  };
  for (const Case& c : cases) {
    for (fx::DType dt : {fx::float32, fx::int8, fx::bfloat16, fx::bool_}) {
      const HostArray h = values(c.shape, dt);
      fx::Array x = device_array(h, dt);
      fx::Array v = fx::astype(fx::scalar(dt == fx::bool_ ? 1.0 : 9.0), dt);
      const fx::Params params{{"padding_config", c.config}};
      const HostArray want = ref_pad(host_of(x), dt == fx::bool_ ? 1 : 9, c.config, dt);
      INFO(c.shape.str() << " " << fx::dtype_name(dt));
      check_same(host_of(fx::bind1(fx::Prim::pad, {x, v}, params, {})), want, "eager");
      fx::Program p = fx::make_ir([&](const fx::Array& a, const fx::Array& b) {
        return fx::bind1(fx::Prim::pad, {a, b}, params, {});
      })(x, v);
      check_same(host_of(fx::eval(p, {x, v})[0]), want, "traced");
    }
  }
  fx::Array x = fx::ones({3});
  const fx::Array v = fx::scalar(0.f);
  CHECK_THROWS_AS(fx::bind1(fx::Prim::pad, {x, v}, fx::Params{{"padding_config", std::vector<int64_t>{-2, -2, 0}}}, {}),
                  fx::ShapeError);
  CHECK_THROWS_AS(fx::bind1(fx::Prim::pad, {x, v}, fx::Params{{"padding_config", std::vector<int64_t>{0, 0, -1}}}, {}),
                  fx::ShapeError);
  CHECK_THROWS_AS(fx::bind1(fx::Prim::pad, {x, fx::scalar(0.0)}, fx::Params{{"padding_config", std::vector<int64_t>{0, 0, 0}}}, {}),
                  fx::TypeError);
}

// Checks the primitive-level rules that the API never lets through, so a hand-written or parsed
// program with them is rejected rather than run.
TEST_CASE("shape and indexing primitives reject malformed params") {
  fx::Array m = fx::ones({2, 3});
  fx::Array i0 = fx::scalar(0);
  auto bind = [](fx::Prim p, std::vector<fx::Array> in, const fx::Params& params) {
    return fx::bind1(p, in, params, {});
  };
  using L = std::vector<int64_t>;
  CHECK_THROWS_AS(bind(fx::Prim::reshape, {m}, {{"new_sizes", L{5}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::reshape, {m}, {{"new_sizes", L{-6, -1}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::transpose, {m}, {{"permutation", L{1, 1}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::squeeze, {m}, {{"dimensions", L{0}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::rev, {m}, {{"dimensions", L{2}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::concatenate, {m, fx::ones({2, 3}, fx::float64)}, {{"dimension", int64_t(0)}}),
                  fx::TypeError);
  CHECK_THROWS_AS(bind(fx::Prim::slice, {m},
                       {{"start_indices", L{1, 0}}, {"limit_indices", L{0, 3}}, {"strides", L{1, 1}}}),
                  fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::dynamic_slice, {m, i0}, {{"slice_sizes", L{1, 1}}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::dynamic_update_slice, {m, fx::ones({1, 1}, fx::float64), i0, i0}, {}), fx::TypeError);
  CHECK_THROWS_AS(bind(fx::Prim::gather, {m, fx::array({0})}, {{"axis", int64_t(2)}}), fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::scatter, {m, fx::array({0}), fx::ones({2, 2})}, {{"axis", int64_t(1)}}),
                  fx::ShapeError);
  CHECK_THROWS_AS(bind(fx::Prim::scatter_add, {m, fx::array({0.f}), fx::ones({2, 1})}, {{"axis", int64_t(1)}}),
                  fx::TypeError);
  // Slices with absent strides step by one.
  CHECK(bind(fx::Prim::slice, {fx::arange(5)}, {{"start_indices", L{1}}, {"limit_indices", L{4}}})
            .to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3});
  // Scatter with a repeated index: the last update in row-major order wins.
  CHECK(bind(fx::Prim::scatter, {fx::zeros({2}), fx::array({1, 1}), fx::array({5.f, 7.f})}, {{"axis", int64_t(0)}})
            .to_vector<float>() == std::vector<float>{0, 7});
}

}  // namespace optable
