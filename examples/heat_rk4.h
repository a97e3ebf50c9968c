// The heat equation u_t = nu u_xx on a periodic grid of `points`, its second derivative by the
// spectrum (rfft, times -k^2, irfft: two library calls), `steps` unrolled RK4 steps up to time
// `horizon`, then a loss. A large unrolled program with library calls: bench/bench_compile.cpp
// times its compile, tests/test_jit_parts.cpp checks it compiled in parts.
#pragma once
#include <fluxion.h>

#include <cmath>
#include <cstdint>

namespace example {

inline fluxion::Array heat_rk4_loss(const fluxion::Array& nu, int64_t points, int steps, double horizon) {
  namespace fx = fluxion;
  fx::Array k = fx::fft::rfftfreq(points, 1.0 / double(points), fx::float64);
  auto rhs = [&](const fx::Array& u) { return nu * fx::fft::irfft(fx::fft::rfft(u) * (-k * k), points); };
  const double dt = horizon / steps;
  fx::Array u = fx::sin(fx::arange(0.0, 2 * M_PI, 2 * M_PI / double(points), fx::float64));
  for (int i = 0; i < steps; ++i) {
    fx::Array k1 = rhs(u), k2 = rhs(u + 0.5 * dt * k1), k3 = rhs(u + 0.5 * dt * k2), k4 = rhs(u + dt * k3);
    u = u + dt / 6 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
  }
  return 0.5 * fx::mean(fx::square(u));
}

}  // namespace example
