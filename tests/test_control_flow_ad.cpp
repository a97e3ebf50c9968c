// Autodiff through control flow (cond, switch_, while_loop, fori_loop, scan): values against C++
// reference loops, derivatives against central differences in float64, higher order, nesting,
// checkpointed scan bodies, the error for reverse mode through an unbounded while, and every
// derived program verified and round-tripped through its text form.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>
#include <vector>

#include "interpreters/jvp.h"
#include "interpreters/vjp.h"

namespace fx = fluxion;

namespace {

fx::Array randn(fx::Shape s, uint32_t seed) { return fx::random::normal(fx::random::key(seed), s, fx::float64); }

std::vector<double> vec(const fx::Array& a) { return a.to_vector<double>(); }

/// Central differences of a scalar function of one array, in float64.
template <class F>
std::vector<double> fd_grad(const F& f, const fx::Array& x, double h = 1e-6) {
  std::vector<double> base = vec(x), g(base.size());
  for (size_t i = 0; i < base.size(); ++i) {
    std::vector<double> v = base;
    v[i] = base[i] + h;
    double up = f(fx::array(v, x.shape())).template item<double>();
    v[i] = base[i] - h;
    double down = f(fx::array(v, x.shape())).template item<double>();
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i])));
  }
}

/// A derived program must verify and print back to itself.
void check_program(const fx::Program& p) {
  CAPTURE(p.str());
  fx::verify(p);
  CHECK(fx::parse_program(p.str()).str() == p.str());
}

/// Traces f at x, derives its jvp, linearized and transposed programs, and checks every one.
template <class F>
void check_derived_programs(const F& f, const fx::Array& x) {
  fx::Program p = fx::make_ir(f)(x);
  check_program(p);
  check_program(fx::jvp_program(p, {true}));
  fx::VjpPrograms v = fx::vjp_programs(p, {true}, 1);
  check_program(v.forward);
  check_program(v.backward);
  check_program(fx::grad_program(p, {true}, {false}));
  check_program(fx::make_ir(fx::grad(f))(x));
}

/// f's gradient against central differences, its derived programs, and jvp against vjp.
template <class F>
void check_grad(const F& f, const fx::Array& x, double tol = 1e-6) {
  fx::Array g = fx::grad(f)(x);
  check_close(vec(g), fd_grad(f, x), tol);
  fx::Array t = randn(x.shape(), 99);
  auto [y, jt] = fx::jvp(f, std::tuple{x}, std::tuple{t});
  CHECK(y.template item<double>() == doctest::Approx(f(x).template item<double>()).epsilon(1e-12));
  CHECK(jt.template item<double>() == doctest::Approx(fx::sum(g * t).template item<double>()).epsilon(1e-9));
  check_derived_programs(f, x);
}

size_t count_prim(const fx::Program& p, fx::Prim prim) {
  size_t n = 0;
  for (const fx::Eqn& e : p.eqns) n += e.prim == prim;
  return n;
}

}  // namespace

// ---- cond and switch_ -----------------------------------------------------------------------------
TEST_CASE("control flow AD: cond, both branches, against finite differences") {
  fx::Array w = fx::array({0.5, -1.5, 2.0});
  auto f = [&](const fx::Array& x) {
    fx::Array r = fx::cond(fx::sum(x) > 0.0, [&] { return fx::sin(x) * w * x; }, [&] { return fx::exp(x) + w; });
    return fx::sum(r * r);
  };
  auto reference = [&](const std::vector<double>& x) {
    double s = x[0] + x[1] + x[2], out = 0;
    std::vector<double> wv = vec(w);
    for (size_t i = 0; i < 3; ++i) {
      double r = s > 0 ? std::sin(x[i]) * wv[i] * x[i] : std::exp(x[i]) + wv[i];
      out += r * r;
    }
    return out;
  };
  for (std::vector<double> xv : {std::vector<double>{0.3, 0.9, -0.2}, std::vector<double>{-0.7, 0.1, -0.4}}) {
    fx::Array x = fx::array(xv);
    CHECK(f(x).item<double>() == doctest::Approx(reference(xv)).epsilon(1e-14));
    check_grad(f, x);
  }
  // The derivative with respect to a value only the branches capture.
  auto g = [&](const fx::Array& v) {
    return fx::sum(fx::cond(fx::sum(v) > 100.0, [&] { return v; }, [&] { return fx::sin(v) * w; }));
  };
  check_grad(g, fx::array({0.1, 0.2, 0.3}));
}

