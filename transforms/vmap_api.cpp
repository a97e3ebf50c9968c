#include "transforms/vmap_api.h"

namespace fluxion::detail {

namespace {
std::string leaf_name(size_t arg, size_t leaf, size_t leaves_in_arg) {
  std::string s = "argument " + std::to_string(arg);
  if (leaves_in_arg > 1) s += " (leaf " + std::to_string(leaf) + ")";
  return s;
}
}  // namespace

VmapPlan plan_vmap(const ArgLeaves& args, const InAxes& in, std::optional<int64_t> size, SourceLoc loc) {
  const size_t nargs = args.start.size() - 1;
  if (in.specs.size() != 1 && in.specs.size() != nargs)
    throw ValueError("ValueError: vmap at " + loc.str() + ": in_axes has " + std::to_string(in.specs.size()) +
                     " entries for " + std::to_string(nargs) + " arguments");
  VmapPlan plan;
  std::string size_source;  // which argument fixed the batch size (for the error message)
  std::optional<int64_t> batch = size;
  if (size) size_source = "axis_size";
  for (size_t a = 0; a < nargs; ++a) {
    const AxisSpec& spec = in.specs.size() == 1 ? in.specs[0] : in.specs[a];
    const size_t begin = args.start[a], end = args.start[a + 1], n = end - begin;
    if (const LeafAxes* per_leaf = std::get_if<LeafAxes>(&spec); per_leaf && per_leaf->axes.size() != n)
      throw ValueError("ValueError: vmap at " + loc.str() + ": in_axes for argument " + std::to_string(a) + " lists " +
                       std::to_string(per_leaf->axes.size()) + " leaf axes but the argument has " + std::to_string(n) +
                       " Array leaves");
    for (size_t i = begin; i < end; ++i) {
      const AbstractArray& aval = args.leaves[i].aval();
      Axis axis = std::holds_alternative<Axis>(spec) ? std::get<Axis>(spec) : std::get<LeafAxes>(spec).axes[i - begin];
      if (!axis.mapped()) {
        plan.dims.push_back(kNotMapped);
        plan.example_avals.push_back(aval);
        continue;
      }
      int64_t d = axis.value();
      if (d < -aval.ndim() || d >= aval.ndim())
        throw ShapeError("ShapeError: vmap at " + loc.str() + ": in_axes " + std::to_string(d) + " for " +
                         leaf_name(a, i - begin, n) + " is out of range for its type " + aval.str());
      if (d < 0) d += aval.ndim();
      const int64_t len = aval.shape[size_t(d)];
      if (!batch) {
        batch = len;
        size_source = leaf_name(a, i - begin, n) + " axis " + std::to_string(d) + " has size " + std::to_string(len);
      } else if (*batch != len) {
        throw ShapeError("ShapeError: vmap at " + loc.str() + ": batched axes must have one size, but " + size_source +
                         (size_source == "axis_size" ? " is " + std::to_string(*batch) : std::string()) + " and " +
                         leaf_name(a, i - begin, n) + " axis " + std::to_string(d) + " has size " + std::to_string(len) +
                         " (type " + aval.str() + ")");
      }
      plan.dims.push_back(d);
      AbstractArray example = aval;
      Shape s;
      for (int k = 0; k < aval.ndim(); ++k)
        if (k != d) s.push_back(aval.shape[size_t(k)]);
      example.shape = s;
      plan.example_avals.push_back(example);
    }
  }
  if (!batch)
    throw ValueError("ValueError: vmap at " + loc.str() +
                     ": no argument is batched, so the batch size is unknown; give fx::axis_size(n)");
  plan.axis_size = *batch;
  return plan;
}

std::vector<Array> place_outputs(std::vector<BatchedArray> outs, const OutAxes& out, int64_t size, SourceLoc loc) {
  if (out.specs.size() != 1 && out.specs.size() != outs.size())
    throw ValueError("ValueError: vmap at " + loc.str() + ": out_axes has " + std::to_string(out.specs.size()) +
                     " entries for " + std::to_string(outs.size()) + " output leaves");
  std::vector<Array> r;
  for (size_t i = 0; i < outs.size(); ++i) {
    const AxisSpec& spec = out.specs.size() == 1 ? out.specs[0] : out.specs[i];
    if (!std::holds_alternative<Axis>(spec))
      throw ValueError("ValueError: vmap at " + loc.str() + ": out_axes takes one axis (or fx::none) per output leaf");
    Axis axis = std::get<Axis>(spec);
    BatchedArray& o = outs[i];
    if (!axis.mapped()) {
      if (o.dim != kNotMapped)
        throw ValueError("ValueError: vmap at " + loc.str() + ": output " + std::to_string(i) +
                         " is batched but its out_axes is fx::none");
      r.push_back(o.value);
      continue;
    }
    const int64_t rank = o.value.ndim() + (o.dim == kNotMapped ? 1 : 0);
    int64_t d = axis.value();
    if (d < -rank || d >= rank)
      throw ShapeError("ShapeError: vmap at " + loc.str() + ": out_axes " + std::to_string(d) + " is out of range for output " +
                       std::to_string(i) + " of rank " + std::to_string(rank));
    if (d < 0) d += rank;
    r.push_back(batch_at(o, d, size, loc));
  }
  return r;
}

}  // namespace fluxion::detail
