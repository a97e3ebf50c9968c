// A spectral PDE step with fx::fft (issue 15): the 1-D heat equation u_t = nu u_xx on the periodic
// interval [0, 2 pi), discretized pseudo-spectrally -- u_xx = irfft(-k^2 rfft(u)) -- and stepped
// with classical Runge-Kutta 4. Three checks against the analytic solution
//   u(x, t) = e^(-nu t) sin x + 0.5 e^(-9 nu t) cos 3x:
//   1. the solution at time T;
//   2. d loss / d nu, by fx::grad through every step (the FFTs' transposes), where
//      loss(nu) = 1/2 mean (u_T(nu) - u_obs)^2 and u_obs is the analytic solution for nu = 0.15;
//   3. nu recovered from u_obs by Newton's method, the second derivative by grad of grad.
// 2 and 3 run compiled (fx::jit), FFTs included.
// Exits non-zero if a check fails (a meson test runs it).
#include <fluxion.h>

#include <cmath>
#include <cstdio>

namespace fx = fluxion;

namespace {
constexpr int kPoints = 64;
constexpr double kT = 0.5, kNuTrue = 0.15;
constexpr int kSteps = 100;

fx::Array grid() { return fx::arange(0.0, 2 * M_PI, 2 * M_PI / kPoints, fx::float64); }

fx::Array analytic(double nu, double t) {
  fx::Array x = grid();
  return std::exp(-nu * t) * fx::sin(x) + 0.5 * std::exp(-9 * nu * t) * fx::cos(3.0 * x);
}

// d analytic / d nu
fx::Array analytic_dnu(double nu, double t) {
  fx::Array x = grid();
  return -t * std::exp(-nu * t) * fx::sin(x) - 4.5 * t * std::exp(-9 * nu * t) * fx::cos(3.0 * x);
}

// u_xx of a periodic sample: the rfft's bins k = 0 .. N/2 times -k^2.
fx::Array second_derivative(const fx::Array& u) {
  fx::Array k = fx::fft::rfftfreq(kPoints, 1.0 / kPoints, fx::float64);  // integer wavenumbers
  return fx::fft::irfft(fx::fft::rfft(u) * (-k * k), kPoints);
}

// The steps are a fori_loop (a scan under trace): the compiled program holds one RK4 step, its
// FFTs library calls from the loop body (lowering/lower_library.cpp). A C++ for loop would unroll
// 100 steps into the traced program, and its gradient's gradient compiles for minutes (MLIR's
// bufferization analysis grows faster than linearly in the size of one function).
fx::Array solve(const fx::Array& nu) {
  const double dt = kT / kSteps;
  auto rhs = [&](const fx::Array& u) { return nu * second_derivative(u); };
  auto step = [&](const fx::Array&, const fx::Array& u) {
    fx::Array k1 = rhs(u), k2 = rhs(u + 0.5 * dt * k1), k3 = rhs(u + 0.5 * dt * k2), k4 = rhs(u + dt * k3);
    return u + dt / 6 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
  };
  return fx::fori_loop(0, kSteps, step, analytic(0.0, 0.0));
}

bool check(const char* what, double got, double want, double tol) {
  const bool ok = std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
  std::printf("%-44s %.10g  (want %.10g)  %s\n", what, got, want, ok ? "ok" : "FAILED");
  return ok;
}
}  // namespace

int main() {
  bool ok = true;
  const fx::Array u_obs = analytic(kNuTrue, kT);
  auto loss = [&](const fx::Array& nu) { return 0.5 * fx::mean(fx::square(solve(nu) - u_obs)); };

  // 1. The solution.
  const double nu0 = 0.1;
  fx::Array u = solve(fx::scalar(nu0));
  ok &= check("max |u_T - analytic| (nu = 0.1)", fx::max(fx::abs(u - analytic(nu0, kT))).item<double>(), 0, 1e-8);

  // 2. The gradient w.r.t. nu against the analytic one.
  auto dloss = fx::jit(fx::grad(loss));
  const double g = dloss(fx::scalar(nu0)).item<double>();
  const double g_want = fx::mean((analytic(nu0, kT) - u_obs) * analytic_dnu(nu0, kT)).item<double>();
  ok &= check("d loss / d nu at nu = 0.1", g, g_want, 1e-6);

  // 3. Newton's method on d loss / d nu = 0.
  auto d2loss = fx::jit(fx::grad(fx::grad(loss)));
  double nu = nu0;
  for (int it = 0; it < 8; ++it) nu -= dloss(fx::scalar(nu)).item<double>() / d2loss(fx::scalar(nu)).item<double>();
  ok &= check("nu recovered by Newton's method", nu, kNuTrue, 1e-7);
  return ok ? 0 : 1;
}