TEST_CASE("control flow AD: switch_ with three branches, index clamped") {
  for (int32_t index : {-3, 0, 1, 2, 7}) {
    CAPTURE(index);
    auto f = [&](const fx::Array& x) {
      fx::Array i = fx::scalar(index);
      return fx::sum(fx::switch_(i, [&] { return x * x; }, [&] { return fx::sin(x); }, [&] { return fx::exp(-x) * x; }));
    };
    fx::Array x = fx::array({0.4, -1.2});
    double want = 0;
    for (double v : vec(x)) want += index <= 0 ? v * v : index == 1 ? std::sin(v) : std::exp(-v) * v;
    CHECK(f(x).item<double>() == doctest::Approx(want).epsilon(1e-14));
    check_grad(f, x);
  }
}

TEST_CASE("control flow AD: a branch whose output does not depend on x gets materialised zero tangents") {
  fx::Array c = fx::array({1.0, 2.0});
  auto f = [&](const fx::Array& x) {
    auto [a, n] = fx::cond(fx::sum(x) > 0.0, [&] { return std::pair{c * 3.0, fx::scalar(int32_t(1))}; },
                           [&] { return std::pair{x * x, fx::scalar(int32_t(2))}; });
    return fx::sum(a) * fx::astype(n, fx::float64);
  };
  check_grad(f, fx::array({0.5, 0.25}));   // taken branch is constant: gradient 0
  check_grad(f, fx::array({-0.5, 0.25}));  // 2 * 2x
  CHECK(vec(fx::grad(f)(fx::array({0.5, 0.25}))) == std::vector<double>{0, 0});
  CHECK(vec(fx::grad(f)(fx::array({-0.5, 0.25}))) == std::vector<double>{-2, 1});
}

namespace {
// Hessians column by column (jacfwd/jacrev/hessian go through vmap, whose control-flow batching
// rules are another change): forward-over-reverse and reverse-over-reverse.
template <class F>
std::vector<double> hessian_fwd_rev(const F& f, const fx::Array& x) {
  const size_t n = size_t(x.size());
  std::vector<double> h(n * n);
  for (size_t j = 0; j < n; ++j) {
    std::vector<double> e(n, 0.0);
    e[j] = 1.0;
    std::vector<double> col = vec(fx::jvp(fx::grad(f), std::tuple{x}, std::tuple{fx::array(e, x.shape())}).second);
    for (size_t i = 0; i < n; ++i) h[i * n + j] = col[i];
  }
  return h;
}
template <class F>
std::vector<double> hessian_rev_rev(const F& f, const fx::Array& x) {
  const size_t n = size_t(x.size());
  std::vector<double> h;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> row = vec(fx::grad([&](const fx::Array& v) { return fx::take(fx::grad(f)(v), int64_t(i), 0); })(x));
    h.insert(h.end(), row.begin(), row.end());
  }
  return h;
}
}  // namespace

TEST_CASE("control flow AD: hessian through cond") {
  fx::Array a = randn({3, 3}, 3);
  auto f = [&](const fx::Array& x) {
    return fx::cond(fx::sum(x) > 0.0, [&] { return fx::dot(x, fx::matmul(a, x)); }, [&] { return fx::sum(x * x * x); });
  };
  fx::Array xp = fx::array({0.5, 0.2, 0.1}), xn = fx::array({-0.5, 0.2, -0.1});
  std::vector<double> want = vec(a + fx::transpose(a));
  check_close(hessian_fwd_rev(f, xp), want, 1e-12);
  check_close(hessian_rev_rev(f, xp), want, 1e-12);
  std::vector<double> hn = hessian_rev_rev(f, xn), xv = vec(xn);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) CHECK(hn[i * 3 + j] == doctest::Approx(i == j ? 6 * xv[i] : 0.0));
  check_close(hessian_fwd_rev(f, xn), hn, 1e-12);
}

// ---- scan and fori_loop ----------------------------------------------------------------------------
namespace {
// h_{t+1} = tanh(W h_t + x_t); y_t = h_{t+1}.
struct Rnn {
  fx::Array w;
  std::pair<fx::Array, fx::Array> operator()(const fx::Array& h, const fx::Array& x) const {
    fx::Array n = fx::tanh(fx::matmul(w, h) + x);
    return {n, n};
  }
};
double rnn_reference(const std::vector<double>& w, std::vector<double> h, const std::vector<double>& xs, size_t n,
                     size_t steps, bool reverse) {
  double loss = 0;
  for (size_t s = 0; s < steps; ++s) {
    size_t t = reverse ? steps - 1 - s : s;
    std::vector<double> next(n);
    for (size_t i = 0; i < n; ++i) {
      double a = xs[t * n + i];
      for (size_t j = 0; j < n; ++j) a += w[i * n + j] * h[j];
      next[i] = std::tanh(a);
      loss += next[i] * double(t + 1);  // sum(ys weighted by step)
    }
    h = next;
  }
  for (double v : h) loss += v * v;
  return loss;
}
}  // namespace

