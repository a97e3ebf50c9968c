// Op-table entries of the indexing ops (api/indexing.h: take, dynamic_slice, dynamic_update_slice,
// x.at[...].set/add, and their batch_dims forms), with host references written as plain index
// arithmetic over HostArray. Index operands keep an integer dtype, so every sample is `fixed`, built
// once per data dtype (bool included). Focused tests of the family: tests/test_shape.cpp,
// tests/test_vmap_indexing.cpp.
#include <algorithm>
#include <functional>

#include "op_table.h"

namespace optable {
namespace {

int64_t numel(const fx::Shape& s) { return s.numel(); }

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
    xi.push_back(wrap_clip(indices.data[size_t(ravel(ii, indices.shape))], x.shape[size_t(axis)]));
    xi.insert(xi.end(), oi.begin() + axis + ir, oi.end());
    out.data.push_back(x.data[size_t(ravel(xi, x.shape))]);
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
    int64_t k = int64_t(indices.data[size_t(ravel(ii, indices.shape))]);
    if (k < 0) k += n;
    if (k < 0 || k >= n) continue;
    std::vector<int64_t> xi(ui.begin(), ui.begin() + axis);
    xi.push_back(k);
    xi.insert(xi.end(), ui.begin() + axis + ir, ui.end());
    double& dst = out.data[size_t(ravel(xi, x.shape))];
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
  const std::vector<int64_t> start = clamped_starts(a, 1, a[0].shape, window);
  HostArray out{window, {}, dt};
  for (int64_t i = 0; i < window.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, window);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += start[d];
    out.data.push_back(a[0].data[size_t(ravel(idx, a[0].shape))]);
  }
  return out;
}

HostArray ref_dynamic_update_slice(const std::vector<HostArray>& a, fx::DType dt) {
  const HostArray &x = a[0], &u = a[1];
  std::vector<int64_t> start = clamped_starts(a, 2, x.shape, u.shape);
  HostArray out{x.shape, x.data, dt};
  for (int64_t i = 0; i < numel(u.shape); ++i) {
    std::vector<int64_t> idx = unravel(i, u.shape);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += start[d];
    out.data[size_t(ravel(idx, x.shape))] = u.data[size_t(i)];
  }
  return out;
}

void add_take_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape, kType = fx::ErrorKind::Type;

  OpInfo take;
  take.name = "take";
  take.op = [](const std::vector<fx::Array>& a) { return fx::take(a[0], a[1], -1); };
  take.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    return ref_take(a[0], a[1], a[0].shape.rank() - 1, dt);
  };
  for (fx::DType d : kAllTypes) {
    const std::string n(fx::dtype_long_name(d));
    take.samples.push_back(fixed({distinct_values(Shape{4}, d), index_values(Shape{2}, {2, 0})}, n + " vector"));
    take.samples.push_back(
        fixed({distinct_values(Shape{2, 5}, d), index_values(Shape{2, 3}, {-1, 4, 0, -5, 9, -9})}, n + " wrap and clip"));
  }
  take.samples.push_back(fixed({distinct_values(Shape{3, 4}), index_values(Shape{}, {1}, fx::int64)}, "0-d int64 index"));
  take.samples.push_back(fixed({distinct_values(Shape{3, 4}), index_values(Shape{0}, {}, fx::uint8)}, "no indices"));
  take.samples.push_back(fixed({distinct_values(Shape{2, 3}), index_values(Shape{2}, {-3, 2}, fx::int8)}, "int8 indices"));
  take.dtypes = {fx::float32};
  take.errors = {error_sample({distinct_values(Shape{4}), distinct_values(Shape{2})}, kType, "float indices"),
                 error_sample({distinct_values(Shape{}), index_values(Shape{1}, {0})}, kShape, "0-d operand"),
                 error_sample({distinct_values(Shape{2, 0}), index_values(Shape{1}, {0})}, kShape, "take from an empty axis")};
  t.push_back(take);

  OpInfo take_flat;
  take_flat.name = "take_flat";
  take_flat.op = [](const std::vector<fx::Array>& a) { return fx::take(a[0], a[1]); };
  take_flat.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    return ref_take(with_shape(a[0], Shape{numel(a[0].shape)}, a[0].dtype), a[1], 0, dt);
  };
  take_flat.samples = {fixed({distinct_values(Shape{2, 3}), index_values(Shape{2, 2}, {5, 0, -1, 3})}, "matrix"),
                       fixed({distinct_values(Shape{}), index_values(Shape{2}, {0, 0})}, "scalar")};
  take_flat.dtypes = {fx::float32};
  t.push_back(take_flat);


  // batch_dims: leading dims of x and indices paired elementwise (what vmap emits).
  OpInfo take_batched;
  take_batched.name = "take_batch_dims";
  take_batched.op = [](const std::vector<fx::Array>& a) { return fx::take(a[0], a[1], 2, 1); };
  take_batched.reference = [](const std::vector<HostArray>& a, fx::DType dt) { return ref_take(a[0], a[1], 2, dt, 1); };
  for (fx::DType d : kAllTypes) {
    const std::string n(fx::dtype_long_name(d));
    take_batched.samples.push_back(
        fixed({distinct_values(Shape{2, 3, 4}, d), index_values(Shape{2, 3}, {3, -1, 0, 9, -7, 2})}, n + " per-row, wrap and clip"));
  }
  take_batched.samples.push_back(fixed({distinct_values(Shape{3, 2, 5, 2}), index_values(Shape{3, 2, 2}, {0, 4, 1, 3, 2, 2, 4, 0, 1, 1, 3, 3})},
                                       "two index dims, trailing dim"));
  take_batched.samples.push_back(fixed({distinct_values(Shape{2, 1, 3}), index_values(Shape{2}, {2, 0}, fx::uint8)}, "0-d index per row"));
  take_batched.dtypes = {fx::float32};
  // (error messages name the op, "take(": batch_dims errors are tested in test_vmap_indexing.cpp)
  t.push_back(take_batched);
}

