// fx::jit: compiled results against the reference interpreter, the compile cache, closures,
// static arguments, composition with tracing, and the CompileError path.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "lowering/compile.h"
#include "tests/test_helpers.h"
#include "interpreters/jit_passes.h"

namespace fx = fluxion;
using test_helpers::ramp;

namespace {
// bind with the operands as a braced list.
fx::Array bind1v(fx::Prim p, std::vector<fx::Array> in, const fx::Params& params, FLUXION_LOC) {
  return fx::bind1(p, in, params, loc);
}
}  // namespace

TEST_CASE("jit: fused elementwise matches eager") {
  auto f = [](const fx::Array& a, const fx::Array& b, const fx::Array& c) { return fx::sin(a * b) + fx::exp(c); };
  auto jf = fx::jit(f);
  fx::Array a = fx::array(ramp(1000, -3, 3)), b = fx::array(ramp(1000, 0.5, 2)), c = fx::array(ramp(1000, -5, 2));
  fx::Array want = f(a, b, c);
  fx::Array got = jf(a, b, c);
  REQUIRE(got.shape() == want.shape());
  auto g = got.to_vector<float>(), w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(w[i]).epsilon(1e-5));
  CHECK(jf.compilations() == 1);
}

TEST_CASE("jit: logsumexp over all axes (fused full reductions)") {
  fx::Program p = fx::parse_program(R"({ lambda ; a:f32[3,4]. let
    b:f32[] = reduce_max[axes=(0, 1)] a
    c:bool[] = is_finite b
    d:f32[] = select c b 0.0:f32[]
    e:f32[] = stop_gradient d
    f:f32[1,1] = broadcast_in_dim[broadcast_dimensions=() shape=(1, 1)] e
    g:f32[3,4] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(3, 4)] f
    h:f32[3,4] = sub a g
    i:f32[3,4] = exp h
    j:f32[] = reduce_sum[axes=(0, 1)] i
    k:f32[] = log j
    l:f32[] = add k e
  in (l) })");
  fx::Array a = fx::array(ramp(12, -2, 3), fx::Shape{3, 4});
  auto exe = fx::runtime::compile(p);
  std::vector<fx::Array> args{a};
  float got = exe->run(args)[0].item<float>();
  float want = fx::eval(p, {a})[0].item<float>();
  CHECK(got == doctest::Approx(want).epsilon(1e-5));
}

TEST_CASE("jit: a second call with the same signature reuses the kernel; a new shape compiles again") {
  int traces = 0;
  auto jf = fx::jit([&](const fx::Array& x) {
    ++traces;
    return fx::tanh(x) * 2.f;
  });
  fx::Array a = fx::array(ramp(16, -1, 1)), b = fx::array(ramp(16, 0, 2)), c = fx::array(ramp(17, 0, 2));
  fx::Array ya = jf(a);
  fx::Array yb = jf(b);
  CHECK(jf.compilations() == 1);
  CHECK(traces == 1);
  CHECK(yb.to_vector<float>()[5] == doctest::Approx(std::tanh(b.to_vector<float>()[5]) * 2).epsilon(1e-6));
  jf(c);
  CHECK(jf.compilations() == 2);
  jf(fx::astype(a, fx::float64));
  CHECK(jf.compilations() == 3);
  jf(a);
  CHECK(jf.compilations() == 3);
  CHECK(traces == 3);
  // A copy of the callable shares its cache.
  auto copy = jf;
  copy(b);
  CHECK(copy.compilations() == 3);
}

TEST_CASE("jit: the runtime cache compiles each fingerprint once, across callables and threads") {
  auto f = [](const fx::Array& x) { return fx::exp(x) + 3.f; };
  fx::Array a = fx::array(ramp(33, -1, 1));
  fx::runtime::CacheStats before = fx::runtime::cache_stats();
  std::vector<std::thread> threads;
  std::vector<float> out(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] { out[size_t(t)] = fx::jit(f)(a).to_vector<float>()[7]; });
  for (auto& th : threads) th.join();
  fx::runtime::CacheStats after = fx::runtime::cache_stats();
  CHECK(after.compiles - before.compiles == 1);
  CHECK(after.hits - before.hits == 3);
  for (float v : out) CHECK(v == doctest::Approx(std::exp(a.to_vector<float>()[7]) + 3).epsilon(1e-6));
}

