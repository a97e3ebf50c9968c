// Op-table entries of the shape ops (api/shape_ops.h), with host references written as plain index
// arithmetic over HostArray, and entries of the pad primitive itself (lax-style interior and
// negative padding, which the API does not reach). The indexing ops: tests/op_table_indexing.cpp.
// Focused tests of the family: tests/test_shape.cpp.
//
// Samples whose operands are all converted to the dtype under test use values in [0, 101): exact
// in every numeric dtype; bool operands come as `fixed` samples.
#include <algorithm>
#include <sstream>

#include "op_table.h"

namespace optable {
namespace {

// ---- host arrays ------------------------------------------------------------------------------------
int64_t numel(const fx::Shape& s) { return s.numel(); }

// ---- references ------------------------------------------------------------------------------------
HostArray ref_transpose(const HostArray& x, const std::vector<int64_t>& perm, fx::DType dt) {
  fx::Shape os;
  for (int64_t p : perm) os.push_back(x.shape[size_t(p)]);
  HostArray out{os, std::vector<double>(size_t(numel(os))), dt};
  for (int64_t o = 0; o < numel(os); ++o) {
    std::vector<int64_t> oi = unravel(o, os), ii(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) ii[size_t(perm[d])] = oi[d];
    out.data[size_t(o)] = x.data[size_t(ravel(ii, x.shape))];
  }
  return out;
}

HostArray ref_flip(const HostArray& x, const std::vector<int64_t>& axes, fx::DType dt) {
  HostArray out{x.shape, x.data, dt};
  for (int64_t o = 0; o < numel(x.shape); ++o) {
    std::vector<int64_t> ii = unravel(o, x.shape);
    for (int64_t a : axes) ii[size_t(a)] = x.shape[size_t(a)] - 1 - ii[size_t(a)];
    out.data[size_t(o)] = x.data[size_t(ravel(ii, x.shape))];
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
    out.data[size_t(o)] = xs[k].data[size_t(ravel(idx, xs[k].shape))];
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
    out.data.push_back(x.data[size_t(ravel(idx, x.shape))]);
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
    out.data.push_back(inside ? x.data[size_t(ravel(idx, x.shape))] : value);
  }
  return out;
}


Sample sample(std::vector<HostArray> args, std::string label) { return Sample{std::move(args), std::move(label)}; }

// Entries over one data operand: samples for each shape, values converted to each dtype tested.
OpInfo unary_entry(std::string name, std::function<fx::Array(const fx::Array&)> op,
                   std::function<HostArray(const HostArray&, fx::DType)> ref, std::vector<fx::Shape> shapes) {
  OpInfo info;
  info.name = std::move(name);
  info.op = [op](const std::vector<fx::Array>& a) { return op(a[0]); };
  info.reference = [ref](const std::vector<HostArray>& a, fx::DType dt) { return ref(a[0], dt); };
  for (const fx::Shape& s : shapes) info.samples.push_back(sample({distinct_values(s)}, "x" + s.str()));
  for (const fx::Shape& s : shapes) info.samples.push_back(fixed({distinct_values(s, fx::bool_)}, "bool x" + s.str()));
  info.dtypes = kNumericTypes;
  return info;
}

void add_reshape_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape;

  OpInfo reshape = unary_entry(
      "reshape", [](const fx::Array& x) { return fx::reshape(x, {2, -1}); },
      [](const HostArray& x, fx::DType dt) { return with_shape(x, Shape{2, numel(x.shape) / 2}, dt); },
      {Shape{2, 3}, Shape{6}, Shape{0, 4}, Shape{2, 2, 2}});
  reshape.errors = {error_sample({distinct_values(Shape{3})}, kShape, "3 elements into (2, -1)"),
                    error_sample({distinct_values(Shape{5, 1})}, kShape, "5 elements into (2, -1)")};
  t.push_back(reshape);

  t.push_back(unary_entry(
      "ravel", [](const fx::Array& x) { return fx::ravel(x); },
      [](const HostArray& x, fx::DType dt) { return with_shape(x, Shape{numel(x.shape)}, dt); },
      {Shape{}, Shape{0}, Shape{2, 3}, Shape{2, 1, 3}}));

}

void add_axis_order_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape;

