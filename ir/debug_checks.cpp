#include "ir/debug_checks.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ir/program.h"

namespace fluxion::config {

namespace {
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}
}  // namespace

namespace detail {
std::atomic<bool> g_debug_nans{env_on("FLUXION_DEBUG_NANS")};
std::atomic<bool> g_check_bounds{env_on("FLUXION_CHECK_BOUNDS")};
}  // namespace detail

void debug_nans(bool on) { detail::g_debug_nans.store(on, std::memory_order_relaxed); }
void check_bounds(bool on) { detail::g_check_bounds.store(on, std::memory_order_relaxed); }

}  // namespace fluxion::config

namespace fluxion {

namespace {
// The first non-finite element of a float array: its index, or -1.
int64_t first_nonfinite(const Array& a) {
  const AbstractArray& av = a.aval();
  if (!is_float(av.dtype)) return -1;
  const char* p = static_cast<const char*>(a.data());
  const size_t isz = itemsize(av.dtype);
  for (int64_t i = 0; i < av.size(); ++i) {
    const double v = Literal::load(p + size_t(i) * isz, av.dtype).as_double();
    if (!std::isfinite(v)) return i;
  }
  return -1;
}
}  // namespace

bool has_nonfinite(const Array& a) { return first_nonfinite(a) >= 0; }

void check_nonfinite(Prim p, std::span<const Array> inputs, std::span<const Array> outputs, const Params&,
                     SourceLoc loc) {
  for (size_t j = 0; j < outputs.size(); ++j) {
    const int64_t at = first_nonfinite(outputs[j]);
    if (at < 0) continue;
    for (const Array& in : inputs)
      if (has_nonfinite(in)) return;  // passed along, not produced here
    const char* src = static_cast<const char*>(outputs[j].data());
    const double v = Literal::load(src + size_t(at) * itemsize(outputs[j].dtype()), outputs[j].dtype()).as_double();
    std::vector<AbstractArray> types;
    for (const Array& in : inputs) types.push_back(in.aval());
    op_error(ErrorKind::FloatingPoint, prim_name(p), types, loc,
             std::string("produced ") + (std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf") + " (output " +
                 std::to_string(j) + " " + outputs[j].aval().str() + ", element " + std::to_string(at) +
                 ") from finite operands (debug_nans is on)");
  }
}

}  // namespace fluxion
