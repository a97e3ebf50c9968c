#include "ir/debug_checks.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ir/program.h"
#include "ir/settings.h"

namespace fluxion::config {

namespace {
// Read while the library loads, where an exception would abort: a bad value reads as off here and
// is raised by check_settings() when the first device is made, before anything runs.
bool env_on(const char* name) {
  try {
    return toggle_setting(name, false);
  } catch (const Error&) {
    return false;
  }
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
// Element i of a float or complex array, and whether either of its parts is not finite.
Literal element(const Array& a, int64_t i) {
  return Literal::load(static_cast<const char*>(a.data()) + size_t(i) * itemsize(a.dtype()), a.dtype());
}
bool finite(const Literal& v) { return std::isfinite(v.as_double()) && std::isfinite(v.im); }

// The first non-finite element of a float or complex array: its index, or -1.
int64_t first_nonfinite(const Array& a) {
  const AbstractArray& av = a.aval();
  if (!is_float(av.dtype) && !is_complex(av.dtype)) return -1;
  for (int64_t i = 0; i < av.size(); ++i)
    if (!finite(element(a, i))) return i;
  return -1;
}

// "NaN", "+Inf", "-Inf", or for a complex element both parts ("NaN+1i" reads as its real part's).
std::string describe(const Literal& v, DType d) {
  auto part = [](double x) { return std::isnan(x) ? std::string("NaN") : std::isinf(x) ? std::string(x > 0 ? "+Inf" : "-Inf") : std::to_string(x); };
  return is_complex(d) ? "(" + part(v.as_double()) + ", " + part(v.im) + "i)" : part(v.as_double());
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
    const std::string v = describe(element(outputs[j], at), outputs[j].dtype());
    std::vector<AbstractArray> types;
    for (const Array& in : inputs) types.push_back(in.aval());
    op_error(ErrorKind::FloatingPoint, prim_name(p), types, loc,
             "produced " + v + " (output " +
                 std::to_string(j) + " " + outputs[j].aval().str() + ", element " + std::to_string(at) +
                 ") from finite operands (debug_nans is on)");
  }
}

}  // namespace fluxion