TEST_CASE("jit: closures become kernel inputs, static arguments are part of the key") {
  fx::Array w = fx::array(ramp(8, 1, 2));
  auto jf = fx::jit([w](const fx::Array& x, int power, const std::string& mode) {
    fx::Array y = fx::integer_pow(x, power) * w;
    return mode == "neg" ? -y : y;
  });
  fx::Array x = fx::array(ramp(8, -1, 1));
  auto y2 = jf(x, 2, std::string("pos")).to_vector<float>();
  auto y3 = jf(x, 3, std::string("neg")).to_vector<float>();
  CHECK(jf.compilations() == 2);
  jf(x, 2, std::string("pos"));
  CHECK(jf.compilations() == 2);
  auto xv = x.to_vector<float>(), wv = w.to_vector<float>();
  for (size_t i = 0; i < 8; ++i) {
    CHECK(y2[i] == doctest::Approx(xv[i] * xv[i] * wv[i]));
    CHECK(y3[i] == doctest::Approx(-xv[i] * xv[i] * xv[i] * wv[i]));
  }
}

TEST_CASE("jit: trees in and out") {
  auto jf = fx::jit([](const std::vector<fx::Array>& xs, const std::pair<fx::Array, double>& p) {
    return std::make_tuple(xs[0] + xs[1], p.first * p.second, 7);
  });
  fx::Array a = fx::array({1.f, 2.f}), b = fx::array({10.f, 20.f});
  auto [s, t, k] = jf(std::vector<fx::Array>{a, b}, std::make_pair(a, 0.5));
  CHECK(s.to_vector<float>() == std::vector<float>{11.f, 22.f});
  CHECK(t.to_vector<float>() == std::vector<float>{0.5f, 1.f});
  CHECK(k == 7);
}

TEST_CASE("jit: inside make_ir it inlines its program; jit of grad and grad of jit") {
  auto inner = fx::jit([](const fx::Array& x) { return fx::sin(x) * x; });
  fx::Program p = fx::make_ir([&](const fx::Array& x) { return inner(x) + 1.f; })(fx::array({1.f, 2.f}));
  CHECK(p.eqns.size() == 3);
  CHECK(inner.compilations() == 0);
  auto loss = [](const fx::Array& x) { return fx::sum(fx::sin(x) * x); };
  fx::Array x = fx::array(ramp(5, -1, 1));
  auto g_eager = fx::grad(loss)(x).to_vector<float>();
  auto g_jit = fx::jit(fx::grad(loss))(x).to_vector<float>();
  auto g_of_jit = fx::grad(fx::jit(loss))(x).to_vector<float>();
  for (size_t i = 0; i < g_eager.size(); ++i) {
    CHECK(g_jit[i] == doctest::Approx(g_eager[i]).epsilon(1e-5));
    CHECK(g_of_jit[i] == doctest::Approx(g_eager[i]).epsilon(1e-5));
  }
  // jit inside jit
  auto outer = fx::jit([&](const fx::Array& y) { return inner(y) * 2.f; });
  CHECK(outer(x).to_vector<float>()[1] == doctest::Approx(2 * std::sin(x.to_vector<float>()[1]) * x.to_vector<float>()[1]));
}

TEST_CASE("jit: row sums, matmul and a broadcasting program against eval") {
  fx::Array m = fx::array(ramp(64 * 96, -1, 1), fx::Shape{64, 96});
  fx::Array v = fx::array(ramp(96, 0, 1));
  auto f = [](const fx::Array& m, const fx::Array& v) {
    fx::Array s = fx::sum(fx::exp(m) * 2.f, {1});
    fx::Array mm = fx::matmul(m, fx::reshape(v, fx::Shape{96, 1}));
    return std::make_tuple(s, mm, fx::max(m + v, {0}));
  };
  auto [s, mm, mx] = fx::jit(f)(m, v);
  auto [s0, mm0, mx0] = f(m, v);
  auto cmp = [](const fx::Array& a, const fx::Array& b) {
    REQUIRE(a.aval() == b.aval());
    auto x = a.to_vector<float>(), y = b.to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) CHECK(x[i] == doctest::Approx(y[i]).epsilon(1e-5));
  };
  cmp(s, s0);
  cmp(mm, mm0);
  cmp(mx, mx0);
}

