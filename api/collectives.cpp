#include "api/collectives.h"

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

}  // namespace fluxion
