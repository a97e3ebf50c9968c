// Magnitude pruning (issue 33; shared/api.md "Quantization and pruning"; docs/quantization.md),
// TensorFlow Model Optimization's and torch.nn.utils.prune's model: masks of 0/1 over the weights
// (every leaf of rank >= 2; biases, norm scales and other vectors are kept), chosen by |w|, kept
// as a tree of the parameters' structure so the optimizer state, checkpoints and jit see them as
// any other tree.
//   auto masks  = fx::prune::magnitude_masks(params, 0.9f);          // 90% of the weights, globally
//   auto pruned = fx::prune::apply(params, masks);                   // or fx::prune::magnitude(params, 0.9f)
//   float s = fx::prune::polynomial_sparsity(step, 0, 1000, 0.9f);  // the schedule while training
#pragma once

#include <vector>

#include "api/creation.h"
#include "api/elementwise.h"
#include "api/operands.h"
#include "ir/tree.h"

namespace fluxion::prune {

enum class Scope {
  global,     // one threshold over every weight of the model (different sparsity per layer)
  per_layer,  // the same sparsity in every weight
};

namespace detail {
std::vector<Array> masks(const std::vector<Array>& leaves, float sparsity, Scope scope);
std::vector<Array> n_of_m(const std::vector<Array>& leaves, int n, int m);
}  // namespace detail

/// 0/1 masks (the leaves' dtype) zeroing the `sparsity` fraction of smallest |w| among the
/// weights; vectors and scalars get all-ones masks. ValueError: sparsity outside [0, 1).
template <class P>
P magnitude_masks(const P& params, float sparsity, Scope scope = Scope::global) {
  auto [leaves, def] = tree::flatten(params);
  return tree::unflatten(def, detail::masks(leaves, sparsity, scope));
}

/// Structured n:m sparsity (2:4 by default, what sparse tensor cores run): in every group of m
/// consecutive weights along the last axis, the n largest |w| are kept.
template <class P>
P n_of_m_masks(const P& params, int n = 2, int m = 4) {
  auto [leaves, def] = tree::flatten(params);
  return tree::unflatten(def, detail::n_of_m(leaves, n, m));
}

/// params * masks, leaf by leaf.
template <class P>
P apply(const P& params, const P& masks) {
  return tree::map([](const Array& p, const Array& m) { return p * m; }, params, masks);
}

/// The pruned parameters: apply(params, magnitude_masks(params, sparsity, scope)).
template <class P>
P magnitude(const P& params, float sparsity, Scope scope = Scope::global) {
  return apply(params, magnitude_masks(params, sparsity, scope));
}

/// The sparsity at `step` of a polynomial schedule (TF-MOT's PolynomialDecay): `initial` before
/// `begin`, `final` from `end`, and between them final + (initial - final) (1 - t)^power,
/// t = (step - begin) / (end - begin).
float polynomial_sparsity(int64_t step, int64_t begin, int64_t end, float final, float initial = 0.f,
                          float power = 3.f);

/// The fraction of zeros among the weights (leaves of rank >= 2).
template <class P>
double weight_sparsity(const P& params) {
  int64_t zeros = 0, all = 0;
  for (const Array& a : tree::leaves(params)) {
    if (a.ndim() < 2) continue;
    for (double v : astype(a, float64).template to_vector<double>()) zeros += v == 0;
    all += a.size();
  }
  return all ? double(zeros) / double(all) : 0.0;
}

}  // namespace fluxion::prune
