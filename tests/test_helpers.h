// Small helpers the focused tests share.
#pragma once
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace test_helpers {

/// n values from lo to hi, evenly spaced (both ends included).
inline std::vector<float> ramp(int64_t n, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = lo + (hi - lo) * float(i) / float(std::max<int64_t>(n - 1, 1));
  return v;
}

/// max |a - b| over the elements, computed in float64; a and b must have the same shape.
inline double max_abs_diff(const fluxion::Array& a, const fluxion::Array& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> x = fluxion::astype(a, fluxion::float64).to_vector<double>();
  const std::vector<double> y = fluxion::astype(b, fluxion::float64).to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

/// The message of the error of kind E (any fluxion::Error by default) that `call` raises; "(no
/// error)" when it raises none, "(another kind of error: ...)" when it raises a fluxion::Error of
/// another kind -- so a check on the message also checks the kind.
template <class E = fluxion::Error, class F>
std::string error_of(F call) {
  try {
    call();
  } catch (const fluxion::Error& e) {
    if constexpr (std::is_same_v<E, fluxion::Error>) {
      return e.what();
    } else {
      if (dynamic_cast<const E*>(&e) != nullptr) return e.what();
      return std::string("(another kind of error: ") + e.what() + ")";
    }
  }
  return "(no error)";
}

/// Sets an environment variable (or, with nullptr, unsets it) for one scope and restores what was
/// there, also when the scope is left by an exception (a failed REQUIRE).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    set(value);
  }
  ScopedEnv(const char* name, const std::string& value) : ScopedEnv(name, value.c_str()) {}
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { set(had_ ? old_.c_str() : nullptr); }

  /// Changes the value within the scope; the destructor still restores the original.
  void set(const char* value) const {
    if (value) setenv(name_, value, 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace test_helpers
