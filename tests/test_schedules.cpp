// Learning-rate schedules against their formulas, evaluated eagerly and under jit.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <functional>
#include <numbers>

namespace fx = fluxion;

namespace {

void check_schedule(const fx::optim::Schedule& s, const std::function<double(int64_t)>& formula, int64_t until) {
  auto jitted = fx::jit([&](const fx::Array& count) { return s(count); });
  for (int64_t t = 0; t <= until; ++t) {
    CHECK(s.at(t) == doctest::Approx(formula(t)).epsilon(1e-5));
    CHECK(jitted(fx::scalar(int32_t(t))).item<float>() == doctest::Approx(formula(t)).epsilon(1e-5));
  }
}

double cosine(double init, int64_t steps, double alpha, int64_t t) {
  double frac = double(std::min(t, steps)) / double(steps);
  return init * ((1 - alpha) * 0.5 * (1 + std::cos(std::numbers::pi * frac)) + alpha);
}

}  // namespace

TEST_CASE("schedules: constant, linear, cosine decay against their formulas") {
  check_schedule(0.25f, [](int64_t) { return 0.25; }, 3);
  check_schedule(fx::optim::linear_schedule(1.0, 0.1, 10, 2),
                 [](int64_t t) { return 1.0 + (0.1 - 1.0) * std::clamp(double(t - 2), 0.0, 10.0) / 10.0; }, 15);
  check_schedule(fx::optim::cosine_decay(0.5, 8, 0.1), [](int64_t t) { return cosine(0.5, 8, 0.1, t); }, 12);
}

TEST_CASE("schedules: warmup then cosine, piecewise constant, exponential decay") {
  // optax.warmup_cosine_decay_schedule(0, 1, 4, 12, 0.1): linear 0 -> 1 over 4 steps, then cosine to 0.1.
  check_schedule(fx::optim::warmup_cosine_decay(0.0, 1.0, 4, 12, 0.1),
                 [](int64_t t) { return t < 4 ? double(t) / 4 : cosine(1.0, 8, 0.1, t - 4); }, 14);
  check_schedule(fx::optim::piecewise_constant(1.0, {{3, 0.5}, {6, 0.1}}),
                 [](int64_t t) { return t < 3 ? 1.0 : t < 6 ? 0.5 : 0.05; }, 8);
  check_schedule(fx::optim::exponential_decay(2.0, 4, 0.5), [](int64_t t) { return 2.0 * std::pow(0.5, t / 4.0); }, 9);
  check_schedule(fx::optim::exponential_decay(2.0, 4, 0.5, /*staircase=*/true),
                 [](int64_t t) { return 2.0 * std::pow(0.5, double(t / 4)); }, 9);
  CHECK_THROWS_AS(fx::optim::cosine_decay(1.0, 0), fx::ValueError);
  CHECK_THROWS_AS(fx::optim::join_schedules({0.1, 0.2}, {}), fx::ValueError);
}