// A primitive with no lowering is refused with a CompileError, never run some other way:
// custom_vjp_linear (the tangent map of a custom_vjp function, which only its transpose defines)
// reaches jit through the linearized function.
TEST_CASE("jit: a primitive without a lowering raises CompileError naming it and the user's line") {
  auto square = fx::custom_vjp([](const fx::Array& v) { return std::pair{v * v, v}; },
                               [](const fx::Array& v, const fx::Array& ct) { return 2.f * v * ct; });
  fx::Array x = fx::array(ramp(3, 1, 1));
  auto [y, f_lin] = fx::linearize(square, x);
  auto jf = fx::jit([&](const fx::Array& t) { return f_lin(t); });
  try {
    jf(x);
    FAIL("no CompileError");
  } catch (const fx::CompileError& e) {
    std::string msg = e.what();
    CAPTURE(msg);
    CHECK(msg.rfind("CompileError", 0) == 0);
    CHECK(msg.find("custom_vjp_linear") != std::string::npos);
    CHECK(msg.find("test_jit.cpp:") != std::string::npos);
  }
  // The failure is remembered, not retried, and raised again.
  CHECK_THROWS_AS(jf(x), fx::CompileError);
}

// The vmap form of indexing (gather/scatter with batch_dims) compiles and agrees with eager.
TEST_CASE("jit: vmapped take and at_add (batch_dims) compile and match eager") {
  fx::Array x = fx::array(ramp(24, 0, 1), fx::Shape{4, 6});
  fx::Array idx = fx::array(std::vector<uint32_t>{0, 5, 2, 9, 1, 1, 3, 4}, fx::Shape{4, 2});
  auto take_rows = [](const fx::Array& row, const fx::Array& i) { return fx::take(row, i, 0); };
  auto add_rows = [](const fx::Array& row, const fx::Array& i) { return fx::at_add(row, i, fx::ones({2}), 0); };
  for (auto f : {+take_rows, +add_rows}) {
    fx::Array want = fx::vmap(f)(x, idx);
    fx::Array got = fx::jit(fx::vmap(f))(x, idx);
    CHECK(got.to_vector<float>() == want.to_vector<float>());
  }
}

namespace {
template <class T>
void check_same(const fx::Array& got, const fx::Array& want, double rtol = 0) {
  REQUIRE(got.aval() == want.aval());
  auto g = got.to_vector<T>(), w = want.to_vector<T>();
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double a = double(g[i]), b = double(w[i]);
    if (std::isnan(b) || std::isinf(b)) bad += !(std::isnan(b) ? std::isnan(a) : a == b);
    else bad += rtol == 0 ? !(a == b) : !(std::fabs(a - b) <= rtol * (1 + std::fabs(b)));
  }
  CHECK(bad == 0);
}
}  // namespace

TEST_CASE("jit: threefry2x32 (random bits) matches eager bit for bit") {
  auto f = [](const fx::Array& key) {
    auto [k1, k2] = fx::random::split(key);
    return std::make_tuple(fx::random::bits(k1, {5, 7}), fx::random::uniform(k2, {1000}), fx::random::normal(k1, {33}));
  };
  fx::Array key = fx::random::key(42);
  auto [b, u, n] = fx::jit(f)(key);
  auto [b0, u0, n0] = f(key);
  check_same<uint32_t>(b, b0);
  check_same<float>(u, u0, 1e-6);
  check_same<float>(n, n0, 2e-5);  // the normal's erfinv/log go through the polynomial math
  // Per-counter keys (both key operands with the counters' shape).
  fx::Array k0 = fx::array(std::vector<uint32_t>{0, 1, 2, 0xffffffffu}), x0 = fx::array(std::vector<uint32_t>{0, 5, 9, 3});
  auto g = [](const fx::Array& k, const fx::Array& x) {
    auto r = fx::bind(fx::Prim::threefry2x32, std::vector<fx::Array>{k, k + x, x, x * x}, fx::Params{}, std::source_location::current());
    return std::make_tuple(r[0], r[1]);
  };
  auto [y0, y1] = fx::jit(g)(k0, x0);
  auto [w0, w1] = g(k0, x0);
  check_same<uint32_t>(y0, w0);
  check_same<uint32_t>(y1, w1);
}