void add_dynamic_slice_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape, kType = fx::ErrorKind::Type;

  OpInfo dynamic_slice;
  dynamic_slice.name = "dynamic_slice";
  dynamic_slice.op = [](const std::vector<fx::Array>& a) { return fx::dynamic_slice(a[0], {a[1], a[2]}, {2, 2}); };
  dynamic_slice.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    return ref_dynamic_slice(a, {2, 2}, dt);
  };
  for (fx::DType d : kAllTypes) {
    const std::string n(fx::dtype_long_name(d));
    dynamic_slice.samples.push_back(fixed({distinct_values(Shape{3, 4}, d), index_values({}, {1}), index_values({}, {2})}, n + " inside"));
    dynamic_slice.samples.push_back(
        fixed({distinct_values(Shape{3, 4}, d), index_values({}, {-4}), index_values({}, {9}, fx::int64)}, n + " clamped"));
  }
  dynamic_slice.samples.push_back(fixed({distinct_values(Shape{2, 2}), index_values({}, {0}, fx::uint32), index_values({}, {7}, fx::uint8)}, "whole"));
  dynamic_slice.dtypes = {fx::float32};
  dynamic_slice.errors = {error_sample({distinct_values(Shape{3, 4}), distinct_values(Shape{}), index_values({}, {0})}, kType, "float start"),
                          error_sample({distinct_values(Shape{1, 4}), index_values({}, {0}), index_values({}, {0})}, kShape, "size 2 > 1"),
                          error_sample({distinct_values(Shape{3, 4}), index_values(Shape{1}, {0}), index_values({}, {0})}, kShape, "1-d start")};
  t.push_back(dynamic_slice);

  OpInfo dynamic_update_slice;
  dynamic_update_slice.name = "dynamic_update_slice";
  dynamic_update_slice.op = [](const std::vector<fx::Array>& a) {
    return fx::dynamic_update_slice(a[0], a[1], {a[2], a[3]});
  };
  dynamic_update_slice.reference = [](const std::vector<HostArray>& a, fx::DType dt) {
    return ref_dynamic_update_slice(a, dt);
  };
  for (fx::DType d : kAllTypes) {
    const std::string n(fx::dtype_long_name(d));
    dynamic_update_slice.samples.push_back(
        fixed({distinct_values(Shape{3, 4}, d), distinct_values(Shape{2, 2}, d, 3), index_values({}, {1}), index_values({}, {1})}, n + " inside"));
    dynamic_update_slice.samples.push_back(
        fixed({distinct_values(Shape{3, 4}, d), distinct_values(Shape{1, 3}, d, 3), index_values({}, {5}), index_values({}, {-2})}, n + " clamped"));
  }
  dynamic_update_slice.samples.push_back(
      fixed({distinct_values(Shape{3, 4}), distinct_values(Shape{0, 2}, fx::float64, 3), index_values({}, {1}), index_values({}, {1})}, "empty update"));
  dynamic_update_slice.dtypes = {fx::float32};
  dynamic_update_slice.errors = {
      error_sample({distinct_values(Shape{3, 4}), distinct_values(Shape{4, 1}), index_values({}, {0}), index_values({}, {0})}, kShape, "update too big"),
      error_sample({distinct_values(Shape{3, 4}), distinct_values(Shape{2}), index_values({}, {0}), index_values({}, {0})}, kShape, "update rank 1"),
      error_sample({distinct_values(Shape{3, 4}), distinct_values(Shape{1, 1}), index_values({}, {0}), distinct_values(Shape{})}, kType, "float start")};
  t.push_back(dynamic_update_slice);

}

