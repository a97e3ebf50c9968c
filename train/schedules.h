// Learning-rate schedules (optax names): a Schedule maps the optimizer's step count (an int32
// scalar Array, so it traces and runs inside a jitted step) to a float32 scalar. A plain number
// converts to a constant schedule, so every optimizer takes either:
//
//   fx::optim::adamw(1e-3f);
//   fx::optim::adamw(fx::optim::warmup_cosine_decay(0.f, 1e-3f, /*warmup=*/100, /*decay_steps=*/1000));
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "ir/array.h"

namespace fluxion::optim {

class Schedule {
 public:
  Schedule(double value);  // NOLINT(google-explicit-constructor): a constant learning rate
  Schedule(float value) : Schedule(double(value)) {}  // NOLINT(google-explicit-constructor)
  explicit Schedule(std::function<Array(const Array& count)> f) : f_(std::move(f)) {}
  /// The value at `count` (an integer scalar Array): a float32 scalar.
  Array operator()(const Array& count) const;
  /// The value at an integer step, evaluated eagerly (for printing and tests).
  double at(int64_t step) const;

 private:
  std::function<Array(const Array&)> f_;
};

Schedule constant_schedule(double value);
/// init -> end linearly over `transition_steps` steps starting at `transition_begin`, then end.
Schedule linear_schedule(double init, double end, int64_t transition_steps, int64_t transition_begin = 0);
/// init * ((1 - alpha) * (0.5 * (1 + cos(pi * min(t, decay_steps) / decay_steps)))^exponent + alpha).
Schedule cosine_decay(double init, int64_t decay_steps, double alpha = 0.0, double exponent = 1.0);
/// A linear warmup from `init` to `peak` over `warmup_steps`, then a cosine decay from `peak` to
/// `end` over the remaining `decay_steps - warmup_steps` (optax: warmup_cosine_decay_schedule).
Schedule warmup_cosine_decay(double init, double peak, int64_t warmup_steps, int64_t decay_steps, double end = 0.0);
/// init * product of the scales of every boundary <= t (optax: piecewise_constant_schedule).
Schedule piecewise_constant(double init, const std::map<int64_t, double>& boundaries_and_scales);
/// init * rate^(t / transition_steps), the exponent floored when `staircase`.
Schedule exponential_decay(double init, int64_t transition_steps, double decay_rate, bool staircase = false);
/// schedules[i] from boundaries[i-1] on, each seeing the count relative to its start.
Schedule join_schedules(const std::vector<Schedule>& schedules, const std::vector<int64_t>& boundaries);

}  // namespace fluxion::optim