TEST_CASE("jit: polygamma (a library call) matches eager") {
  fx::Array x = fx::array(ramp(257, -3.3f, 9.f));
  for (int64_t m : {0, 1, 3}) {
    CAPTURE(m);
    auto f = [m](const fx::Array& a) { return fx::polygamma(m, a * 2) + 1; };
    check_same<float>(fx::jit(f)(x), f(x), 1e-6);
    fx::Array xd = fx::astype(x, fx::float64);
    check_same<double>(fx::jit(f)(xd), f(xd), 1e-14);
  }
}

TEST_CASE("jit: sort (a library call) on temporaries, several operands, inside a larger kernel") {
  const int64_t R = 300, C = 257;
  fx::Array m = fx::sin(fx::array(ramp(R * C, -40, 40), fx::Shape{R, C}) * 7);
  auto f = [](const fx::Array& a) {
    fx::Array s = fx::sort(fx::exp(a) * 3, 1);
    fx::Array cols = fx::sort(a, 0);
    return std::make_tuple(s + 1, fx::sum(s, {1}), cols, fx::argsort(a, 1));
  };
  auto [s, t, cols, idx] = fx::jit(f)(m);
  auto [s0, t0, cols0, idx0] = f(m);
  check_same<float>(s, s0, 1e-6);
  check_same<float>(t, t0, 1e-5);
  check_same<float>(cols, cols0);
  check_same<int32_t>(idx, idx0);
}

TEST_CASE("jit: scatter keeps the last duplicate, scatter_add accumulates them, both drop out-of-range indices") {
  fx::Array x = fx::array(ramp(4 * 6, -1, 1), fx::Shape{4, 6});
  fx::Array idx = fx::array(std::vector<int32_t>{5, 0, 5, -1, 6, 2, 5});
  fx::Array upd = fx::array(ramp(4 * 7, 3, 9), fx::Shape{4, 7});
  auto f = [](const fx::Array& x, const fx::Array& i, const fx::Array& u) {
    fx::Params p{{"axis", int64_t(1)}};
    return std::make_tuple(bind1v(fx::Prim::scatter, {x * 2, i, u}, p), bind1v(fx::Prim::scatter_add, {x, i, u + 1}, p),
                           bind1v(fx::Prim::gather, {x, i}, p));
  };
  auto [a, b, g] = fx::jit(f)(x, idx, upd);
  auto [a0, b0, g0] = f(x, idx, upd);
  check_same<float>(a, a0);
  check_same<float>(b, b0, 1e-6);
  check_same<float>(g, g0);  // gather clamps -1 and 6
}

TEST_CASE("jit: cumsum forward and reverse, dynamic_slice and dynamic_update_slice with clamped starts") {
  fx::Array x = fx::array(ramp(5 * 8 * 3, -2, 7), fx::Shape{5, 8, 3});
  fx::Array xi = fx::array(std::vector<int32_t>{1, -7, 2147483647, 9, 4, 0}, fx::Shape{2, 3});
  auto f = [](const fx::Array& x, const fx::Array& xi, const fx::Array& i, const fx::Array& j) {
    fx::Array fwd = fx::cumsum(x, 1);
    fx::Array rev = bind1v(fx::Prim::cumsum, {x * x}, fx::Params{{"axis", int64_t(2)}, {"reverse", true}});
    fx::Array win = fx::dynamic_slice(x, {i, j, 0}, {2, 3, 3});
    fx::Array put = bind1v(fx::Prim::dynamic_update_slice, {x, win * 10, j, i, fx::scalar(int32_t(1))}, {});
    return std::make_tuple(fwd, rev, win, put, fx::cumsum(xi, 0));
  };
  for (int32_t i : {0, 2, 4, -3, 100}) {
    CAPTURE(i);
    fx::Array ai = fx::scalar(i), aj = fx::scalar(int32_t(7 - i));
    auto [a, b, c, d, e] = fx::jit(f)(x, xi, ai, aj);
    auto [a0, b0, c0, d0, e0] = f(x, xi, ai, aj);
    check_same<float>(a, a0, 1e-6);
    check_same<float>(b, b0, 1e-6);
    check_same<float>(c, c0);
    check_same<float>(d, d0);
    check_same<int32_t>(e, e0);
  }
}

