// Fitting an ODE's parameters with Newton's method, entirely in Fluxion.
//
// The model: dy/dt = c - k y, y(0) = 1, integrated by 40 classical Runge-Kutta steps on [0, 4]
// (a traced C++ loop); the data: the same integrator's trajectory at the true parameters
// (k, c) = (1.3, 2.0). The loss is the sum of squared residuals; Newton's step solves
// H(theta) delta = -g(theta) with the Hessian from fx::jacfwd of fx::grad (forward over reverse)
// and fx::linalg::solve, and the whole step is one jitted function. Exact data means the minimum
// is the truth with zero residual, so the run must converge quadratically to it; the program exits
// non-zero otherwise (examples/meson.build runs it as a test). fx::hessian, which is
// jacfwd(jacrev(f)), must agree with the forward-over-reverse Hessian used for the steps.
#include <fluxion.h>

#include <cmath>
#include <cstdio>

namespace fx = fluxion;

namespace {

constexpr int kSteps = 40;
constexpr double kDt = 0.1;

// y at t = dt, 2 dt, ..., kSteps dt for theta = (k, c).
fx::Array trajectory(const fx::Array& theta) {
  fx::Array k = theta[0], c = theta[1];
  auto rhs = [&](const fx::Array& y) { return c - k * y; };
  fx::Array y = fx::scalar(1.0);
  std::vector<fx::Array> ys;
  for (int i = 0; i < kSteps; ++i) {
    fx::Array k1 = rhs(y), k2 = rhs(y + 0.5 * kDt * k1), k3 = rhs(y + 0.5 * kDt * k2), k4 = rhs(y + kDt * k3);
    y = y + (kDt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    ys.push_back(y);
  }
  return fx::stack(ys);
}

}  // namespace

int main() {
  const fx::Array truth = fx::array({1.3, 2.0});
  const fx::Array data = trajectory(truth);
  auto loss = [&](const fx::Array& theta) {
    fx::Array r = trajectory(theta) - data;
    return fx::sum(r * r);
  };
  auto newton_step = fx::jit([&](const fx::Array& theta) {
    fx::Array g = fx::grad(loss)(theta);
    fx::Array h = fx::jacfwd(fx::grad(loss))(theta);
    return theta - fx::linalg::solve(h, g);
  });

  fx::Array theta = fx::array({0.8, 1.2});
  double grad_norm = 1;
  int iterations = 0;
  for (; iterations < 20 && grad_norm > 1e-10; ++iterations) {
    theta = newton_step(theta);
    grad_norm = fx::linalg::norm(fx::grad(loss)(theta)).item<double>();
    std::printf("iteration %2d  k = %.12f  c = %.12f  loss = %.3e  |grad| = %.3e\n", iterations + 1,
                theta[0].item<double>(), theta[1].item<double>(), loss(theta).item<double>(), grad_norm);
  }
  const double err = fx::max(fx::abs(theta - truth)).item<double>();
  const fx::Array h_fwd_rev = fx::jacfwd(fx::grad(loss))(theta), h = fx::hessian(loss)(theta);
  const double hess_diff = fx::max(fx::abs(h - h_fwd_rev)).item<double>();
  std::printf("converged in %d iterations: |theta - truth| = %.3e, |hessian - jacfwd(grad)| = %.3e\n", iterations, err,
              hess_diff);
  const bool ok = grad_norm <= 1e-10 && err < 1e-9 && hess_diff < 1e-9 * fx::max(fx::abs(h)).item<double>();
  if (!ok) std::printf("FAILED: Newton's method did not reach the true parameters\n");
  return ok ? 0 : 1;
}
