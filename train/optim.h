// fx::optim: optimizers as composable gradient transformations (Optax's design). A transformation
// is a pair of pure functions: `init(params)` makes its state, `update(grads, state, params)` turns
// gradients into updates and returns the new state. `chain` runs several in sequence; the named
// optimizers (sgd, adam, adamw, ...) are chains of the building blocks below. Everything is made of
// ordinary array ops, so a whole training step -- loss, gradients, optimizer, apply_updates --
// traces into one program under fx::jit, where the update of every parameter fuses into one pass.
//
//   auto opt = fx::optim::chain(fx::optim::clip_by_global_norm(1.0f),
//                               fx::optim::adamw(fx::optim::cosine_decay(1e-3f, 1000), /*wd=*/1e-4f));
//   fx::optim::State state = opt.init(params);
//   auto [updates, state2] = opt.update(grads, state, params);
//   params = fx::optim::apply_updates(params, updates);
//   std::tie(params, state) = opt.step(grads, state, params);   // the same, fused per parameter
//
// A State is a tree (a list of parts, each a list of Arrays): it passes through jit, grad and
// fx::save/fx::load like parameters do.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "ir/tree.h"
#include "train/schedules.h"

namespace fluxion::optim {

using Leaves = std::vector<Array>;
/// A transformation's state: `parts` lists of Arrays (per-parameter moments, a step count, ...).
using State = std::vector<Leaves>;

/// Which parameters a transformation applies to (weight decay, say): a predicate on each parameter
/// leaf, or a list of flags in leaf order (the order of fx::tree::leaves).
class Mask {
 public:
  Mask() = default;  // every leaf
  Mask(std::function<bool(const Array& param)> pred) : pred_(std::move(pred)) {}  // NOLINT
  Mask(std::vector<bool> flags) : flags_(std::move(flags)), has_flags_(true) {}  // NOLINT
  /// Whether leaf `index` of `count` (the parameter `param`) is selected.
  bool selects(size_t index, size_t count, const Array& param) const;

 private:
  std::function<bool(const Array&)> pred_;
  std::vector<bool> flags_;
  bool has_flags_ = false;
};

/// Mask that selects parameters of rank >= 2 (weights, not biases or normalisation scales).
Mask matrices_only();

/// One building block: per step it first computes what all leaves share (a step count, bias
/// corrections, a global norm), then rewrites each leaf's update. Its state is `scalar_parts`
/// parts of one Array each (counts) followed by `leaf_parts` parts of one Array per parameter.
struct Stage {
  int scalar_parts = 0, leaf_parts = 0;
  /// Reads every leaf's incoming update before any leaf can go on (clip_by_global_norm): the
  /// stages before it finish all leaves first.
  bool global = false;
  std::function<State(const Leaves& params)> init;
  /// (its scalar parts, the incoming updates) -> (values shared by the leaves, new scalar parts).
  std::function<std::pair<Leaves, Leaves>(const Leaves& scalars, const Leaves& updates)> prepare;
  /// Rewrites the update of leaf `index` of `count`; returns the leaf's new entries of the per-leaf
  /// parts. `param` is empty when update() was called without parameters.
  std::function<Leaves(Array& update, const Leaves& leaf_state, const Array& param, const Leaves& shared,
                       size_t index, size_t count)>
      leaf;
};

/// A chain of stages. The update is emitted leaf by leaf -- every stage for leaf 1, then leaf 2,
/// ... -- so that under jit each parameter's arithmetic is one run of elementwise ops, which the
/// jit fuses into one loop; step() adds the parameter update to that run.
struct GradientTransformation {
  std::vector<Stage> stages;

  int parts() const;
  State init_leaves(const Leaves& params) const;
  /// Rewrites `updates` in place and returns the new state; with `new_params`, also writes
  /// params + updates there, each right after its leaf's update.
  State update_leaves(Leaves& updates, const State& state, const Leaves& params, Leaves* new_params = nullptr) const;

