#include "train/prune.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "api/creation.h"
#include "api/elementwise.h"
#include "api/operands.h"

namespace fluxion::prune {

namespace {

bool weight(const Array& a) { return a.ndim() >= 2; }

std::vector<double> magnitudes(const Array& a) {
  std::vector<double> v = astype(a, float64).to_vector<double>();
  for (double& x : v) x = std::abs(x);
  return v;
}

// The mask keeping |w| > threshold, plus (ties at the threshold) the first `ties` of them in
// order, so that exactly the asked number is pruned.
Array mask_of(const Array& a, double threshold, int64_t& ties) {
  std::vector<double> m = magnitudes(a);
  std::vector<float> keep(m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    keep[i] = m[i] > threshold ? 1.f : 0.f;
    if (m[i] == threshold && ties > 0) keep[i] = 1.f, --ties;
  }
  return astype(array(keep, a.shape()), a.dtype());
}

}  // namespace

float polynomial_sparsity(int64_t step, int64_t begin, int64_t end, float final, float initial, float power) {
  if (end <= begin) throw ValueError("ValueError: prune::polynomial_sparsity: end " + std::to_string(end) +
                                     " must come after begin " + std::to_string(begin));
  if (step <= begin) return initial;
  if (step >= end) return final;
  const double t = double(step - begin) / double(end - begin);
  return float(final + (initial - final) * std::pow(1.0 - t, double(power)));
}

namespace detail {

std::vector<Array> masks(const std::vector<Array>& leaves, float sparsity, Scope scope) {
  if (!(sparsity >= 0.f && sparsity < 1.f))
    throw ValueError("ValueError: prune::magnitude: sparsity " + std::to_string(sparsity) + " is not in [0, 1)");
  std::vector<Array> out;
  // The threshold: the magnitude of the k-th smallest weight (k = sparsity x count), over every
  // weight (global) or per leaf; the weights kept are those above it, ties filled in order.
  auto threshold = [&](std::vector<double> m, int64_t& keep_ties) {
    const int64_t prune_n = int64_t(std::floor(double(sparsity) * double(m.size())));
    if (prune_n == 0) return keep_ties = 0, -1.0;
    std::nth_element(m.begin(), m.begin() + (prune_n - 1), m.end());
    const double t = m[size_t(prune_n - 1)];
    const int64_t at_or_below = std::count_if(m.begin(), m.end(), [&](double x) { return x <= t; });
    keep_ties = at_or_below - prune_n;
    return t;
  };
  double global_t = -1;
  int64_t global_ties = 0;
  if (scope == Scope::global) {
    std::vector<double> all;
    for (const Array& a : leaves)
      if (weight(a)) {
        std::vector<double> m = magnitudes(a);
        all.insert(all.end(), m.begin(), m.end());
      }
    if (!all.empty()) global_t = threshold(std::move(all), global_ties);
  }
  for (const Array& a : leaves) {
    if (!weight(a)) {
      out.push_back(ones(a.shape(), a.dtype()));
      continue;
    }
    if (scope == Scope::global) {
      out.push_back(mask_of(a, global_t, global_ties));
    } else {
      int64_t ties = 0;
      const double t = threshold(magnitudes(a), ties);
      out.push_back(mask_of(a, t, ties));
    }
  }
  return out;
}

std::vector<Array> n_of_m(const std::vector<Array>& leaves, int n, int m) {
  if (n < 1 || m < 2 || n >= m)
    throw ValueError("ValueError: prune::n_of_m_masks: " + std::to_string(n) + ":" + std::to_string(m) +
                     " is not a sparsity pattern (1 <= n < m)");
  std::vector<Array> out;
  for (const Array& a : leaves) {
    if (!weight(a)) {
      out.push_back(ones(a.shape(), a.dtype()));
      continue;
    }
    const int64_t last = a.shape()[size_t(a.ndim() - 1)];
    if (last % m != 0)
      throw ValueError("ValueError: prune::n_of_m_masks: the last axis of " + a.aval().str() +
                       " is not a multiple of " + std::to_string(m));
    std::vector<double> mag = magnitudes(a);
    std::vector<float> keep(mag.size(), 0.f);
    std::vector<size_t> idx(static_cast<size_t>(m));
    for (size_t g = 0; g < mag.size(); g += size_t(m)) {
      for (size_t j = 0; j < size_t(m); ++j) idx[j] = g + j;
      std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return mag[x] > mag[y]; });
      for (size_t j = 0; j < size_t(n); ++j) keep[idx[j]] = 1.f;
    }
    out.push_back(astype(array(keep, a.shape()), a.dtype()));
  }
  return out;
}

}  // namespace detail

}  // namespace fluxion::prune