// cumsum along an axis that is not the innermost runs `inner` lines side by side as vectors: the
// same additions in the same order, so the same bits as eager, in each dtype that takes that path.
TEST_CASE("jit: vectorized cumsum is bit-exact with eager") {
  for (fx::DType d : {fx::float32, fx::float64, fx::int32, fx::int64}) {
    for (fx::Shape s : {fx::Shape{37, 64}, fx::Shape{3, 11, 24}, fx::Shape{9, 6}}) {
      for (int64_t axis = 0; axis + 1 < int64_t(s.size()); ++axis) {
        for (bool reverse : {false, true}) {
          CAPTURE(fx::dtype_name(d));
          CAPTURE(axis);
          CAPTURE(reverse);
          fx::Array x = fx::astype(fx::array(ramp(s.numel(), -1e3, 1e3), s) * 1.37f, d);
          auto f = [axis, reverse](const fx::Array& x) {
            return bind1v(fx::Prim::cumsum, {x}, fx::Params{{"axis", axis}, {"reverse", reverse}});
          };
          fx::Array got = fx::jit(f)(x), want = f(x);
          if (d == fx::float32) check_same<float>(got, want);
          else if (d == fx::float64) check_same<double>(got, want);
          else if (d == fx::int32) check_same<int32_t>(got, want);
          else check_same<int64_t>(got, want);
        }
      }
    }
  }
}

TEST_CASE("jit: large kernels (threaded outer loops when the device has several threads)") {
  const int64_t R = 512, C = 384;
  fx::Array m = fx::array(ramp(R * C, -3, 3), fx::Shape{R, C});
  auto f = [](const fx::Array& m) {
    fx::Array e = fx::sin(m * m) + fx::exp(-m);
    return std::make_tuple(e, fx::sum(e, {1}), fx::max(m, {0}));
  };
  auto [e, s, mx] = fx::jit(f)(m);
  auto [e0, s0, mx0] = f(m);
  auto close = [](const fx::Array& a, const fx::Array& b, double rtol) {
    REQUIRE(a.aval() == b.aval());
    auto x = a.to_vector<float>(), y = b.to_vector<float>();
    size_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) bad += !(std::fabs(x[i] - y[i]) <= 1e-5 + rtol * std::fabs(y[i]));
    CHECK(bad == 0);
  };
  close(e, e0, 1e-5);
  close(s, s0, 1e-5);
  close(mx, mx0, 0);
  MESSAGE("device threads: " << fx::runtime::default_target().num_threads);
}

// dot_general through Eigen (the automatic choice for these sizes) and through generated code, in
// every operand orientation Eigen takes, batched and not, float32 and float64.
TEST_CASE("jit: matmul through Eigen and through generated code agree with eager") {
  const int64_t B = 3, M = 40, K = 50, N = 36;
  for (fx::DType d : {fx::float32, fx::float64}) {
    for (int orient = 0; orient < 4; ++orient) {
      for (bool batched : {false, true}) {
        const bool tl = orient & 1, tr = orient & 2;
        CAPTURE(fx::dtype_name(d));
        CAPTURE(orient);
        CAPTURE(batched);
        fx::Shape ls = tl ? fx::Shape{K, M} : fx::Shape{M, K}, rs = tr ? fx::Shape{N, K} : fx::Shape{K, N};
        if (batched) {
          ls = fx::Shape{B, ls[0], ls[1]};
          rs = fx::Shape{B, rs[0], rs[1]};
        }
        const int64_t nb = batched ? 1 : 0;
        fx::Array a = fx::astype(fx::sin(fx::array(ramp(ls.numel(), -9, 9), ls)), d);
        fx::Array b = fx::astype(fx::cos(fx::array(ramp(rs.numel(), -5, 7), rs)), d);
        fx::Params p{{"lhs_batch", batched ? fx::IntList{0} : fx::IntList{}},
                     {"rhs_batch", batched ? fx::IntList{0} : fx::IntList{}},
                     {"lhs_contracting", fx::IntList{tl ? nb : nb + 1}},
                     {"rhs_contracting", fx::IntList{tr ? nb + 1 : nb}}};
        auto f = [&p](const fx::Array& x, const fx::Array& y) { return bind1v(fx::Prim::dot_general, {x, y}, p) * 2; };
        fx::Array want = f(a, b);
        const double rtol = d == fx::float32 ? 1e-5 : 1e-12;
        if (d == fx::float32) check_same<float>(fx::jit(f)(a, b), want, rtol);
        else check_same<double>(fx::jit(f)(a, b), want, rtol);
        fx::Program prog = fx::make_ir(f)(a, b);
        for (const char* path : {"eigen", "generated"}) {
          CAPTURE(path);
          fx::runtime::CompileTarget dev = fx::runtime::default_target();
          dev.matmul = path;
          std::vector<fx::Array> got = fx::runtime::compile(prog, dev)->run(std::vector<fx::Array>{a, b});
          if (d == fx::float32) check_same<float>(got[0], want, rtol);
          else check_same<double>(got[0], want, rtol);
        }
      }
    }
  }
}

