// fx::jit of control flow (cond/switch_, while_loop, fori_loop, scan, nested, and derivatives of
// them): every compiled result against the eager interpreter (prims/control.cpp's impls), across
// the corner cases the impls define (clamped branch indices, reverse scans, length 0).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <string>
#include <vector>

namespace fx = fluxion;

namespace {
struct State {
  fx::Array i, x;
};
FLUXION_TREE(State, i, x);

// got == want: same type, values within tol (relative) -- exactly, for integers.
void check_same(const fx::Array& got, const fx::Array& want, double tol = 1e-6) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  std::vector<double> g = fx::astype(got, fx::float64).to_vector<double>(), w = fx::astype(want, fx::float64).to_vector<double>();
  for (size_t k = 0; k < g.size(); ++k) {
    CAPTURE(k);
    if (fx::is_float(want.dtype())) {
      CHECK(g[k] == doctest::Approx(w[k]).epsilon(tol));
    } else {
      CHECK(g[k] == w[k]);
    }
  }
}
}  // namespace

TEST_CASE("jit control flow: cond and switch_ pick the branch the eager impl picks, indices clamped") {
  auto f = [](const fx::Array& p, const fx::Array& v) {
    return fx::cond(p > 0.f, [&] { return fx::sin(v) * 2.f; }, [&] { return -v + fx::sum(v); });
  };
  auto jf = fx::jit(f);
  fx::Array x = fx::array({1.f, -2.f, 0.5f});
  for (float p : {1.f, -1.f, 0.f}) check_same(jf(fx::scalar(p), x), f(fx::scalar(p), x));
  CHECK(jf.compilations() == 1);  // one kernel for every predicate value

  auto g = [](const fx::Array& i, const fx::Array& v) {
    return fx::switch_(i, [&] { return v; }, [&] { return v * v; }, [&] { return fx::exp(-v); });
  };
  auto jg = fx::jit(g);
  for (int32_t i : {-5, 0, 1, 2, 3, 7}) {
    CAPTURE(i);
    fx::Array got = jg(fx::scalar(i), x);
    check_same(got, g(fx::scalar(i), x));
  }
  // The clamping is the impl's: below 0 is branch 0, above n-1 is the last.
  check_same(jg(fx::scalar(-5), x), x);
  check_same(jg(fx::scalar(7), x), fx::exp(-x));
  CHECK(jg.compilations() == 1);
  // An int64 and a uint8 index, a single branch, and several outputs of mixed dtypes.
  for (int64_t i : {int64_t(-1), int64_t(1), int64_t(1) << 40}) {
    fx::Array idx = fx::astype(fx::scalar(i), fx::int64);
    check_same(jg(idx, x), g(idx, x));
  }
  for (int u : {0, 1, 200}) {
    fx::Array idx = fx::astype(fx::scalar(u), fx::uint8);
    check_same(jg(idx, x), g(idx, x));
  }
  auto h = [](const fx::Array& i, const fx::Array& v) {
    auto [a, b] = fx::switch_(i, [&] { return std::pair{v + 1.f, fx::argmax(v, 0)}; },
                              [&] { return std::pair{v * 3.f, fx::argmin(v, 0)}; });
    auto single = fx::switch_(i, [&] { return fx::cumsum(v, 0); });
    return std::tuple{a, b, single};
  };
  auto jh = fx::jit(h);
  for (int32_t i : {0, 1}) {
    auto [a, b, s] = jh(fx::scalar(i), x);
    auto [ea, eb, es] = h(fx::scalar(i), x);
    check_same(a, ea);
    check_same(b, eb);
    check_same(s, es);
  }
}