  // transpose with axes: (2, 0, -2) on rank-3 operands; other ranks cannot take three axes.
  OpInfo transpose = unary_entry(
      "transpose", [](const fx::Array& x) { return fx::transpose(x, {2, 0, -2}); },
      [](const HostArray& x, fx::DType dt) { return ref_transpose(x, {2, 0, 1}, dt); },
      {Shape{2, 3, 4}, Shape{1, 2, 3}, Shape{2, 0, 3}});
  transpose.errors = {error_sample({distinct_values(Shape{2, 3})}, kShape, "3 axes for rank 2"),
                      error_sample({distinct_values(Shape{})}, kShape, "3 axes for rank 0")};
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
  swapaxes.errors = {error_sample({distinct_values(Shape{})}, kShape, "axis 0 of a 0-d array")};
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
  moveaxis.errors = {error_sample({distinct_values(Shape{})}, kShape, "axis 0 of a 0-d array")};
  t.push_back(moveaxis);

}

void add_rank_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape;

  OpInfo expand_dims = unary_entry(
      "expand_dims", [](const fx::Array& x) { return fx::expand_dims(x, 1); },
      [](const HostArray& x, fx::DType dt) {
        Shape s = x.shape;
        s.insert(1, 1);
        return with_shape(x, s, dt);
      },
      {Shape{3}, Shape{2, 3}, Shape{0, 2}});
  expand_dims.errors = {error_sample({distinct_values(Shape{})}, kShape, "axis 1 for a result of rank 1")};
  t.push_back(expand_dims);

  OpInfo squeeze = unary_entry(
      "squeeze", [](const fx::Array& x) { return fx::squeeze(x, {0}); },
      [](const HostArray& x, fx::DType dt) { return with_shape(x, Shape(x.shape.begin() + 1, x.shape.end()), dt); },
      {Shape{1}, Shape{1, 3}, Shape{1, 0}, Shape{1, 1, 2}});
  squeeze.errors = {error_sample({distinct_values(Shape{3})}, kShape, "axis of size 3"),
                    error_sample({distinct_values(Shape{})}, kShape, "axis 0 of a 0-d array")};
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

}

void add_reverse_slice_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape;

  OpInfo flip = unary_entry(
      "flip", [](const fx::Array& x) { return fx::flip(x, {0, -1}); },
      [](const HostArray& x, fx::DType dt) { return ref_flip(x, {0, int64_t(x.shape.rank() - 1)}, dt); },
      {Shape{2, 3}, Shape{2, 3, 4}, Shape{0, 3}});
  flip.errors = {error_sample({distinct_values(Shape{3})}, kShape, "axes 0 and -1 are the same axis of a 1-d array"),
                 error_sample({distinct_values(Shape{})}, kShape, "axis 0 of a 0-d array")};
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
  slice.errors = {error_sample({distinct_values(Shape{1, 3})}, kShape, "limit 2 beyond size 1"),
                  error_sample({distinct_values(Shape{3})}, kShape, "two bounds for rank 1")};
  t.push_back(slice);

  t.push_back(unary_entry(
      "slice_strided", [](const fx::Array& x) { return fx::slice(x, {0, 1}, {3, 5}, {2, 3}); },
      [](const HostArray& x, fx::DType dt) { return ref_slice(x, {0, 1}, {3, 5}, {2, 3}, dt); },
      {Shape{3, 5}, Shape{4, 6}, Shape{3, 7}}));

}