// Generated matmuls large enough for cache tiles (64 x 256 x 128 around the 8 x 32 register tile),
// with a batch dim, in f32 and bf16 (always generated), and shapes the tiles divide only in part.
TEST_CASE("jit: cache-tiled generated matmuls agree with eager") {
  struct Case {
    int64_t b, m, k, n;
  };
  for (Case c : {Case{0, 128, 384, 256}, Case{2, 64, 96, 512}, Case{0, 200, 130, 96}}) {
    for (fx::DType d : {fx::float32, fx::bfloat16}) {
      CAPTURE(c.m);
      CAPTURE(fx::dtype_name(d));
      fx::Shape ls = c.b ? fx::Shape{c.b, c.m, c.k} : fx::Shape{c.m, c.k};
      fx::Shape rs = c.b ? fx::Shape{c.b, c.k, c.n} : fx::Shape{c.k, c.n};
      fx::Array a = fx::astype(fx::sin(fx::array(ramp(ls.numel(), -9, 9), ls)), d);
      fx::Array b = fx::astype(fx::cos(fx::array(ramp(rs.numel(), -5, 7), rs)), d);
      auto f = [](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y) + 1.f; };
      fx::Program prog = fx::make_ir(f)(a, b);
      fx::runtime::CompileTarget dev = fx::runtime::default_target();
      dev.matmul = "generated";
      std::vector<fx::Array> got = fx::runtime::compile(prog, dev)->run(std::vector<fx::Array>{a, b});
      fx::Array want = fx::astype(f(a, b), fx::float32);
      check_same<float>(fx::astype(got[0], fx::float32), want, d == fx::float32 ? 1e-4 : 3e-2);
    }
  }
}

// Row tile-and-fuse: softmax and layernorm over rows (a result with several users inside the
// row loop) compile to one forall over blocks of 8 rows with every op fused in (the dump's
// transform script says so), and match eager.
TEST_CASE("jit: softmax and layernorm rows are tiled and fused, and match eager") {
  const std::string dir = "/tmp/fluxion_test_rowfuse_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const test_helpers::ScopedEnv dump("FLUXION_DUMP", dir);
  fx::Array x = fx::sin(fx::array(ramp(512 * 384, -300, 300), fx::Shape{512, 384})) * 6.f;
  auto softmax = [](const fx::Array& x) { return fx::nn::softmax(x, -1); };
  auto layernorm = [](const fx::Array& x) {
    fx::Array mu = fx::mean(x, {1}, true);
    fx::Array var = fx::mean((x - mu) * (x - mu), {1}, true);
    return (x - mu) / fx::sqrt(var + 1e-5f) * 1.5f + 0.25f;
  };
  fx::runtime::CompileTarget dev = fx::runtime::default_target();
  dev.label = "cpu-rowfuse-test";
  for (auto* f : {+softmax, +layernorm}) {
    fx::Program p = fx::make_ir(f)(x);
    auto exe = fx::runtime::compile(p, dev);
    check_same<float>(exe->run(std::vector<fx::Array>{x})[0], f(x), 2e-5);
    check_same<float>(fx::jit(f)(x), f(x), 2e-5);
  }
  dump.set(nullptr);
  int fused_scripts = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().string().find(".transform.mlir") == std::string::npos) continue;
    std::ifstream in(e.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fused_scripts += text.find("fuse_into_containing_op") != std::string::npos;
  }
  CHECK(fused_scripts >= 2);
  std::filesystem::remove_all(dir);
}

