// Small helpers the focused tests share.
#pragma once
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <cmath>
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

/// The message of the fluxion::Error that `call` raises, or "(no error)".
template <class F>
std::string error_of(F call) {
  try {
    call();
  } catch (const fluxion::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace test_helpers