void add_pad_tile_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape;

  OpInfo pad = unary_entry(
      "pad", [](const fx::Array& x) { return fx::pad(x, {{1, 2}, {0, 1}}, 7); },
      [](const HostArray& x, fx::DType dt) { return ref_pad(x, dt == fx::bool_ ? 1 : 7, {1, 2, 0, 0, 1, 0}, dt); },
      {Shape{2, 3}, Shape{0, 2}, Shape{1, 1}});
  pad.errors = {error_sample({distinct_values(Shape{3})}, kShape, "two pad pairs for rank 1")};
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
          out.data.push_back(x.data[size_t(ravel(idx, xs))]);
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
      sample({distinct_values(Shape{2, 3}), distinct_values(Shape{2, 1}, fx::float64, 1)}, "two"),
      sample({distinct_values(Shape{2, 0}), distinct_values(Shape{2, 2}, fx::float64, 1)}, "empty first"),
      sample({distinct_values(Shape{1, 2, 3}), distinct_values(Shape{1, 4, 3}, fx::float64, 1), distinct_values(Shape{1, 1, 3}, fx::float64, 2)},
             "three"),
      sample({distinct_values(Shape{3, 2})}, "one"),
      fixed({distinct_values(Shape{2, 2}, fx::bool_), distinct_values(Shape{2, 1}, fx::bool_, 1)}, "bool"),
      fixed({distinct_values(Shape{2, 2}, fx::int32), distinct_values(Shape{2, 1}, fx::float32, 1)}, "int32 and float32 promote"),
  };
  concatenate.dtypes = kNumericTypes;
  concatenate.errors = {
      error_sample({distinct_values(Shape{3}), distinct_values(Shape{3})}, fx::ErrorKind::Shape, "axis 1 of rank 1"),
      error_sample({distinct_values(Shape{2, 3}), distinct_values(Shape{3, 3})}, fx::ErrorKind::Shape, "sizes differ off the axis"),
      error_sample({distinct_values(Shape{2, 3}), distinct_values(Shape{2})}, fx::ErrorKind::Shape, "ranks differ"),
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
      sample({distinct_values(Shape{2, 3}), distinct_values(Shape{2, 3}, fx::float64, 1)}, "matrices"),
      sample({distinct_values(Shape{}), distinct_values(Shape{}, fx::float64, 1), distinct_values(Shape{}, fx::float64, 2)}, "scalars"),
      sample({distinct_values(Shape{0}), distinct_values(Shape{0})}, "empty"),
      fixed({distinct_values(Shape{3}, fx::bool_), distinct_values(Shape{3}, fx::bool_, 1)}, "bool"),
  };
  stack.dtypes = kNumericTypes;
  stack.errors = {error_sample({distinct_values(Shape{2}), distinct_values(Shape{3})}, fx::ErrorKind::Shape, "shapes differ")};
  t.push_back(stack);
}

}  // namespace

namespace {
// lax.pad's interior and negative padding, reachable only through the primitive: one entry per
// padding config, over operands of several dtypes (bool included).
void add_pad_primitive_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  struct Case {
    Shape shape;
    std::vector<int64_t> config;
  };
  const std::vector<Case> cases = {
      {{4}, {1, 2, 1}},   {{4}, {-1, -2, 0}}, {{4}, {-2, 1, 2}}, {{2, 3}, {0, -1, 1, 2, -3, 1}},
      {{3}, {-3, -4, 2}}, {{0}, {1, 1, 3}},   {{}, {}},          {{1, 2}, {0, 0, 5, 1, 0, 0}},
  };
  for (const Case& c : cases) {
    OpInfo info;
    info.name = "pad primitive " + c.shape.str();
    for (int64_t v : c.config) info.name += " " + std::to_string(v);
    const fx::Params params{{"padding_config", c.config}};
    info.op = [params](const std::vector<fx::Array>& a) {
      return fx::bind1(fx::Prim::pad, {a[0], a[1]}, params, std::source_location::current());
    };
    const std::vector<int64_t> config = c.config;
    info.reference = [config](const std::vector<HostArray>& a, fx::DType dt) {
      return ref_pad(a[0], a[1].data[0], config, dt);
    };
    for (fx::DType d : {fx::float32, fx::int8, fx::bfloat16, fx::bool_})
      info.samples.push_back(fixed({distinct_values(c.shape, d), HostArray{Shape{}, {d == fx::bool_ ? 1.0 : 9.0}, d}},
                                   std::string(fx::dtype_name(d))));
    info.dtypes = {fx::float32};
    t.push_back(std::move(info));
  }
}
}  // namespace

void add_shape_ops(std::vector<OpInfo>& t) {
  const size_t first = t.size();
  add_reshape_ops(t);
  add_axis_order_ops(t);
  add_rank_ops(t);
  add_reverse_slice_ops(t);
  add_pad_tile_ops(t);
  add_join_ops(t);
  add_pad_primitive_ops(t);
  // They only move elements: results are exact in every dtype, and errors name the op.
  for (size_t i = first; i < t.size(); ++i) {
    set_tolerance(t[i], Check::eager, kFloatTypes, Tolerance{0, 0});
    t[i].error_name = t[i].name + "(";
  }
}

}  // namespace optable