TEST_CASE("jit control flow: while_loop over a tree carry, and fori_loop with static and traced bounds") {
  auto run = [](const fx::Array& x0, const fx::Array& limit) {
    return fx::while_loop([&](const State& s) { return fx::sum(s.x) < limit; },
                          [](State s) {
                            s.i = s.i + 1;
                            s.x = s.x * 1.5f + 0.25f;
                            return s;
                          },
                          State{fx::scalar(0), x0});
  };
  auto jrun = fx::jit(run);
  fx::Array x0 = fx::array({0.5f, 1.f, -0.25f});
  for (float limit : {-100.f, 3.f, 50.f, 1000.f}) {
    CAPTURE(limit);
    State got = jrun(x0, fx::scalar(limit)), want = run(x0, fx::scalar(limit));
    check_same(got.i, want.i);
    check_same(got.x, want.x);
  }
  CHECK(run(x0, fx::scalar(-100.f)).i.item<int32_t>() == 0);  // the body never runs
  CHECK(jrun.compilations() == 1);

  auto body = [](const fx::Array& i, const fx::Array& acc) { return acc * 0.5f + fx::astype(i, fx::float32); };
  auto fixed = [&](const fx::Array& a) { return fx::fori_loop(0, 50, body, a); };  // a scan
  check_same(fx::jit(fixed)(fx::scalar(2.f)), fixed(fx::scalar(2.f)));
  auto traced = [&](const fx::Array& lo, const fx::Array& hi, const fx::Array& a) { return fx::fori_loop(lo, hi, body, a); };
  auto jtraced = fx::jit(traced);
  for (auto [lo, hi] : {std::pair{0, 10}, std::pair{5, 5}, std::pair{7, 3}, std::pair{-2, 40}})
    check_same(jtraced(fx::scalar(lo), fx::scalar(hi), fx::scalar(1.f)), traced(fx::scalar(lo), fx::scalar(hi), fx::scalar(1.f)));
  // The bounded while (max_steps) form.
  auto bounded = [](const fx::Array& x) {
    return fx::while_loop([](const fx::Array& v) { return fx::sum(v) < 1e6f; }, [](const fx::Array& v) { return v * 2.f; }, x,
                          fx::max_steps(7));
  };
  check_same(fx::jit(bounded)(x0), bounded(x0));
}

TEST_CASE("jit control flow: scan forwards and in reverse, tree carries and xs, rank-0 rows, length 0") {
  fx::Array xs = fx::random::normal(fx::random::key(3), {6, 2}, fx::float64);
  auto step = [](const fx::Array& c, const fx::Array& x) { return std::pair{c * 0.9 + fx::tanh(x), fx::sum(c * x)}; };
  for (bool reverse : {false, true}) {
    CAPTURE(reverse);
    auto f = [&](const fx::Array& c0, const fx::Array& x) { return fx::scan(step, c0, x, std::nullopt, reverse); };
    auto [c, ys] = fx::jit(f)(fx::ones({2}, fx::float64), xs);
    auto [ec, eys] = f(fx::ones({2}, fx::float64), xs);
    check_same(c, ec, 1e-12);
    check_same(ys, eys, 1e-12);
  }
  // Tree carry and tree xs; rank-1 xs give rank-0 rows; ys of rank 2 and of an integer dtype.
  using Carry = std::pair<fx::Array, fx::Array>;
  auto tree_step = [](const Carry& c, const std::pair<fx::Array, fx::Array>& x) {
    Carry next{c.first + x.first * fx::sum(x.second), c.second * x.first};
    return std::pair{next, std::tuple{fx::outer(c.second, x.second), fx::astype(c.first, fx::int32), x.first}};
  };
  fx::Array a = fx::arange(0.0, 5.0, 1.0, fx::float32) * 0.5f, m = fx::random::uniform(fx::random::key(1), {5, 3});
  for (bool reverse : {false, true}) {
    CAPTURE(reverse);
    auto f = [&](const fx::Array& s, const fx::Array& v, const fx::Array& p, const fx::Array& q) {
      return fx::scan(tree_step, Carry{s, v}, std::pair{p, q}, std::nullopt, reverse);
    };
    fx::Array s = fx::scalar(1.f), v = fx::array({1.f, 2.f, -1.f});
    auto [c, ys] = fx::jit(f)(s, v, a, m);
    auto [ec, eys] = f(s, v, a, m);
    check_same(c.first, ec.first);
    check_same(c.second, ec.second);
    check_same(std::get<0>(ys), std::get<0>(eys));
    check_same(std::get<1>(ys), std::get<1>(eys));
    check_same(std::get<2>(ys), std::get<2>(eys));
  }
  // Length 0: the carry passes through, the ys have no rows.
  auto empty_scan = [&](const fx::Array& c0, const fx::Array& x) { return fx::scan(step, c0, x); };
  auto [c0, y0] = fx::jit(empty_scan)(fx::full({2}, 3.0, fx::float64), fx::zeros({0, 2}, fx::float64));
  check_same(c0, fx::full({2}, 3.0, fx::float64));
  CHECK(y0.shape() == fx::Shape{0});
  // A scan with no xs (fixed length) and consts captured from the caller.
  auto counter = [](const fx::Array& w) {
    return fx::scan([&](const fx::Array& c, const std::tuple<>&) { return std::pair{c * w + 1.f, c}; }, fx::zeros({3}),
                    std::tuple<>{}, 4);
  };
  auto [cc, cy] = fx::jit(counter)(fx::array({0.5f, 1.f, 2.f}));
  auto [ecc, ecy] = counter(fx::array({0.5f, 1.f, 2.f}));
  check_same(cc, ecc);
  check_same(cy, ecy);
}