TEST_CASE("control flow AD: scan (an RNN) against a C++ loop and finite differences, both directions") {
  const size_t n = 3, steps = 6;
  fx::Array w = randn({3, 3}, 1) * 0.5, h0 = randn({3}, 2), xs = randn({6, 3}, 3);
  fx::Array weights = fx::reshape(fx::arange(1.0, 7.0, 1.0, fx::float64), {6, 1});
  for (bool reverse : {false, true}) {
    CAPTURE(reverse);
    auto loss = [&](const fx::Array& wv, const fx::Array& h, const fx::Array& x) {
      auto [hf, ys] = fx::scan(Rnn{wv}, h, x, std::nullopt, reverse);
      return fx::sum(ys * weights) + fx::sum(hf * hf);
    };
    CHECK(loss(w, h0, xs).item<double>() ==
          doctest::Approx(rnn_reference(vec(w), vec(h0), vec(xs), n, steps, reverse)).epsilon(1e-13));
    check_grad([&](const fx::Array& v) { return loss(v, h0, xs); }, w);
    check_grad([&](const fx::Array& v) { return loss(w, v, xs); }, h0);
    check_grad([&](const fx::Array& v) { return loss(w, h0, v); }, xs);
    auto [gw, gh, gx] = fx::grad<0, 1, 2>(loss)(w, h0, xs);
    check_close(vec(gw), vec(fx::grad([&](const fx::Array& v) { return loss(v, h0, xs); })(w)), 1e-14);
    CHECK(gh.shape() == h0.shape());
    CHECK(gx.shape() == xs.shape());
  }
}

TEST_CASE("control flow AD: reverse mode through a 1,000-step scan") {
  const int64_t steps = 1000;
  fx::Array xs = randn({steps}, 5);
  // h = tanh(a h + b x_t + 0.1), a contraction; loss = sum of every h plus the last h.
  auto loss = [&](const fx::Array& p) {
    fx::Array a = fx::take(p, 0, 0), b = fx::take(p, 1, 0);
    auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
      fx::Array next = fx::tanh(a * c + b * x + 0.1);
      return std::pair{next, next};
    }, fx::scalar(0.0), xs);
    return fx::sum(ys) + h;
  };
  fx::Array p = fx::array({0.6, 0.8});
  std::vector<double> xv = vec(xs);
  double h = 0, want = 0;
  for (double x : xv) {
    h = std::tanh(0.6 * h + 0.8 * x + 0.1);
    want += h;
  }
  CHECK(loss(p).item<double>() == doctest::Approx(want + h).epsilon(1e-12));
  fx::Array g = fx::grad(loss)(p);
  check_close(vec(g), fd_grad(loss, p), 1e-6);
  // One scan forward (with its residuals) and one reverse scan: no unrolling.
  fx::Program gp = fx::make_ir(fx::grad(loss))(p);
  CHECK(count_prim(gp, fx::Prim::scan) == 2);
  check_program(gp);
}

TEST_CASE("control flow AD: jvp of scan where the carry tangent starts at zero (the carry fixpoint)") {
  fx::Array xs = fx::array({0.5, -0.25, 1.0, 0.75});
  auto f = [&](const fx::Array& a) {
    auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) { return std::pair{c * a + x, c}; },
                            fx::scalar(1.0), xs);
    return h + fx::sum(ys);
  };
  check_grad(f, fx::scalar(0.7));
  // The carry is a float but its initial value is a constant: its tangent is zero for step 0 only.
  auto [y, t] = fx::jvp(f, std::tuple{fx::scalar(0.7)}, std::tuple{fx::scalar(1.0)});
  CHECK(t.item<double>() == doctest::Approx(fd_grad(f, fx::scalar(0.7))[0]).epsilon(1e-8));
}

TEST_CASE("control flow AD: fori_loop with static bounds") {
  auto f = [](const fx::Array& x) {
    return fx::sum(fx::fori_loop(0, 5, [](const fx::Array& i, const fx::Array& v) {
      return fx::sin(v) * v + fx::astype(i, fx::float64) * 0.1;
    }, x));
  };
  fx::Array x = fx::array({0.3, -0.8, 1.1});
  double want = 0;
  for (double v : vec(x)) {
    for (int i = 0; i < 5; ++i) v = std::sin(v) * v + i * 0.1;
    want += v;
  }
  CHECK(f(x).item<double>() == doctest::Approx(want).epsilon(1e-14));
  check_grad(f, x);
}

