#include "api/collectives.h"

#include "api/shape_ops.h"

#include "ir/spmd.h"
#include "ir/trace.h"
#include "interpreters/axis_env.h"

namespace fluxion {

namespace {

// The params naming a bound axis, or the trace-time error naming the axis and the caller's line.
Params axis_params(std::string_view op, std::string_view name, SourceLoc loc) {
  const std::optional<int64_t> size = bound_axis_size(name);
  if (!size) {
    std::string bound;
    for (const std::string& b : bound_axis_names()) bound += (bound.empty() ? "'" : ", '") + b + "'";
    throw ValueError("ValueError: " + std::string(op) + " at " + loc.str() + ": the axis name '" + std::string(name) +
                     "' is not bound (" + (bound.empty() ? std::string("no axis is bound here") : "bound here: " + bound) +
                     "); collectives run inside fx::pmap or fx::vmap with fx::axis_name");
  }
  return Params{{"axis_name", std::string(name)}, {"axis_size", *size}, {"axis_key", axis_key(name)}};
}

Array collective(Prim p, const Array& x, const std::string& name, SourceLoc loc, std::initializer_list<Params::Entry> more = {}) {
  Params params = axis_params(prim_name(p), name, loc);
  for (const auto& [k, v] : more) params.set(k, v);
  return bind1(p, {x}, params, loc);
}

// A negative dimension counted from the end of a rank-`rank` array (left as it is when out of
// range: the shape rule reports it).
int64_t from_end(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

}  // namespace

Array psum(const Array& x, const std::string& axis_name, SourceLoc loc) { return collective(Prim::psum, x, axis_name, loc); }
Array pmean(const Array& x, const std::string& axis_name, SourceLoc loc) { return collective(Prim::pmean, x, axis_name, loc); }
Array pmax(const Array& x, const std::string& axis_name, SourceLoc loc) { return collective(Prim::pmax, x, axis_name, loc); }
Array pmin(const Array& x, const std::string& axis_name, SourceLoc loc) { return collective(Prim::pmin, x, axis_name, loc); }

Array all_gather(const Array& x, const std::string& axis_name, int64_t axis, bool tiled, SourceLoc loc) {
  const int64_t rank = x.valid() ? x.ndim() : 0;
  return collective(Prim::all_gather, x, axis_name, loc, {{"axis", from_end(axis, tiled ? rank : rank + 1)}, {"tiled", tiled}});
}

Array psum_scatter(const Array& x, const std::string& axis_name, int64_t scatter_dimension, bool tiled, SourceLoc loc) {
  const int64_t rank = x.valid() ? x.ndim() : 0;
  return collective(Prim::psum_scatter, x, axis_name, loc,
                    {{"scatter_dimension", from_end(scatter_dimension, rank)}, {"tiled", tiled}});
}

Array ppermute(const Array& x, const std::string& axis_name, const std::vector<std::pair<int64_t, int64_t>>& perm,
               SourceLoc loc) {
  IntList pairs;
  for (const auto& [src, dst] : perm) pairs.insert(pairs.end(), {src, dst});
  return collective(Prim::ppermute, x, axis_name, loc, {{"perm", pairs}, {"perm_key", perm_key(pairs)}});
}

Array all_to_all(const Array& x, const std::string& axis_name, int64_t split_axis, int64_t concat_axis, SourceLoc loc) {
  const int64_t rank = x.valid() ? x.ndim() : 0;
  return collective(Prim::all_to_all, x, axis_name, loc,
                    {{"split_axis", from_end(split_axis, rank)}, {"concat_axis", from_end(concat_axis, rank)}});
}

Array axis_index(const std::string& axis_name, SourceLoc loc) {
  return bind1(Prim::axis_index, {}, axis_params("axis_index", axis_name, loc), loc);
}

int64_t axis_size(std::string_view axis_name, SourceLoc loc) {
  return axis_params("axis_size", axis_name, loc).get_int("axis_size");
}

// ---- over several axes ------------------------------------------------------------------------------

namespace {
void need_axes(std::string_view op, const AxisNames& axes, SourceLoc loc) {
  if (axes.empty()) throw ValueError("ValueError: " + std::string(op) + " at " + loc.str() + ": an empty list of axis names");
}
// f over each axis, the last first: reductions that leave the same value on every member.
template <class F>
Array each_axis(std::string_view op, const Array& x, const AxisNames& axes, SourceLoc loc, F f) {
  need_axes(op, axes, loc);
  Array r = x;
  for (size_t a = axes.size(); a-- > 0;) r = f(r, axes[a]);
  return r;
}
}  // namespace

Array psum(const Array& x, const AxisNames& axes, SourceLoc loc) {
  return each_axis("psum", x, axes, loc, [&](const Array& v, const std::string& a) { return psum(v, a, loc); });
}
Array pmean(const Array& x, const AxisNames& axes, SourceLoc loc) {
  return each_axis("pmean", x, axes, loc, [&](const Array& v, const std::string& a) { return pmean(v, a, loc); });
}
Array pmax(const Array& x, const AxisNames& axes, SourceLoc loc) {
  return each_axis("pmax", x, axes, loc, [&](const Array& v, const std::string& a) { return pmax(v, a, loc); });
}
Array pmin(const Array& x, const AxisNames& axes, SourceLoc loc) {
  return each_axis("pmin", x, axes, loc, [&](const Array& v, const std::string& a) { return pmin(v, a, loc); });
}

// Tiled: concatenated along `axis` in rank order (the first axis major), gathering the last axis
// first. Untiled: a new dimension of the product size, which is the tiled gather of x with a
// dimension of 1 added there.
Array all_gather(const Array& x, const AxisNames& axes, int64_t axis, bool tiled, SourceLoc loc) {
  need_axes("all_gather", axes, loc);
  if (!tiled) {
    const int64_t rank = x.valid() ? x.ndim() : 0;
    return all_gather(expand_dims(x, {from_end(axis, rank + 1)}, loc), axes, from_end(axis, rank + 1), true, loc);
  }
  return each_axis("all_gather", x, axes, loc,
                   [&](const Array& v, const std::string& a) { return all_gather(v, a, axis, true, loc); });
}

// Member (i, j) keeps block i * n_j + j: scattered over the first axis, then within that block
// over the next.
Array psum_scatter(const Array& x, const AxisNames& axes, int64_t scatter_dimension, bool tiled, SourceLoc loc) {
  need_axes("psum_scatter", axes, loc);
  Array r = x;
  for (size_t a = 0; a < axes.size(); ++a)
    r = psum_scatter(r, axes[a], scatter_dimension, tiled || a + 1 < axes.size(), loc);
  return r;
}

Array axis_index(const AxisNames& axes, SourceLoc loc) {
  need_axes("axis_index", axes, loc);
  Array r = axis_index(axes[0], loc);
  for (size_t a = 1; a < axes.size(); ++a)
    r = r * int32_t(axis_size(axes[a], loc)) + axis_index(axes[a], loc);
  return r;
}

int64_t axis_size(const AxisNames& axes, SourceLoc loc) {
  need_axes("axis_size", axes, loc);
  int64_t n = 1;
  for (const std::string& a : axes) n *= axis_size(a, loc);
  return n;
}

Array psum(const Array& x, std::initializer_list<std::string> axes, SourceLoc loc) { return psum(x, AxisNames(axes), loc); }
Array pmean(const Array& x, std::initializer_list<std::string> axes, SourceLoc loc) { return pmean(x, AxisNames(axes), loc); }
Array pmax(const Array& x, std::initializer_list<std::string> axes, SourceLoc loc) { return pmax(x, AxisNames(axes), loc); }
Array pmin(const Array& x, std::initializer_list<std::string> axes, SourceLoc loc) { return pmin(x, AxisNames(axes), loc); }
Array all_gather(const Array& x, std::initializer_list<std::string> axes, int64_t axis, bool tiled, SourceLoc loc) {
  return all_gather(x, AxisNames(axes), axis, tiled, loc);
}
Array psum_scatter(const Array& x, std::initializer_list<std::string> axes, int64_t scatter_dimension, bool tiled,
                   SourceLoc loc) {
  return psum_scatter(x, AxisNames(axes), scatter_dimension, tiled, loc);
}
Array axis_index(std::initializer_list<std::string> axes, SourceLoc loc) { return axis_index(AxisNames(axes), loc); }
int64_t axis_size(std::initializer_list<std::string> axes, SourceLoc loc) { return axis_size(AxisNames(axes), loc); }

}  // namespace fluxion
