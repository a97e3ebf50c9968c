#include "api/subscript.h"

#include <algorithm>
#include <limits>
#include <string>

#include "api/creation.h"
#include "api/indexing.h"
#include "api/operands.h"
#include "api/reductions.h"
#include "api/shape_ops.h"

namespace fluxion {
namespace {

[[noreturn]] void fail(ErrorKind kind, std::string_view op, const Array& x, SourceLoc loc, const std::string& detail) {
  AbstractArray a = x.aval();
  op_error(kind, op, std::span<const AbstractArray>(&a, 1), loc, detail);
}

bool is_mask(const Index& e) { return e.kind == Index::Kind::array && e.array.dtype() == DType::bool_; }

// Whether an operand of shape `from` broadcasts to `to` by numpy's rules.
bool broadcastable(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  const int off = to.rank() - from.rank();
  for (int i = 0; i < from.rank(); ++i)
    if (from[size_t(i)] != 1 && from[size_t(i)] != to[size_t(off + i)]) return false;
  return true;
}

// The subscript with fx::ellipsis spelled out as colons, and x with a size-1 axis inserted at every
// fx::newaxis (whose entry becomes a colon over it): the rest of this file sees integers, slices and
// arrays only. A colon over an inserted axis keeps it where numpy puts the new axis, also when
// advanced entries move their dims to the front.
struct Expanded {
  Array x;
  std::vector<Index> index;
};
Expanded expand(const Array& x, const std::vector<Index>& index, std::string_view op, SourceLoc loc) {
  int ellipses = 0, consumed = 0;
  bool any = false;
  for (const Index& e : index) {
    if (e.kind == Index::Kind::ellipsis) ++ellipses;
    if (e.kind == Index::Kind::ellipsis || e.kind == Index::Kind::newaxis)
      any = true;
    else
      ++consumed;
  }
  if (!any) return {x, index};
  if (ellipses > 1) fail(ErrorKind::Shape, op, x, loc, "a subscript can have only one fx::ellipsis");
  if (consumed > x.ndim())
    fail(ErrorKind::Shape, op, x, loc,
         "too many indices (" + std::to_string(consumed) + ") for an array of rank " + std::to_string(x.ndim()));
  Expanded out;
  Shape shape;
  size_t axis = 0;
  auto colon_at = [&](const Index& e) {
    Index c(colon);
    c.loc = e.loc;
    out.index.push_back(c);
  };
  for (const Index& e : index) {
    if (e.kind == Index::Kind::ellipsis) {
      for (int k = 0; k < x.ndim() - consumed; ++k, ++axis) {
        colon_at(e);
        shape.push_back(x.shape()[axis]);
      }
    } else if (e.kind == Index::Kind::newaxis) {
      colon_at(e);
      shape.push_back(1);
    } else {
      out.index.push_back(e);
      shape.push_back(x.shape()[axis++]);
    }
  }
  for (; axis < size_t(x.ndim()); ++axis) shape.push_back(x.shape()[axis]);
  out.x = shape == x.shape() ? x : reshape(x, shape, loc);
  return out;
}

// numpy's slice on an axis of size n: the first position, the step and how many positions.
struct Range {
  int64_t start, step, count;
};
Range resolve(const Slice& s, int64_t n, std::string_view op, const Array& x, SourceLoc loc) {
  if (s.step == 0) fail(ErrorKind::Value, op, x, loc, "slice step must not be zero");
  auto wrap = [&](int64_t i) { return i < 0 ? i + n : i; };
  if (s.step > 0) {
    const int64_t start = std::clamp<int64_t>(s.start ? wrap(*s.start) : 0, 0, n);
    const int64_t stop = std::clamp<int64_t>(s.stop ? wrap(*s.stop) : n, 0, n);
    return {start, s.step, std::max<int64_t>(0, (stop - start + s.step - 1) / s.step)};
  }
  const int64_t start = std::clamp<int64_t>(s.start ? wrap(*s.start) : n - 1, -1, n - 1);
  const int64_t stop = std::clamp<int64_t>(s.stop ? wrap(*s.stop) : -1, -1, n - 1);
  return {start, s.step, std::max<int64_t>(0, (start - stop - s.step - 1) / -s.step)};
}

// The subscript resolved against x: x is seen as [P] + trailing (its indexed axes flattened), and
// `flat` (of shape `grid`) holds, for every element of the result, its position in [0, P).
struct Plan {
  Shape grid;      // the result's shape without the trailing axes
  Shape trailing;  // x.shape[len(index):]
  int64_t positions = 1;
  Array flat;      // int32/int64 of shape `grid`; writes: out-of-range entries are `positions`
};

void check_count(const Array& x, const std::vector<Index>& index, std::string_view op, SourceLoc loc) {
  if (int(index.size()) > x.ndim())
    fail(ErrorKind::Shape, op, x, loc,
         "too many indices (" + std::to_string(index.size()) + ") for an array of rank " + std::to_string(x.ndim()));
}

Plan plan_subscript(const Array& x, const std::vector<Index>& index, bool writing, std::string_view op, SourceLoc loc) {
  const Shape& xs = x.shape();
  check_count(x, index, op, loc);
  Plan p;
  std::vector<ArrayLike> advanced;
  std::vector<size_t> adv_pos;
  for (size_t k = 0; k < index.size(); ++k) {
    p.positions *= xs[k];
    if (index[k].kind != Index::Kind::array) continue;
    if (!is_integer(index[k].array.dtype()))
      fail(ErrorKind::Type, op, x, loc, "index " + std::to_string(k) + " has type " + index[k].array.aval().str() +
                                             "; index arrays must be integers (booleans: the where form, x.at(mask))");
    advanced.push_back(index[k].array);
    adv_pos.push_back(k);
  }
  for (int d = int(index.size()); d < xs.rank(); ++d) p.trailing.push_back(xs[size_t(d)]);
  const bool any_array = !advanced.empty();
  if (any_array)  // integers join the advanced group (numpy) as 0-d indices
    for (size_t k = 0; k < index.size(); ++k)
      if (index[k].kind == Index::Kind::integer) adv_pos.push_back(k);
  std::sort(adv_pos.begin(), adv_pos.end());
  const bool adjacent = adv_pos.empty() || adv_pos.back() - adv_pos.front() + 1 == adv_pos.size();
  const Shape b = any_array ? detail::broadcast_shapes(op, advanced, loc) : Shape{};

  // Where each entry's dims sit in the grid: the advanced block at its first entry when the
  // advanced entries are adjacent, else in front; slices in order around it.
  std::vector<int64_t> at(index.size(), -1);
  int64_t adv_at = adjacent && !adv_pos.empty() ? -1 : 0;
  if (!adjacent) p.grid = b;
  for (size_t k = 0; k < index.size(); ++k) {
    const bool adv = std::find(adv_pos.begin(), adv_pos.end(), k) != adv_pos.end();
    if (adv && adjacent && k == adv_pos.front()) {
      adv_at = p.grid.rank();
      for (int64_t d : b) p.grid.push_back(d);
    }
    if (index[k].kind == Index::Kind::slice) {
      at[k] = p.grid.rank();
      p.grid.push_back(resolve(index[k].slice, xs[k], op, x, loc).count);
    }
  }
  const DType it = p.positions > std::numeric_limits<int32_t>::max() ? DType::int64 : DType::int32;
  Array flat = zeros(Shape{}, it, loc), valid;
  int64_t stride = p.positions;
  for (size_t k = 0; k < index.size(); ++k) {
    const int64_t n = xs[k];
    stride /= std::max<int64_t>(n, 1);
    Array i;
    if (index[k].kind == Index::Kind::integer) {
      const int64_t v = index[k].integer < 0 ? index[k].integer + n : index[k].integer;
      if (v < 0 || v >= n)
        fail(ErrorKind::Shape, op, x, loc, "index " + std::to_string(index[k].integer) + " is out of bounds for axis " +
                                               std::to_string(k) + " of size " + std::to_string(n));
      i = full(Shape{}, v, it, loc);
    } else if (index[k].kind == Index::Kind::slice) {
      const Range r = resolve(index[k].slice, n, op, x, loc);
      Shape s(std::vector<int64_t>(size_t(p.grid.rank()), 1));
      s[size_t(at[k])] = r.count;
      i = reshape(add(multiply(iota(it, Shape{r.count}, 0, loc), r.step, loc), r.start, loc), s, loc);
    } else {
      i = astype(index[k].array, it, loc);
      i = where(less(i, 0, loc), add(i, n, loc), i, loc);  // negative indices count from the end
      // B's dims, right-aligned, placed at adv_at in the grid.
      Shape s(std::vector<int64_t>(size_t(p.grid.rank()), 1));
      const int off = int(adv_at) + b.rank() - i.ndim();
      for (int d = 0; d < i.ndim(); ++d) s[size_t(off + d)] = i.shape()[size_t(d)];
      i = reshape(i, s, loc);
      if (writing) {  // which updates land inside x, placed in the grid as the indices are
        Array ok = logical_and(greater_equal(i, 0, loc), less(i, n, loc), loc);
        valid = valid.valid() ? logical_and(valid, ok, loc) : ok;
      } else {
        i = clip(i, 0, std::max<int64_t>(n - 1, 0), loc);
      }
    }
    flat = add(flat, multiply(i, stride, loc), loc);
  }
  flat = broadcast_to(flat, p.grid, loc);
  if (valid.valid()) flat = where(broadcast_to(valid, p.grid, loc), flat, p.positions, loc);
  p.flat = flat;
  return p;
}

Shape concat(const Shape& a, const Shape& b) {
  Shape s = a;
  for (int64_t d : b) s.push_back(d);
  return s;
}

// Reads with only integers and positive-step slices: one slice and a reshape.
std::optional<Array> static_read(const Array& x, const std::vector<Index>& index, SourceLoc loc) {
  const Shape& xs = x.shape();
  IntList start(size_t(xs.rank()), 0), limit = xs.dims(), strides(size_t(xs.rank()), 1);
  Shape out;
  for (size_t k = 0; k < size_t(xs.rank()); ++k) {
    if (k >= index.size()) {
      out.push_back(xs[k]);
      continue;
    }
    const Index& e = index[k];
    if (e.kind == Index::Kind::array || (e.kind == Index::Kind::slice && e.slice.step < 0)) return std::nullopt;
    if (e.kind == Index::Kind::integer) {
      const int64_t v = e.integer < 0 ? e.integer + xs[k] : e.integer;
      if (v < 0 || v >= xs[k])
        fail(ErrorKind::Shape, "getitem", x, loc, "index " + std::to_string(e.integer) + " is out of bounds for axis " +
                                                      std::to_string(k) + " of size " + std::to_string(xs[k]));
      start[k] = v;
      limit[k] = v + 1;
      continue;
    }
    const Range r = resolve(e.slice, xs[k], "getitem", x, loc);
    start[k] = r.start;
    limit[k] = r.count == 0 ? r.start : r.start + (r.count - 1) * r.step + 1;
    strides[k] = r.step;
    out.push_back(r.count);
  }
  return reshape(slice(x, start, limit, strides, loc), out, loc);
}

}  // namespace

Array getitem(const Array& x_in, const std::vector<Index>& index_in, SourceLoc loc) {
  const Expanded ex = expand(x_in, index_in, "getitem", loc);
  const Array& x = ex.x;
  const std::vector<Index>& index = ex.index;
  for (const Index& e : index)
    if (is_mask(e))
      fail(ErrorKind::Type, "getitem", x, loc,
           "a boolean mask gives a shape that depends on the data; use the where form: fx::where(mask, x, fill), "
           "or x.at(mask).set(v) / .add(v) ...");
  check_count(x, index, "getitem", loc);
  if (std::optional<Array> r = static_read(x, index, loc)) return *r;
  Plan p = plan_subscript(x, index, false, "getitem", loc);
  Array rows = reshape(x, concat(Shape{p.positions}, p.trailing), loc);
  return take(rows, p.flat, 0, loc);
}

Array At::get(SourceLoc loc) const { return getitem(x_, index_, loc); }
Array At::set(const ArrayLike& v, SourceLoc loc) const { return update(Op::set, v, loc); }
Array At::add(const ArrayLike& v, SourceLoc loc) const { return update(Op::add, v, loc); }
Array At::mul(const ArrayLike& v, SourceLoc loc) const { return update(Op::mul, v, loc); }
Array At::min(const ArrayLike& v, SourceLoc loc) const { return update(Op::min, v, loc); }
Array At::max(const ArrayLike& v, SourceLoc loc) const { return update(Op::max, v, loc); }

namespace {
std::string update_name(At::Op op) {
  switch (op) {
    case At::Op::set: return "at(...).set";
    case At::Op::add: return "at(...).add";
    case At::Op::mul: return "at(...).mul";
    case At::Op::min: return "at(...).min";
    case At::Op::max: return "at(...).max";
  }
  return "at";
}
// The updates broadcast to `shape` (what x[...] selects) in x's dtype; a ShapeError naming the
// user's op (not the broadcast inside it) when they do not broadcast.
Array updates_for(const std::string& op, const Array& x, const ArrayLike& v, const Shape& shape, SourceLoc loc) {
  if (!broadcastable(v.shape(), shape)) {
    AbstractArray avals[] = {x.aval(), v.aval()};
    op_error(ErrorKind::Shape, op, avals, loc,
             "the update of shape " + v.shape().str() + " does not broadcast to " + shape.str() +
                 ", the shape of the part of x the subscript selects (numpy rules)");
  }
  return astype(broadcast_to(v, shape, loc), x.dtype(), loc);
}
}  // namespace

Array At::update(Op op, const ArrayLike& v, SourceLoc loc) const {
  const std::string name = update_name(op);
  const Expanded ex = expand(x_, index_, name, loc);
  const Array& x = ex.x;
  const std::vector<Index>& index = ex.index;
  auto combine = [&](const Array& old, const Array& u) {
    switch (op) {
      case Op::set: return u;
      case Op::add: return fluxion::add(old, u, loc);
      case Op::mul: return multiply(old, u, loc);
      case Op::min: return minimum(old, u, loc);
      case Op::max: return maximum(old, u, loc);
    }
    return u;
  };
  if (index.size() == 1 && is_mask(index[0])) {  // the where form
    const Array& mask = index[0].array;
    if (!broadcastable(mask.shape(), x.shape())) {
      AbstractArray avals[] = {x.aval(), mask.aval()};
      op_error(ErrorKind::Shape, name, avals, loc, "the mask " + mask.aval().str() + " does not broadcast to x");
    }
    Array u = updates_for(name, x, v, x.shape(), loc);
    return where(broadcast_to(mask, x.shape(), loc), astype(combine(x, u), x.dtype(), loc), x, loc);
  }
  for (const Index& e : index)
    if (is_mask(e)) fail(ErrorKind::Type, name, x, loc, "a boolean mask must be the only entry of x.at(mask)");
  Plan p = plan_subscript(x, index, true, name, loc);
  const Shape rows_shape = concat(Shape{p.positions}, p.trailing);
  const int64_t m = p.grid.numel();
  Array rows = reshape(x, rows_shape, loc);
  Array u = reshape(updates_for(name, x, v, concat(p.grid, p.trailing), loc), concat(Shape{m}, p.trailing), loc);
  Array flat = reshape(p.flat, Shape{m}, loc);
  Array out;
  if (op == Op::set || op == Op::add) {
    out = op == Op::set ? at_set(rows, flat, u, 0, loc) : at_add(rows, flat, u, 0, loc);
  } else {
    // Every update against every position: hits[j, q] says update j lands on position q.
    Shape ones(std::vector<int64_t>(size_t(p.trailing.rank()), 1));
    Array hits = reshape(equal(reshape(flat, Shape{m, 1}, loc), iota(flat.dtype(), Shape{1, p.positions}, 1, loc), loc),
                         concat(Shape{m, p.positions}, ones), loc);
    Array uj = reshape(u, concat(Shape{m, 1}, p.trailing), loc);
    Array xq = reshape(rows, concat(Shape{1, p.positions}, p.trailing), loc);
    Array combined = op == Op::mul ? prod(where(hits, uj, 1, loc), 0, false, loc)
                     : op == Op::min ? fluxion::min(where(hits, uj, xq, loc), 0, false, loc)
                                     : fluxion::max(where(hits, uj, xq, loc), 0, false, loc);
    out = astype(combine(rows, combined), x.dtype(), loc);
  }
  return reshape(out, x_.shape(), loc);
}

// ---- the members of Array that spell these (declared in ir/array.h) --------------------------------
Array Array::operator[](const Index& index) const { return getitem(*this, {index}, index.loc); }
Array Array::operator[](std::initializer_list<Index> indices) const {
  return getitem(*this, std::vector<Index>(indices), indices.size() ? indices.begin()->loc : SourceLoc());
}
At Array::at(const Index& index) const { return At(*this, {index}); }
At Array::at(std::initializer_list<Index> indices) const { return At(*this, std::vector<Index>(indices)); }

}  // namespace fluxion