// ---- while_loop ----------------------------------------------------------------------------------
TEST_CASE("control flow AD: jvp of an unbounded while_loop") {
  fx::Array c = fx::scalar(0.3);
  auto f = [&](const fx::Array& x) {
    auto [v, k] = fx::while_loop([](const std::pair<fx::Array, fx::Array>& s) { return s.second < 7; },
                                 [&](const std::pair<fx::Array, fx::Array>& s) {
                                   return std::pair{fx::sin(s.first) * 1.5 + c, s.second + 1};
                                 },
                                 std::pair{x, fx::scalar(int32_t(0))});
    return fx::sum(v);
  };
  fx::Array x = fx::array({0.2, 1.3});
  double want = 0;
  for (double v : vec(x)) {
    for (int k = 0; k < 7; ++k) v = std::sin(v) * 1.5 + 0.3;
    want += v;
  }
  CHECK(f(x).item<double>() == doctest::Approx(want).epsilon(1e-14));
  fx::Array t = fx::array({1.0, -0.5});
  auto [y, jt] = fx::jvp(f, std::tuple{x}, std::tuple{t});
  std::vector<double> fd = fd_grad(f, x);
  CHECK(jt.item<double>() == doctest::Approx(fd[0] - 0.5 * fd[1]).epsilon(1e-7));
  // Each directional derivative by forward mode; the jvp program verifies and round-trips.
  CHECK(std::get<1>(fx::jvp(f, std::tuple{x}, std::tuple{fx::array({0.0, 1.0})})).item<double>() ==
        doctest::Approx(fd[1]).epsilon(1e-7));
  check_program(fx::jvp_program(fx::make_ir(f)(x), {true}));
  // With respect to a value the body captures.
  auto g = [&](const fx::Array& cc) {
    return fx::while_loop([](const fx::Array& v) { return v < 5.0; }, [&](const fx::Array& v) { return v + cc * cc; },
                          fx::scalar(0.0));
  };
  auto [gy, gt] = fx::jvp(g, std::tuple{fx::scalar(0.75)}, std::tuple{fx::scalar(1.0)});
  CHECK(gy.item<double>() == doctest::Approx(0.5625 * 9));  // 9 steps of 0.5625 pass 5
  CHECK(gt.item<double>() == doctest::Approx(9 * 2 * 0.75));
}

TEST_CASE("control flow AD: reverse mode through while_loop needs max_steps, and the error says so") {
  auto f = [](const fx::Array& x) {
    return fx::while_loop([](const fx::Array& v) { return v < 10.0; }, [](const fx::Array& v) { return v * 2.0; }, x);
  };
  try {
    fx::grad(f)(fx::scalar(1.0));
    FAIL("no error");
  } catch (const fx::TypeError& e) {
    std::string m = e.what();
    CAPTURE(m);
    CHECK(m.find("while_loop") != std::string::npos);
    CHECK(m.find("test_control_flow_ad.cpp") != std::string::npos);
    CHECK(m.find("max_steps") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::vjp(f, fx::scalar(1.0)).second(fx::scalar(1.0)), fx::TypeError);
}

TEST_CASE("control flow AD: while_loop with max_steps is reverse-mode differentiable") {
  auto f = [](const fx::Array& x) {
    fx::Array v = fx::while_loop([](const fx::Array& s) { return fx::sum(s) < 10.0; },
                                 [](const fx::Array& s) { return s * 1.5 + fx::sin(s); }, x, fx::max_steps(100));
    return fx::sum(v * v);
  };
  fx::Array x = fx::array({0.7, 0.4});
  std::vector<double> s = vec(x);
  while (s[0] + s[1] < 10.0)
    for (double& v : s) v = v * 1.5 + std::sin(v);
  CHECK(f(x).item<double>() == doctest::Approx(s[0] * s[0] + s[1] * s[1]).epsilon(1e-13));
  check_grad(f, x);
  // The bound cuts the loop short: at most 2 steps.
  auto short_loop = [](const fx::Array& x) {
    return fx::sum(fx::while_loop([](const fx::Array& s) { return fx::sum(s) < 10.0; },
                                  [](const fx::Array& s) { return s * s; }, x, fx::max_steps(2)));
  };
  CHECK(vec(fx::grad(short_loop)(fx::array({1.5, 0.5}))) == std::vector<double>{4 * 1.5 * 1.5 * 1.5, 4 * 0.5 * 0.5 * 0.5});
}

// ---- nesting -------------------------------------------------------------------------------------
TEST_CASE("control flow AD: a scan inside a cond inside a bounded while") {
  fx::Array xs = fx::array({0.1, -0.2, 0.3});
  auto f = [&](const fx::Array& p) {
    auto step = [&](const fx::Array& v) {
      return fx::cond(fx::sum(v) > 1.0,
                      [&] {
                        auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
                          return std::pair{fx::tanh(c * fx::take(p, 0, 0) + x), c};
                        }, v, xs);
                        return h + 0.5;
                      },
                      [&] { return v * fx::take(p, 1, 0) + 0.4; });
    };
    fx::Array r = fx::while_loop([](const fx::Array& v) { return fx::sum(v) < 3.0; }, step, fx::array({0.2, 0.3}),
                                 fx::max_steps(20));
    return fx::sum(r * r);
  };
  auto reference = [&](double p0, double p1) {
    std::vector<double> v{0.2, 0.3}, x = vec(xs);
    for (int k = 0; k < 20 && v[0] + v[1] < 3.0; ++k) {
      if (v[0] + v[1] > 1.0) {
        for (double& e : v) {
          for (double xt : x) e = std::tanh(e * p0 + xt);
          e += 0.5;
        }
      } else {
        for (double& e : v) e = e * p1 + 0.4;
      }
    }
    return v[0] * v[0] + v[1] * v[1];
  };
  fx::Array p = fx::array({0.9, 1.2});
  CHECK(f(p).item<double>() == doctest::Approx(reference(0.9, 1.2)).epsilon(1e-13));
  check_grad(f, p);
}

