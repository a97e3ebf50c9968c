// Control flow through the user API, eagerly and traced: results against C++ reference loops,
// closure conversion, printing/parsing of nested programs, and type errors. (AD: test_control_flow_ad;
// vmap: test_control_flow_vmap.)
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>

namespace fx = fluxion;

namespace {
struct State {
  fx::Array i, x;
};
FLUXION_TREE(State, i, x);

void round_trips(const fx::Program& p) {
  fx::verify(p);
  CHECK(fx::parse_program(p.str()).str() == p.str());
}
}  // namespace

TEST_CASE("cond and switch_: pick a branch, eagerly and traced; branches capture tracers") {
  auto f = [](const fx::Array& p, const fx::Array& v) {
    return fx::cond(p > 0.f, [&] { return v * 2.f; }, [&] { return -v; });
  };
  fx::Array x = fx::array({1.f, -2.f});
  CHECK(f(fx::scalar(1.f), x).to_vector<float>() == std::vector<float>{2, -4});
  CHECK(f(fx::scalar(-1.f), x).to_vector<float>() == std::vector<float>{-1, 2});
  fx::Program p = fx::make_ir(f)(fx::scalar(1.f), x);
  round_trips(p);
  CHECK(p.eqns.back().prim == fx::Prim::cond);
  CHECK(fx::eval(p, {fx::scalar(-3.f), x})[0].to_vector<float>() == std::vector<float>{-1, 2});
  auto g = [](const fx::Array& i, const fx::Array& v) {
    return fx::switch_(i, [&] { return v; }, [&] { return v * v; }, [&] { return -v; });
  };
  CHECK(g(fx::scalar(1), x).to_vector<float>() == std::vector<float>{1, 4});
  CHECK(g(fx::scalar(7), x).to_vector<float>() == std::vector<float>{-1, 2});   // clamped to the last
  CHECK(g(fx::scalar(-5), x).to_vector<float>() == std::vector<float>{1, -2});  // clamped to the first
  round_trips(fx::make_ir(g)(fx::scalar(0), x));
}

TEST_CASE("while_loop: any tree as the carry; the bounded form stops after max_steps") {
  auto run = [](const fx::Array& x0) {
    return fx::while_loop([](const State& s) { return s.i < 10; },
                          [](State s) {
                            s.i = s.i + 1;
                            s.x = s.x * 0.5f;
                            return s;
                          },
                          State{fx::scalar(0), x0});
  };
  State s = run(fx::array({1.f, -2.f}));
  CHECK(s.i.item<int32_t>() == 10);
  CHECK(s.x.to_vector<float>()[0] == doctest::Approx(std::pow(0.5, 10)));
  fx::Program p = fx::make_ir(run)(fx::ones({2}));
  round_trips(p);
  CHECK(p.eqns.back().prim == fx::Prim::while_);
  State b = fx::while_loop([](const State& st) { return st.i < 10; },
                           [](State st) {
                             st.i = st.i + 1;
                             return st;
                           },
                           State{fx::scalar(0), fx::ones({1})}, fx::max_steps(4));
  CHECK(b.i.item<int32_t>() == 4);
  State c = fx::while_loop([](const State& st) { return st.i < 3; },
                           [](State st) {
                             st.i = st.i + 1;
                             return st;
                           },
                           State{fx::scalar(0), fx::ones({1})}, fx::max_steps(100));
  CHECK(c.i.item<int32_t>() == 3);  // the condition stops it first
}

TEST_CASE("fori_loop: static bounds (a scan) and traced bounds (a while loop)") {
  auto body = [](const fx::Array& i, const fx::Array& acc) { return acc + fx::astype(i, fx::float32); };
  CHECK(fx::fori_loop(0, 100, body, fx::scalar(0.f)).item<float>() == 4950.f);
  CHECK(fx::fori_loop(fx::scalar(5), fx::scalar(10), body, fx::scalar(0.f)).item<float>() == 35.f);
  fx::Program p = fx::make_ir([&](const fx::Array& a) { return fx::fori_loop(0, 3, body, a); })(fx::scalar(0.f));
  CHECK(p.eqns.back().prim == fx::Prim::scan);
  fx::Program q = fx::make_ir([&](const fx::Array& n, const fx::Array& a) { return fx::fori_loop(fx::scalar(0), n, body, a); })(
      fx::scalar(3), fx::scalar(0.f));
  CHECK(q.eqns.back().prim == fx::Prim::while_);
  round_trips(q);
}

