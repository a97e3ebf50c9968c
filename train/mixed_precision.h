// Mixed precision (after DeepMind's jmp): a Policy says which dtype parameters are stored in
// (float32 master weights), which the model computes in (bfloat16 or float16) and which its outputs
// take; a DynamicLossScale keeps float16 gradients from underflowing by scaling the loss up,
// unscaling the gradients, and shrinking the scale -- and skipping the step -- when they overflow.
// Both are plain functions of trees, so they live inside a jitted step.
//
//   auto policy = fx::mixed_precision::policy("params=float32,compute=float16,output=float32");
//   auto scaler = fx::mixed_precision::dynamic_loss_scale();
//   // in the step:
//   auto loss_fn = [&](const Params& p) { return scaler.scale(loss(policy.cast_to_compute(p), x, y)); };
//   Params g = scaler.unscale(fx::grad(loss_fn)(params));
//   fx::Array finite = fx::mixed_precision::all_finite(g);
//   ... new_params, new_state from the optimizer ...
//   params = fx::mixed_precision::select_tree(finite, new_params, params);   // the step is skipped on overflow
//   scaler = scaler.adjust(finite);
#pragma once
#include <string_view>

#include "api/elementwise.h"
#include "api/operands.h"
#include "ir/tree.h"

namespace fluxion::mixed_precision {

struct Policy {
  DType param_dtype = float32, compute_dtype = float32, output_dtype = float32;

  /// Float leaves converted to the dtype; integer and bool leaves (labels, counters) untouched.
  template <class T>
  static T cast(const T& tree, DType dtype) {
    return tree::map([dtype](const Array& a) { return is_float(a.dtype()) ? astype(a, dtype) : a; }, tree);
  }
  template <class T>
  T cast_to_compute(const T& tree) const { return cast(tree, compute_dtype); }
  template <class T>
  T cast_to_param(const T& tree) const { return cast(tree, param_dtype); }
  template <class T>
  T cast_to_output(const T& tree) const { return cast(tree, output_dtype); }
};

/// "params=float32,compute=bfloat16,output=float32" (short names f32/bf16/f16 too; omitted keys
/// stay float32; "compute=half" means float16). A malformed spec is a ValueError.
Policy policy(std::string_view spec);

/// True (a bool scalar) when every element of every float leaf is finite.
Array all_finite(const std::vector<Array>& leaves);
template <class T>
Array all_finite(const T& tree) {
  return all_finite(tree::leaves(tree));
}

/// `on_true` where the bool scalar `pred` holds, else `on_false`, leaf by leaf.
template <class T>
T select_tree(const Array& pred, const T& on_true, const T& on_false) {
  return tree::map([&](const Array& a, const Array& b) { return where(pred, a, b); }, on_true, on_false);
}

/// A loss scale that grows by `factor` after `period` finite steps in a row and shrinks by
/// `factor` (not below `min_scale`) after a step with non-finite gradients. A tree: its scale and
/// counter are Arrays (traced), the constants static leaves.
struct DynamicLossScale {
  Array loss_scale;  // float32 scalar
  Array counter;     // int32 scalar: finite steps since the last change
  int64_t period = 2000;
  double factor = 2.0;
  double min_scale = 1.0;

  Array scale(const Array& loss) const;
  template <class T>
  T unscale(const T& grads) const {
    return tree::map([this](const Array& g) { return unscale_leaf(g); }, grads);
  }
  Array unscale_leaf(const Array& g) const;
  DynamicLossScale adjust(const Array& grads_finite) const;
};
FLUXION_TREE(DynamicLossScale, loss_scale, counter, period, factor, min_scale);

DynamicLossScale dynamic_loss_scale(double initial = 32768.0, int64_t period = 2000, double factor = 2.0,
                                    double min_scale = 1.0);

}  // namespace fluxion::mixed_precision
