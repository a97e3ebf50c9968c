#include "train/schedules.h"

#include <cmath>
#include <numbers>
#include <string>

#include "api/creation.h"
#include "api/elementwise.h"
#include "api/operands.h"
#include "ir/error.h"

namespace fluxion::optim {

namespace {

Array steps(const Array& count) { return astype(count, float32); }

}  // namespace

Schedule::Schedule(double value) : f_([value](const Array&) { return scalar(float(value)); }) {}

Array Schedule::operator()(const Array& count) const { return astype(f_(count), float32); }

double Schedule::at(int64_t step) const { return (*this)(scalar(int32_t(step))).item<float>(); }

Schedule constant_schedule(double value) { return Schedule(value); }

Schedule linear_schedule(double init, double end, int64_t transition_steps, int64_t transition_begin) {
  if (transition_steps <= 0) return Schedule(init);
  return Schedule([=](const Array& count) {
    Array t = clip(subtract(steps(count), double(transition_begin)), 0.0, double(transition_steps));
    return add(multiply(t, (end - init) / double(transition_steps)), scalar(float(init)));
  });
}

Schedule cosine_decay(double init, int64_t decay_steps, double alpha, double exponent) {
  if (decay_steps <= 0)
    throw ValueError("ValueError: cosine_decay: decay_steps must be positive, got " + std::to_string(decay_steps));
  return Schedule([=](const Array& count) {
    Array frac = divide(minimum(steps(count), double(decay_steps)), double(decay_steps));
    Array cosine = multiply(add(cos(multiply(frac, std::numbers::pi)), 1.0), 0.5);
    if (exponent != 1.0) cosine = power(cosine, exponent);
    return multiply(add(multiply(cosine, 1.0 - alpha), alpha), scalar(float(init)));
  });
}

Schedule warmup_cosine_decay(double init, double peak, int64_t warmup_steps, int64_t decay_steps, double end) {
  const int64_t rest = std::max<int64_t>(1, decay_steps - warmup_steps);
  Schedule decay = cosine_decay(peak, rest, peak == 0 ? 0.0 : end / peak);
  if (warmup_steps <= 0) return decay;
  return join_schedules({linear_schedule(init, peak, warmup_steps), decay}, {warmup_steps});
}

Schedule piecewise_constant(double init, const std::map<int64_t, double>& boundaries_and_scales) {
  return Schedule([=](const Array& count) {
    Array v = scalar(float(init));
    for (const auto& [boundary, s] : boundaries_and_scales)
      v = where(greater_equal(count, scalar(int32_t(boundary))), multiply(v, s), v);
    return v;
  });
}

Schedule exponential_decay(double init, int64_t transition_steps, double decay_rate, bool staircase) {
  if (transition_steps <= 0)
    throw ValueError("ValueError: exponential_decay: transition_steps must be positive, got " +
                     std::to_string(transition_steps));
  return Schedule([=](const Array& count) {
    Array p = divide(steps(count), double(transition_steps));
    if (staircase) p = floor(p);
    return multiply(power(scalar(float(decay_rate)), p), float(init));
  });
}

Schedule join_schedules(const std::vector<Schedule>& schedules, const std::vector<int64_t>& boundaries) {
  if (schedules.empty() || boundaries.size() + 1 != schedules.size())
    throw ValueError("ValueError: join_schedules: needs one boundary fewer than schedules (got " +
                     std::to_string(schedules.size()) + " schedules and " + std::to_string(boundaries.size()) +
                     " boundaries)");
  return Schedule([=](const Array& count) {
    Array v = schedules[0](count);
    for (size_t i = 0; i < boundaries.size(); ++i) {
      Array b = scalar(int32_t(boundaries[i]));
      v = where(greater_equal(count, b), schedules[i + 1](subtract(count, b)), v);
    }
    return v;
  });
}

}  // namespace fluxion::optim