TEST_CASE("jit control flow: nests (a scan inside a cond inside a bounded while loop), wrappers inside bodies") {
  auto f = [](const fx::Array& x0, const fx::Array& xs) {
    return fx::while_loop([](const State& s) { return s.i < 4; },
                          [&](State s) {
                            s.x = fx::cond(s.i % 2 == 0,
                                           [&] {
                                             return fx::scan([](const fx::Array& c, const fx::Array& x) {
                                                               return std::pair{c + x, c};
                                                             },
                                                             s.x, xs).first;
                                           },
                                           [&] { return s.x * 2.f; });
                            s.i = s.i + 1;
                            return s;
                          },
                          State{fx::scalar(0), x0}, fx::max_steps(5));
  };
  fx::Array xs = fx::random::normal(fx::random::key(5), {4, 2});
  State got = fx::jit(f)(fx::zeros({2}), xs), want = f(fx::zeros({2}), xs);
  check_same(got.i, want.i);
  check_same(got.x, want.x);
  // checkpoint (a wrapper jit inlines) inside a scan body.
  auto g = [](const fx::Array& c0, const fx::Array& x) {
    return fx::scan([](const fx::Array& c, const fx::Array& r) {
      return std::pair{fx::checkpoint([](const fx::Array& u) { return fx::sin(u) * 2.f; })(c + r), c};
    }, c0, x);
  };
  auto [gc, gy] = fx::jit(g)(fx::ones({2}), xs);
  auto [ec, ey] = g(fx::ones({2}), xs);
  check_same(gc, ec);
  check_same(gy, ey);
}

TEST_CASE("jit control flow: jit(grad(...)) of a scan, a cond and a while loop equals eager grad") {
  fx::Array xs = fx::random::normal(fx::random::key(7), {5, 3}, fx::float64);
  auto rnn = [&](const fx::Array& w) {
    auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
      fx::Array next = fx::tanh(c * w + x);
      return std::pair{next, fx::sum(next * next)};
    }, fx::zeros({3}, fx::float64), xs);
    return fx::sum(ys) + fx::sum(h);
  };
  fx::Array w = fx::array({0.5, -0.3, 0.8});
  check_same(fx::jit(fx::grad(rnn))(w), fx::grad(rnn)(w), 1e-10);
  auto rev = [&](const fx::Array& w2) {
    return fx::sum(fx::scan([&](const fx::Array& c, const fx::Array& x) { return std::pair{c * w2 + x, c}; },
                            fx::ones({3}, fx::float64), xs, std::nullopt, true).second);
  };
  check_same(fx::jit(fx::grad(rev))(w), fx::grad(rev)(w), 1e-10);
  auto branchy = [](const fx::Array& v) {
    return fx::sum(fx::cond(fx::sum(v) > 0.0, [&] { return fx::sin(v) * v; }, [&] { return v * v * v; }));
  };
  for (double s : {1.0, -1.0}) check_same(fx::jit(fx::grad(branchy))(w * s), fx::grad(branchy)(w * s), 1e-10);
  // forward mode through a while loop
  auto grow = [](const fx::Array& v) {
    return fx::while_loop([](const State& s) { return s.i < 3; },
                          [](State s) { return State{s.i + 1, fx::sin(s.x) * 1.1}; }, State{fx::scalar(0), v}).x;
  };
  auto jvp_of = [&](const fx::Array& v) { return fx::jvp(grow, std::tuple{v}, std::tuple{fx::ones_like(v)}).second; };
  check_same(fx::jit(jvp_of)(w), jvp_of(w), 1e-10);
}