void add_scatter_ops(std::vector<OpInfo>& t) {
  using fx::Shape;
  const fx::ErrorKind kShape = fx::ErrorKind::Shape, kType = fx::ErrorKind::Type;

  for (bool add : {false, true}) {
    OpInfo at;
    at.name = add ? "at_add" : "at_set";
    at.op = add ? std::function([](const std::vector<fx::Array>& a) { return fx::at_add(a[0], a[1], a[2], 1); })
                : std::function([](const std::vector<fx::Array>& a) { return fx::at_set(a[0], a[1], a[2], 1); });
    at.reference = [add](const std::vector<HostArray>& a, fx::DType dt) {
      return ref_scatter(a[0], a[1], a[2], 1, add, dt);
    };
    for (fx::DType d : kAllTypes) {
      const std::string n(fx::dtype_long_name(d));
      // Distinct indices (set is then order-free); -1 wraps to 3; 4 and -6 are dropped.
      at.samples.push_back(fixed({small_values(Shape{2, 4}, d), index_values(Shape{4}, {0, -1, 4, -6}),
                                  small_values(Shape{2, 4}, d, 1)},
                                 n + " wrap and drop"));
    }
    // Duplicates accumulate under add.
    if (add)
      at.samples.push_back(fixed({small_values(Shape{2, 3}, fx::int8), index_values(Shape{2, 2}, {1, 1, 2, 1}),
                                  small_values(Shape{2, 2, 2}, fx::int8, 2)},
                                 "int8 duplicates"));
    at.samples.push_back(
        fixed({small_values(Shape{2, 3, 2}, fx::float32), index_values(Shape{}, {2}, fx::uint8), small_values(Shape{2, 2}, fx::float32, 4)},
              "0-d index"));
    at.samples.push_back(
        fixed({small_values(Shape{2, 3}, fx::float32), index_values(Shape{0}, {}), small_values(Shape{2, 0}, fx::float32)}, "no indices"));
    at.dtypes = {fx::float32};
    at.errors = {error_sample({distinct_values(Shape{2, 3}), distinct_values(Shape{1}), distinct_values(Shape{2, 1})}, kType, "float indices"),
                 error_sample({distinct_values(Shape{2, 3}), index_values(Shape{2}, {0, 1}), distinct_values(Shape{3, 2})}, kShape, "updates shape"),
                 error_sample({distinct_values(Shape{3}), index_values(Shape{1}, {0}), distinct_values(Shape{1})}, kShape, "axis 1 of rank 1")};
    t.push_back(at);
  }

  for (bool add : {false, true}) {
    OpInfo at;
    at.name = add ? "at_add_batch_dims" : "at_set_batch_dims";
    at.op = add ? std::function([](const std::vector<fx::Array>& a) { return fx::at_add(a[0], a[1], a[2], 1, 1); })
                : std::function([](const std::vector<fx::Array>& a) { return fx::at_set(a[0], a[1], a[2], 1, 1); });
    at.reference = [add](const std::vector<HostArray>& a, fx::DType dt) {
      return ref_scatter(a[0], a[1], a[2], 1, add, dt, 1);
    };
    for (fx::DType d : kAllTypes) {
      const std::string n(fx::dtype_long_name(d));
      // Distinct indices per row; -1 wraps, 4 and -6 are dropped.
      at.samples.push_back(fixed({small_values(Shape{2, 4, 2}, d), index_values(Shape{2, 3}, {0, -1, 4, 2, -6, 1}),
                                  small_values(Shape{2, 3, 2}, d, 1)},
                                 n + " per-row, wrap and drop"));
    }
    if (add)
      at.samples.push_back(fixed({small_values(Shape{2, 3}, fx::int8), index_values(Shape{2, 3}, {1, 1, 2, 0, 0, 0}),
                                  small_values(Shape{2, 3}, fx::int8, 2)},
                                 "int8 duplicates per row"));
    at.dtypes = {fx::float32};
    t.push_back(at);
  }
}

}  // namespace

void add_indexing_ops(std::vector<OpInfo>& t) {
  const size_t first = t.size();
  add_take_ops(t);
  add_dynamic_slice_ops(t);
  add_scatter_ops(t);
  // They only move elements: results are exact in every dtype, and errors name the op.
  for (size_t i = first; i < t.size(); ++i) {
    set_tolerance(t[i], Check::eager, kFloatTypes, Tolerance{0, 0});
    t[i].error_name = t[i].name + "(";
  }
}

}  // namespace optable
