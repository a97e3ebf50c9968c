#include "transforms/autodiff.h"

#include "api/creation.h"
#include "api/operands.h"
#include "api/shape_ops.h"
#include "interpreters/jvp.h"
#include "interpreters/vjp.h"
#include "transforms/vmap_api.h"

namespace fluxion::detail {

void check_scalar_output(const char* api, const AbstractArray& out, SourceLoc loc, bool holomorphic) {
  if (out.ndim() == 0 && is_complex(out.dtype) && !holomorphic)
    throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() + ": the function returns " + out.str() +
                    "; grad needs a real-valued output. For a holomorphic function pass fx::holomorphic "
                    "(fx::grad(f, fx::holomorphic)); otherwise differentiate fx::real or fx::abs of it.");
  if (out.ndim() == 0 && !is_complex(out.dtype) && holomorphic)
    throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() + ": with fx::holomorphic the function " +
                    "must return a complex scalar, but it returns " + out.str());
  if (out.ndim() != 0 || !is_inexact(out.dtype))
    throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() +
                    ": the function must return a float scalar, but it returns " + out.str() +
                    ". For non-scalar outputs use fx::jacrev, fx::jacfwd or fx::vjp.");
}

void check_float_argument(const char* api, const std::vector<Array>& leaves, size_t begin, size_t end, int argnum,
                          SourceLoc loc, bool holomorphic) {
  for (size_t i = begin; i < end; ++i) {
    if (holomorphic && !is_complex(leaves[i].dtype()))
      throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() + ": with fx::holomorphic argument " +
                      std::to_string(argnum) + " must be complex, but it has a leaf of type " + leaves[i].aval().str());
    if (!is_inexact(leaves[i].dtype()))
      throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() + ": argument " + std::to_string(argnum) +
                      " has a leaf of type " + leaves[i].aval().str() +
                      "; only floating-point arguments can be differentiated (integers and bools have no tangent)");
  }
}

GradResult value_and_grad_flat(const Program& p, std::span<const Array> leaves, const std::vector<bool>& wrt,
                               bool with_value, SourceLoc) {
  const size_t n = p.outvars.size();
  std::vector<bool> keep(n, true);
  if (!with_value) keep[0] = false;  // the loss itself is not needed: let dce drop what only it uses
  Program g = grad_program(p, wrt, keep);
  std::vector<Array> all = eval_program(g, leaves);
  GradResult r;
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) r.outs.push_back(keep[i] ? all[k++] : Array());
  r.grads.assign(all.begin() + long(k), all.end());
  return r;
}

void check_tangents(const char* api, const ArgLeaves& primals, const ArgLeaves& tangents, SourceLoc loc) {
  size_t nargs = primals.start.size() - 1;
  for (size_t a = 0; a < nargs; ++a) {
    size_t np = primals.start[a + 1] - primals.start[a], nt = tangents.start[a + 1] - tangents.start[a];
    if (np != nt)
      throw ShapeError(std::string("ShapeError: ") + api + " at " + loc.str() + ": the tangent of argument " +
                       std::to_string(a) + " has " + std::to_string(nt) + " leaves, the primal " + std::to_string(np));
    for (size_t i = 0; i < np; ++i) {
      const AbstractArray& p = primals.leaves[primals.start[a] + i].aval();
      const AbstractArray& t = tangents.leaves[tangents.start[a] + i].aval();
      if (!(p.shape == t.shape))
        throw ShapeError(std::string("ShapeError: ") + api + " at " + loc.str() + ": the tangent of argument " +
                         std::to_string(a) + " has type " + t.str() + " but the primal is " + p.str());
      if (p.dtype != t.dtype)
        throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() + ": the tangent of argument " +
                        std::to_string(a) + " has type " + t.str() + " but the primal is " + p.str());
    }
  }
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const Program& p, std::span<const Array> primals,
                                                           std::span<const Array> tangents) {
  std::vector<Array> outs, touts;
  jvp_eval(p, primals, tangents, outs, touts);
  for (size_t i = 0; i < touts.size(); ++i)
    if (is_zero(touts[i])) touts[i] = zeros_for(outs[i].aval(), {});
  return {outs, touts};
}

// ---- vjp ----------------------------------------------------------------------------------------
Pullback::Pullback(Program backward, std::vector<Array> residuals, std::vector<AbstractArray> out_avals,
                   std::vector<AbstractArray> in_avals, std::vector<bool> wrt, SourceLoc loc)
    : backward_(std::move(backward)),
      residuals_(std::move(residuals)),
      out_avals_(std::move(out_avals)),
      in_avals_(std::move(in_avals)),
      wrt_(std::move(wrt)),
      loc_(loc) {}