// A reduction whose input is read across rows (sum over the rows of a transposed matrix) is
// compiled with its loops interchanged (rows outer, contiguous columns in vectors).
TEST_CASE("jit: reductions of transposed inputs (interchanged loops) match eager") {
  for (fx::Shape s : {fx::Shape{300, 128}, fx::Shape{64, 7}, fx::Shape{1000, 96}}) {
    fx::Array x = fx::sin(fx::array(ramp(s.numel(), -50, 50), s));
    auto f = [](const fx::Array& x) {
      fx::Array t = fx::transpose(x);
      return std::make_tuple(fx::sum(t, {1}), fx::max(t * 2.f, {1}), fx::sum(fx::exp(t), {1}));
    };
    auto [a, b, c] = fx::jit(f)(x);
    auto [a0, b0, c0] = f(x);
    check_same<float>(a, a0, 2e-5);
    check_same<float>(b, b0);
    check_same<float>(c, c0, 2e-5);
  }
}

// The Program-level jit passes (interpreters/jit_passes.h) are one list; with FLUXION_DUMP every
// stage of one compile is a file named by the user's line: the traced program, the program after
// each pass (the transposed product of a matmul gradient is folded by the last one), then the
// lowering's stages under the same stem.
TEST_CASE("jit: FLUXION_DUMP shows the program after each jit pass and each lowering stage, named by the user's line") {
  const std::string dir = "/tmp/fluxion_test_passes_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const test_helpers::ScopedEnv dump("FLUXION_DUMP", dir);
  const int loss_line = __LINE__ + 1;  // the dump is named by the line of the function's first op
  auto loss = [](const fx::Array& w, const fx::Array& x) { return fx::sum(fx::tanh(fx::matmul(x, w))); };
  fx::Array w = fx::array(ramp(64 * 32, -1, 1), fx::Shape{64, 32}), x = fx::array(ramp(16 * 64, -1, 1), fx::Shape{16, 64});
  fx::Array g = fx::jit(fx::grad(loss))(w, x);
  dump.set(nullptr);
  check_same<float>(g, fx::grad(loss)(w, x), 1e-5);
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  std::string stem;
  for (const std::string& n : names)
    if (n.find(".0-traced.program.txt") != std::string::npos) stem = n.substr(0, n.find(".0-traced"));
  REQUIRE_FALSE(stem.empty());
  CHECK(stem.rfind("jit-test_jit.cpp-" + std::to_string(loss_line) + "-", 0) == 0);  // "jit-test_jit.cpp-<line>-<hash>"
  int k = 0;
  for (const fx::JitPass& pass : fx::jit_pass_list())
    CHECK(names.count(stem + "." + std::to_string(++k) + "-" + pass.name + ".program.txt") == 1);
  for (const char* stage : {".program.txt", ".input.mlir", ".fused.mlir", ".vectorized.mlir", ".lowered.mlir", ".ll", ".s"})
    CHECK(names.count(stem + stage) == 1);
  auto read = [&](const std::string& name) {
    std::ifstream f(dir + "/" + name);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  auto count = [](const std::string& text, const std::string& word) {
    size_t n = 0;
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
    return n;
  };
  auto after_pass = [&](const std::string& name) {  // the dump after the named pass
    int k = 0;
    for (const fx::JitPass& pass : fx::jit_pass_list())
      if (++k && pass.name == name) return read(stem + "." + std::to_string(k) + "-" + name + ".program.txt");
    FAIL("no jit pass " << name);
    return std::string();
  };
  const std::string before = after_pass("hoist_scan_invariants");
  const std::string after = after_pass("fold_transposed_products");
  CHECK(count(after, " transpose[") < count(before, " transpose["));
  std::filesystem::remove_all(dir);
}