TEST_CASE("scan: carries and stacked outputs match a C++ loop, forwards and in reverse") {
  fx::Array xs = fx::random::normal(fx::random::key(3), {6, 2}, fx::float64);
  auto step = [](const fx::Array& c, const fx::Array& x) { return std::pair{c * 0.9 + x, fx::sum(c * x)}; };
  for (bool reverse : {false, true}) {
    auto [carry, ys] = fx::scan(step, fx::zeros({2}, fx::float64), xs, std::nullopt, reverse);
    std::vector<double> xv = xs.to_vector<double>(), c{0, 0}, y(6);
    for (int s = 0; s < 6; ++s) {
      int t = reverse ? 5 - s : s;
      y[size_t(t)] = c[0] * xv[size_t(2 * t)] + c[1] * xv[size_t(2 * t + 1)];
      for (int k = 0; k < 2; ++k) c[size_t(k)] = c[size_t(k)] * 0.9 + xv[size_t(2 * t + k)];
    }
    CHECK(carry.to_vector<double>()[0] == doctest::Approx(c[0]));
    CHECK(carry.to_vector<double>()[1] == doctest::Approx(c[1]));
    std::vector<double> yv = ys.to_vector<double>();
    for (int t = 0; t < 6; ++t) CHECK(yv[size_t(t)] == doctest::Approx(y[size_t(t)]));
  }
  // Length-0 scans and scans over trees.
  auto [c0, y0] = fx::scan(step, fx::zeros({2}, fx::float64), fx::zeros({0, 2}, fx::float64));
  CHECK(y0.shape() == fx::Shape{0});
  auto pair_step = [](const fx::Array& c, const std::pair<fx::Array, fx::Array>& x) {
    return std::pair{c + x.first * x.second, x.first};
  };
  auto [c1, y1] = fx::scan(pair_step, fx::scalar(0.0), std::pair{fx::arange(0.0, 4.0, 1.0, fx::float64), fx::ones({4}, fx::float64)});
  CHECK(c1.item<double>() == 6.0);
  round_trips(fx::make_ir([&](const fx::Array& x) { return fx::scan(step, fx::zeros({2}, fx::float64), x); })(xs));
}

TEST_CASE("control flow nests: a scan inside a cond inside a bounded while loop") {
  auto f = [](const fx::Array& x0) {
    return fx::while_loop([](const State& s) { return s.i < 3; },
                          [](State s) {
                            s.x = fx::cond(s.i % 2 == 0,
                                           [&] {
                                             return fx::scan([](const fx::Array& c, const fx::Array& x) {
                                                               return std::pair{c + x, c};
                                                             },
                                                             s.x, fx::ones({4, 2})).first;
                                           },
                                           [&] { return s.x * 2.f; });
                            s.i = s.i + 1;
                            return s;
                          },
                          State{fx::scalar(0), x0}, fx::max_steps(5));
  };
  State r = f(fx::zeros({2}));
  CHECK(r.x.to_vector<float>() == std::vector<float>{12, 12});  // ((0+4)*2)+4
  fx::Program p = fx::make_ir(f)(fx::zeros({2}));
  round_trips(p);
  CHECK(fx::eval(p, {fx::zeros({2})})[1].to_vector<float>() == std::vector<float>{12, 12});
}

TEST_CASE("control flow errors: branch and carry types must agree; predicates must be scalars") {
  fx::Array x = fx::ones({3});
  try {
    fx::cond(fx::scalar(true), [&] { return x; }, [&] { return fx::sum(x); });
    FAIL("no error");
  } catch (const fx::TypeError& e) {
    std::string m = e.what();
    CHECK(m.find("f32[3]") != std::string::npos);
    CHECK(m.find("f32[]") != std::string::npos);
    CHECK(m.find("test_control_flow.cpp") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::cond(x > 0.f, [&] { return x; }, [&] { return x; }), fx::TypeError);  // not a scalar
  try {
    fx::while_loop([](const fx::Array& v) { return fx::sum(v) < 10.f; }, [](const fx::Array& v) { return fx::sum(v); }, x);
    FAIL("no error");
  } catch (const fx::TypeError& e) {
    CHECK(std::string(e.what()).find("carry") != std::string::npos);
  }
  CHECK_THROWS_AS(fx::while_loop([](const fx::Array& v) { return v; }, [](const fx::Array& v) { return v; }, x),
                  fx::TypeError);  // the condition is not a bool scalar
  CHECK_THROWS_AS(fx::scan([](const fx::Array& c, const std::pair<fx::Array, fx::Array>& v) { return std::pair{c, v.first}; },
                           fx::scalar(0.f),
                           std::pair{fx::ones({3}), fx::ones({4})}),
                  fx::ShapeError);  // xs leaves of different lengths
}
