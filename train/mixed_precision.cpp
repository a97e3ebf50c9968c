#include "train/mixed_precision.h"

#include <string>

#include "api/creation.h"
#include "api/reductions.h"
#include "ir/error.h"

namespace fluxion::mixed_precision {

namespace {

DType parse_policy_dtype(std::string_view v, std::string_view spec) {
  if (v == "half") return float16;
  if (v == "full") return float32;
  DType d;
  if (!parse_dtype(v, &d) || !is_float(d))
    throw ValueError("ValueError: mixed_precision::policy(\"" + std::string(spec) + "\"): '" + std::string(v) +
                     "' is not a floating dtype");
  return d;
}

}  // namespace

Policy policy(std::string_view spec) {
  Policy p;
  size_t at = 0;
  while (at < spec.size()) {
    size_t comma = spec.find(',', at);
    std::string_view item = spec.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    at = comma == std::string_view::npos ? spec.size() : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw ValueError("ValueError: mixed_precision::policy(\"" + std::string(spec) + "\"): expected key=dtype, got '" +
                       std::string(item) + "'");
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    DType d = parse_policy_dtype(value, spec);
    if (key == "params" || key == "p") p.param_dtype = d;
    else if (key == "compute" || key == "c") p.compute_dtype = d;
    else if (key == "output" || key == "o") p.output_dtype = d;
    else
      throw ValueError("ValueError: mixed_precision::policy(\"" + std::string(spec) + "\"): unknown key '" +
                       std::string(key) + "' (params, compute, output)");
  }
  return p;
}

Array all_finite(const std::vector<Array>& leaves) {
  Array ok = scalar(true);
  for (const Array& l : leaves)
    if (is_float(l.dtype())) ok = logical_and(ok, all(isfinite(l)));
  return ok;
}

Array DynamicLossScale::scale(const Array& loss) const { return multiply(loss, astype(loss_scale, loss.dtype())); }

Array DynamicLossScale::unscale_leaf(const Array& g) const {
  // Unscale in float32: the scaled float16 gradient would lose range if divided in float16.
  return divide(astype(g, float32), loss_scale);
}

DynamicLossScale DynamicLossScale::adjust(const Array& grads_finite) const {
  Array grown = add(counter, scalar(int32_t(1)));
  Array at_period = equal(grown, scalar(int32_t(period)));
  Array finite_scale = where(at_period, multiply(loss_scale, float(factor)), loss_scale);
  Array finite_counter = where(at_period, scalar(int32_t(0)), grown);
  Array shrunk = maximum(divide(loss_scale, float(factor)), float(min_scale));
  DynamicLossScale next = *this;
  next.loss_scale = where(grads_finite, finite_scale, shrunk);
  next.counter = where(grads_finite, finite_counter, scalar(int32_t(0)));
  return next;
}

DynamicLossScale dynamic_loss_scale(double initial, int64_t period, double factor, double min_scale) {
  return DynamicLossScale{scalar(float(initial)), scalar(int32_t(0)), period, factor, min_scale};
}

}  // namespace fluxion::mixed_precision