// ---- checkpointed scan bodies ----------------------------------------------------------------------
TEST_CASE("control flow AD: checkpoint on a scan body stores only the carries per step") {
  const int64_t width = 8, steps = 50;
  fx::Array w = randn({width, width}, 11) * 0.3, xs = randn({steps, width}, 12);
  auto cell = [&](const fx::Array& h, const fx::Array& x) {
    fx::Array a = fx::tanh(fx::matmul(w, h) + x);
    fx::Array b = fx::sin(a) * a;
    fx::Array n = fx::tanh(b + h);
    return std::pair{n, n};
  };
  auto loss = [&](const fx::Array& h0) { return fx::sum(fx::scan(cell, h0, xs).second); };
  auto loss_remat = [&](const fx::Array& h0) { return fx::sum(fx::scan(fx::checkpoint(cell), h0, xs).second); };
  fx::Array h0 = randn({width}, 13);
  check_close(vec(fx::grad(loss_remat)(h0)), vec(fx::grad(loss)(h0)), 1e-13);
  check_grad(loss_remat, h0);
  auto stored = [&](auto fn) {
    fx::LinearizedPrograms lin = fx::linearize_programs(fx::make_ir(fn)(h0), {true}, 1);
    std::vector<fx::AbstractArray> outs = lin.forward.out_avals();
    int64_t elements = 0;
    for (size_t i = lin.num_outputs; i < outs.size(); ++i)
      if (outs[i].ndim() > 0 && outs[i].shape[0] == steps) elements += outs[i].size();  // stacked per step
    return elements;
  };
  int64_t plain = stored(loss), remat = stored(loss_remat);
  MESSAGE("stacked residual elements: " << plain << " plain, " << remat << " with checkpoint");
  CHECK(remat < plain);
  CHECK(remat == steps * width);  // the carry of every step, nothing else
}

// ---- printing ------------------------------------------------------------------------------------
TEST_CASE("control flow AD: derived programs print nested programs indented and parse back") {
  auto f = [](const fx::Array& x) {
    auto [h, ys] = fx::scan([](const fx::Array& c, const fx::Array& t) {
      return std::pair{fx::cond(c > 0.0, [&] { return fx::sin(c) + t; }, [&] { return c * t; }), c};
    }, fx::scalar(0.5), x);
    return h + fx::sum(ys);
  };
  fx::Array x = fx::array({0.3, -0.9, 0.4});
  check_grad(f, x);
  fx::Program g = fx::make_ir(fx::grad(f))(x);
  std::string text = g.str();
  CAPTURE(text);
  CHECK(text.find("scan[") != std::string::npos);
  CHECK(text.find("cond[") != std::string::npos);
  CHECK(text.find("\n      { lambda") != std::string::npos);        // a sub-program, indented
  CHECK(text.find("\n            { lambda") != std::string::npos);  // a cond inside a scan body
  CHECK(fx::parse_program(text) == g);
}