std::vector<Array> Pullback::operator()(std::span<const Array> cts) const {
  if (cts.size() != out_avals_.size())
    throw ShapeError("ShapeError: vjp function at " + loc_.str() + ": expected " + std::to_string(out_avals_.size()) +
                     " cotangents (one per output leaf), got " + std::to_string(cts.size()));
  for (size_t i = 0; i < cts.size(); ++i) {
    if (!(cts[i].shape() == out_avals_[i].shape))
      throw ShapeError("ShapeError: vjp function at " + loc_.str() + ": the cotangent of output " + std::to_string(i) +
                       " has type " + cts[i].aval().str() + " but the output is " + out_avals_[i].str());
    if (cts[i].dtype() != out_avals_[i].dtype)
      throw TypeError("TypeError: vjp function at " + loc_.str() + ": the cotangent of output " + std::to_string(i) +
                      " has type " + cts[i].aval().str() + " but the output is " + out_avals_[i].str());
  }
  std::vector<Array> in = residuals_;
  in.insert(in.end(), cts.begin(), cts.end());
  std::vector<Array> g = eval_program(backward_, in);
  std::vector<Array> result;
  size_t k = 0;
  for (size_t i = 0; i < in_avals_.size(); ++i)
    result.push_back(wrt_[i] ? g[k++] : zeros(in_avals_[i].shape, in_avals_[i].dtype, loc_));
  return result;
}

Pullback make_pullback(const Program& p, std::span<const Array> leaves, std::vector<Array>& outs, SourceLoc loc) {
  std::vector<bool> wrt;
  for (const Array& l : leaves) wrt.push_back(is_inexact(l.dtype()));
  return make_pullback(p, leaves, wrt, outs, loc);
}

Pullback make_pullback(const Program& p, std::span<const Array> leaves, const std::vector<bool>& wrt,
                       std::vector<Array>& outs, SourceLoc loc) {
  std::vector<AbstractArray> in_avals;
  for (const Array& l : leaves) in_avals.push_back(l.aval());
  VjpPrograms v = vjp_programs(p, wrt, p.outvars.size());
  std::vector<Array> fwd = eval_program(v.forward, leaves);
  outs.assign(fwd.begin(), fwd.begin() + long(v.num_outputs));
  std::vector<Array> residuals(fwd.begin() + long(v.num_outputs), fwd.end());
  return Pullback(std::move(v.backward), std::move(residuals), p.out_avals(), std::move(in_avals), wrt, loc);
}

// ---- linearize ----------------------------------------------------------------------------------
LinearMap::LinearMap(Program linear, std::vector<Array> residuals, std::vector<AbstractArray> in_avals, SourceLoc loc)
    : linear_(std::move(linear)), residuals_(std::move(residuals)), in_avals_(std::move(in_avals)), loc_(loc) {}

std::vector<Array> LinearMap::operator()(std::span<const Array> tangents) const {
  if (tangents.size() != in_avals_.size())
    throw ShapeError("ShapeError: linearized function at " + loc_.str() + ": expected " +
                     std::to_string(in_avals_.size()) + " tangent leaves, got " + std::to_string(tangents.size()));
  std::vector<Array> in = residuals_;
  for (size_t i = 0; i < tangents.size(); ++i) {
    if (!tangents[i].aval().same_type(in_avals_[i]))
      throw ShapeError("ShapeError: linearized function at " + loc_.str() + ": tangent " + std::to_string(i) +
                       " has type " + tangents[i].aval().str() + ", the primal is " + in_avals_[i].str());
    if (is_inexact(in_avals_[i].dtype)) in.push_back(tangents[i]);
  }
  return eval_program(linear_, in);
}

LinearMap make_linear_map(const Program& p, std::span<const Array> leaves, std::vector<Array>& outs, SourceLoc loc) {
  std::vector<bool> wrt;
  std::vector<AbstractArray> in_avals;
  for (const Array& l : leaves) {
    wrt.push_back(is_inexact(l.dtype()));
    in_avals.push_back(l.aval());
  }
  LinearizedPrograms lin = linearize_programs(p, wrt, p.outvars.size());
  std::vector<Array> fwd = eval_program(lin.forward, leaves);
  outs.assign(fwd.begin(), fwd.begin() + long(lin.num_outputs));
  std::vector<Array> residuals(fwd.begin() + long(lin.num_outputs), fwd.end());
  return LinearMap(std::move(lin.linear), std::move(residuals), std::move(in_avals), loc);
}

}  // namespace fluxion::detail