  template <class T>
  State init(const T& params) const {
    return init_leaves(tree::leaves(params));
  }
  template <class T>
  std::pair<T, State> update(const T& grads, const State& state, const T& params) const {
    Leaves u = tree::leaves(grads);
    State next = update_leaves(u, state, tree::leaves(params));
    const Array* it = u.data();
    return {tree::rebuild(grads, it), std::move(next)};
  }
  /// For transformations that do not read the parameters.
  template <class T>
  std::pair<T, State> update(const T& grads, const State& state) const {
    Leaves u = tree::leaves(grads);
    State next = update_leaves(u, state, {});
    const Array* it = u.data();
    return {tree::rebuild(grads, it), std::move(next)};
  }
  /// update + apply_updates in one: (new params, new state). The same values; under jit each
  /// parameter's whole step is one fused loop (reads p, g and the moments once, writes each once).
  template <class T>
  std::pair<T, State> step(const T& grads, const State& state, const T& params) const {
    Leaves u = tree::leaves(grads), p = tree::leaves(params), out;
    State next = update_leaves(u, state, p, &out);
    const Array* it = out.data();
    return {tree::rebuild(params, it), std::move(next)};
  }
};

/// params + updates, leaf by leaf, in each parameter's dtype.
template <class T>
T apply_updates(const T& params, const T& updates);
Array apply_update(const Array& param, const Array& update);

/// Runs transformations in order; the state is their states' parts, concatenated.
GradientTransformation chain(std::vector<GradientTransformation> transformations);
template <class... Ts>
GradientTransformation chain(const GradientTransformation& first, const Ts&... rest) {
  return chain(std::vector<GradientTransformation>{first, rest...});
}

// ---- building blocks ---------------------------------------------------------------------------
/// updates * factor.
GradientTransformation scale(double factor);
/// updates * -learning_rate(step): the descent step. State: the step count.
GradientTransformation scale_by_learning_rate(Schedule learning_rate);
/// Momentum: t = g + decay * t; updates = t, or g + decay * t with Nesterov.
GradientTransformation trace(double decay, bool nesterov = false);
/// Adam's rescaling: bias-corrected first and second moments, m / (sqrt(v) + eps).
GradientTransformation scale_by_adam(double b1 = 0.9, double b2 = 0.999, double eps = 1e-8);
/// RMSProp's rescaling: g / sqrt(v + eps) with v a moving average of g^2.
GradientTransformation scale_by_rms(double decay = 0.9, double eps = 1e-8, double initial_scale = 0.0);
/// Adagrad's rescaling: g / sqrt(sum of g^2 + eps) (zero where that sum is zero).
GradientTransformation scale_by_rss(double initial_accumulator = 0.1, double eps = 1e-7);
/// Lion's update direction: sign(b1 * m + (1 - b1) * g); m = b2 * m + (1 - b2) * g.
GradientTransformation scale_by_lion(double b1 = 0.9, double b2 = 0.99);
/// updates + weight_decay * params on the masked leaves (decoupled weight decay).
GradientTransformation add_decayed_weights(double weight_decay, Mask mask = {});
/// Scales all updates by max_norm / global_norm when their global L2 norm exceeds max_norm.
GradientTransformation clip_by_global_norm(double max_norm);
/// Clamps every update to [-max_delta, max_delta].
GradientTransformation clip(double max_delta);

// ---- optimizers ---------------------------------------------------------------------------------
GradientTransformation sgd(Schedule learning_rate, double momentum = 0.0, bool nesterov = false);
GradientTransformation adam(Schedule learning_rate, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8);
GradientTransformation adamw(Schedule learning_rate, double weight_decay = 1e-4, double b1 = 0.9, double b2 = 0.999,
                             double eps = 1e-8, Mask mask = {});
GradientTransformation rmsprop(Schedule learning_rate, double decay = 0.9, double eps = 1e-8, double momentum = 0.0,
                               bool nesterov = false);
GradientTransformation adagrad(Schedule learning_rate, double initial_accumulator = 0.1, double eps = 1e-7);
GradientTransformation lion(Schedule learning_rate, double b1 = 0.9, double b2 = 0.99, double weight_decay = 1e-3,
                            Mask mask = {});

/// sqrt of the sum of squares of every leaf: a float32 scalar.
Array global_norm(const Leaves& leaves);
template <class T>
Array global_norm(const T& tree) {
  return global_norm(tree::leaves(tree));
}

// ---- template definitions ------------------------------------------------------------------------
template <class T>
T apply_updates(const T& params, const T& updates) {
  return tree::map([](const Array& p, const Array& u) { return apply_update(p, u); }, params, updates);
}

}  // namespace fluxion::optim
