// The autodiff drivers' shared machinery (tests/test_op_table_jvp.cpp, test_op_table_vjp.cpp): the
// float64 cases drawn from the op table, host-side vector arithmetic, and finite differences.
//
// Finite differences use the 5-point stencil (error O(h^4)) along a direction scaled per element
// by |x_i| + 0.01, so steps stay relative and never cross 0 from a nonzero point (abs, sqrt, log).
// A sample whose difference quotients at h and h/2 disagree straddles a kink or a jump (floor,
// max at a tie) and is skipped for the finite-difference checks only; the count is reported and
// bounded.
#pragma once
#include <doctest/doctest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "op_table.h"

namespace optable {

using Arrays = std::vector<fx::Array>;

// ---- host-side vector arithmetic ------------------------------------------------------------------
std::vector<double> host_data(const fx::Array& a);
/// sum a_i b_i over every element of every array.
double dot(const Arrays& a, const Arrays& b);
/// sum |a_i b_i|: the scale of dot's rounding error.
double abs_dot(const Arrays& a, const Arrays& b);
/// x + c * v, elementwise, in x's dtype.
Arrays axpy(const Arrays& x, double c, const Arrays& v);
bool all_finite(const Arrays& xs);
/// Every element of every array, in order.
std::vector<double> flat(const Arrays& xs);

// ---- the cases -----------------------------------------------------------------------------------
struct AdCase {
  const OpInfo* op = nullptr;
  Arrays args;              // all operands: float ones in float64, the others in their own dtype
  std::vector<size_t> wrt;  // the float operands (the ones that get tangents)
  std::string what;
  uint64_t seed = 0;
  bool out_f64 = true;  // false: a narrower float result (astype), too coarse for finite differences

  Arrays floats() const {
    Arrays r;
    for (size_t k : wrt) r.push_back(args[k]);
    return r;
  }
  // The op as a function of its float operands only.
  fx::Array call(const Arrays& xs) const {
    Arrays a = args;
    for (size_t k = 0; k < wrt.size(); ++k) a[wrt[k]] = xs[k];
    return op->op(a);
  }
  std::function<fx::Array(const Arrays&)> fn() const {
    return [this](const Arrays& xs) { return call(xs); };
  }
};

bool has_float_dtype(const OpInfo& op);
/// Every differentiable entry's samples with at least one float operand, converted to float64, whose
/// eager evaluation succeeds and gives a finite float result.
const std::vector<AdCase>& ad_cases();

/// Values in [lo, hi) of the arrays' types and shapes.
Arrays random_like(const Arrays& xs, double lo, double hi, uint64_t seed);
/// A direction with steps relative to each element's magnitude.
Arrays relative_direction(const Arrays& xs, uint64_t seed);

// ---- finite differences -----------------------------------------------------------------------------
using HostFn = std::function<std::vector<double>(const Arrays&)>;
/// The directional derivative of g at x along v by finite differences, or nullopt where the
/// stencils at h and h/2 disagree (a kink or jump within reach), the one-sided differences disagree
/// (a kink exactly at x: ties of sort or max, abs at 0), or a value is not finite.
std::optional<std::vector<double>> finite_difference(const HostFn& g, const Arrays& x, const Arrays& v);
/// Elementwise agreement of an AD result with finite differences within the jvp check's float64
/// tolerance, its atol relative to the largest magnitude: the FD error here is ~1e-10 relative to
/// the function's scale, a wrong rule is off by O(1).
void check_against_fd(const std::vector<double>& ad, const std::vector<double>& fd, const std::string& what);

/// sum(y * u): a scalar function of y whose gradient is u.
fx::Array weighted_sum(const fx::Array& y, const fx::Array& u);

// Kinks skipped per check are bounded: the samples are random, so a few at most straddle one.
struct SkipCounter {
  const char* check;
  size_t skipped = 0, total = 0;
  std::string which;
  void skip(const std::string& what) {
    ++skipped;
    which += "\n  " + what;
  }
  ~SkipCounter() {
    MESSAGE(std::string(check) << ": " << skipped << " of " << total << " samples skipped for a kink near them:" << which);
  }
};

}  // namespace optable