// Bodies large enough for the pipeline's big-kernel paths (row tile-and-fuse of a softmax at 64K+
// elements; the threaded outer loops at 1M+) run inside the loop regions.
TEST_CASE("jit control flow: large bodies (row fusion, threaded loops) inside scan and while") {
  auto softmax_steps = [](const fx::Array& x0) {
    return fx::scan([](const fx::Array& x, const std::tuple<>&) {
      fx::Array e = fx::exp(x - fx::max(x, 1, true));
      fx::Array s = e / fx::sum(e, 1, true);
      return std::pair{s * 3.f, fx::sum(s, 1)};
    }, x0, std::tuple<>{}, 3);
  };
  fx::Array x = fx::random::normal(fx::random::key(11), {256, 512});
  auto [c, ys] = fx::jit(softmax_steps)(x);
  auto [ec, eys] = softmax_steps(x);
  check_same(c, ec, 1e-4);
  check_same(ys, eys, 1e-4);
  auto grow = [](const fx::Array& v) {
    return fx::while_loop([](const State& s) { return s.i < 3; },
                          [](State s) { return State{s.i + 1, fx::tanh(s.x) * 1.5f + 0.1f}; }, State{fx::scalar(0), v}).x;
  };
  fx::Array big = fx::random::normal(fx::random::key(12), {1024, 1100});
  check_same(fx::jit(grow)(big), grow(big), 1e-4);
}

// vmap rewrites control flow (a batched predicate becomes a select of both branches, a batched
// while condition a masked loop); the rewritten programs compile too.
TEST_CASE("jit control flow: jit(vmap(...)) of cond, while_loop and scan") {
  auto f = [](const fx::Array& v) {
    fx::Array a = fx::cond(fx::sum(v) > 0.f, [&] { return v * 2.f; }, [&] { return fx::cos(v); });
    State s = fx::while_loop([](const State& st) { return fx::logical_and(fx::sum(st.x) < 10.f, st.i < 20); },
                             [](State st) { return State{st.i + 1, st.x + 0.75f}; }, State{fx::scalar(0), a});
    auto [c, ys] = fx::scan([](const fx::Array& cc, const fx::Array& x) { return std::pair{cc * x + 1.f, cc}; }, fx::scalar(0.f), s.x);
    return std::tuple{s.i, c, ys};
  };
  fx::Array xs = fx::random::normal(fx::random::key(21), {6, 4});
  auto vf = fx::vmap(f);
  auto [i, c, ys] = fx::jit(vf)(xs);
  auto [ei, ec, eys] = vf(xs);
  check_same(i, ei);
  check_same(c, ec);
  check_same(ys, eys);
}

TEST_CASE("jit control flow: a weakly typed carry comes out as eager returns it") {
  // A weak 0.0 the body turns into f32 leaves the loop f32 -- eagerly, under jit, and for a loop
  // that runs zero times -- so it promotes the same way afterwards (against f16: f32, not f16).
  fx::Array w = fx::array({0.5f, -0.25f, 1.f});
  fx::Array weak0 = fx::detail::as_array(0.0, fx::float32, true, {});
  REQUIRE(weak0.aval().weak_type);
  for (int64_t n : {0, 4}) {
    CAPTURE(n);
    auto f = [n](const fx::Array& init, const fx::Array& w) {
      auto [c, ys] = fx::scan([&](const fx::Array& acc, const fx::Array& x) { return std::pair{acc + fx::sum(x * w), x}; },
                              init, fx::ones({n, 3}));
      return c;
    };
    fx::Array e = f(weak0, w), j = fx::jit(f)(weak0, w);
    CHECK_FALSE(e.aval().weak_type);
    CHECK_FALSE(j.aval().weak_type);
    fx::Array h16 = fx::astype(fx::ones({2}), fx::float16);
    CHECK((e + h16).dtype() == fx::float32);
    CHECK((j + h16).dtype() == fx::float32);
    auto g = [n](const fx::Array& init) {
      return fx::fori_loop(fx::scalar(int32_t(0)), fx::scalar(int32_t(n)), [](const fx::Array&, const fx::Array& c) { return c * 2.f + fx::zeros({}); }, init);
    };
    CHECK_FALSE(g(weak0).aval().weak_type);
    CHECK_FALSE(fx::jit(g)(weak0).aval().weak_type);
  }
}
