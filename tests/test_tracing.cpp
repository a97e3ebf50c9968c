// Tracing: closures become constants, C++ loops unroll, leaked tracers and concretization raise
// typed errors, nested traces lift outer tracers, and shape-driven constructors are staged.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <string>

namespace fx = fluxion;

namespace {
bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }
}  // namespace

TEST_CASE("tracing: a closure over a concrete array becomes a constvar; scalars become literals") {
  fx::Array w = fx::array({1.f, 2.f, 3.f});
  fx::Array s = fx::scalar(4.f);
  auto f = [&](const fx::Array& x) { return x * w + s; };
  fx::Program p = fx::make_ir(f)(fx::zeros({3}));
  CHECK(p.constvars.size() == 1);
  CHECK(p.consts.size() == 1);
  CHECK(p.str() ==
        "{ lambda a:f32[3] ; b:f32[3]. let\n"
        "    c:f32[3] = mul b a\n"
        "    d:f32[3] = add c 4.0:f32[]\n"
        "  in (d) }");
  fx::verify(p);
  std::vector<fx::Array> r = fx::eval(p, {fx::ones({3})});
  CHECK(r[0].to_vector<float>() == std::vector<float>{5, 6, 7});
}

TEST_CASE("tracing: C++ loops unroll into eqns") {
  auto f = [](fx::Array x) {
    for (int i = 0; i < 5; ++i) x = fx::sin(x) * 2.f;
    return x;
  };
  fx::Program p = fx::make_ir(f)(fx::ones({2}));
  CHECK(p.eqns.size() == 10);
  fx::Array eager = f(fx::ones({2}));
  CHECK(fx::eval(p, {fx::ones({2})})[0].to_vector<float>() == eager.to_vector<float>());
}

TEST_CASE("tracing: shape-driven constructors are staged, not baked in") {
  auto f = [](const fx::Array& x) { return x + fx::zeros({4}) + fx::arange(4); };
  fx::Program p = fx::make_ir(f)(fx::ones({4}));
  CHECK(p.constvars.empty());
  CHECK(contains(p.str(), "broadcast_in_dim[broadcast_dimensions=() shape=(4,)] 0.0:f32[]"));
  CHECK(contains(p.str(), "iota[dimension=0 dtype=i32 shape=(4,)]"));
}

TEST_CASE("tracing: eval_shape computes types only") {
  auto f = [](const fx::Array& x, const fx::Array& y) { return fx::where(x > y, x, 2.0); };
  fx::AbstractArray out = fx::eval_shape(f)(fx::ones({2, 3}, fx::float64), fx::ones({3}, fx::float64));
  CHECK(out.shape == fx::Shape{2, 3});
  CHECK(out.dtype == fx::float64);
  auto g = [](const fx::Array& x) { return std::tuple{x, x > 0.f}; };
  std::vector<fx::AbstractArray> outs = fx::eval_shape(g)(fx::ones({5}));
  REQUIRE(outs.size() == 2);
  CHECK(outs[1].dtype == fx::bool_);
}

TEST_CASE("tracing: asking a tracer for its value raises ConcretizationError naming the line") {
  auto item = [](const fx::Array& x) { return fx::scalar(x.item<float>()); };
  auto branch = [](const fx::Array& x) {
    if (x > 0.f) return x;
    return -x;
  };
  auto to_vec = [](const fx::Array& x) { return fx::array(x.to_vector<float>()); };
  for (int k = 0; k < 3; ++k) {
    std::string msg;
    try {
      if (k == 0) fx::make_ir(item)(fx::scalar(1.f));
      if (k == 1) fx::make_ir(branch)(fx::scalar(1.f));
      if (k == 2) fx::make_ir(to_vec)(fx::ones({2}));
    } catch (const fx::ConcretizationError& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    CHECK(contains(msg, "test_tracing.cpp:"));
    CHECK(contains(msg, "where"));
    CHECK(contains(msg, "cond"));
    CHECK(contains(msg, "while_loop"));
  }
  // Eagerly, the same functions just work.
  CHECK(branch(fx::scalar(-2.f)).item<float>() == 2.f);
}

TEST_CASE("tracing: a tracer used after its trace ended raises TracerLeakError") {
  fx::Array leaked;
  auto f = [&](const fx::Array& x) {
    leaked = x * 2.f;
    return x;
  };
  fx::make_ir(f)(fx::ones({2}));
  CHECK(leaked.is_tracer());
  CHECK_THROWS_AS(leaked + 1.f, fx::TracerLeakError);
  try {
    fx::sin(leaked);
  } catch (const fx::TracerLeakError& e) {
    CHECK(contains(e.what(), "sin"));
    CHECK(contains(e.what(), "test_tracing.cpp"));
  }
  // Using it inside a later, unrelated trace is a leak too.
  auto g = [&](const fx::Array& x) { return x + leaked; };
  CHECK_THROWS_AS(fx::make_ir(g)(fx::ones({2})), fx::TracerLeakError);
}

TEST_CASE("tracing: nested traces lift outer tracers into the inner program") {
  fx::Program inner;
  fx::Array example = fx::ones({3});  // made outside: inside the trace it would be a staged eqn
  auto outer = [&](const fx::Array& x) {
    auto f = [&](const fx::Array& y) { return y * x; };  // x is a tracer of the outer trace
    inner = fx::make_ir(f)(example);
    // Inlining the inner program re-records its eqns into the outer trace.
    return fx::eval(inner, {x + 1.f})[0];
  };
  fx::Program p = fx::make_ir(outer)(fx::ones({3}));
  CHECK(inner.constvars.size() == 1);
  CHECK(p.eqns.size() == 2);  // add, then the inlined mul
  CHECK(fx::eval(p, {fx::full({3}, 2.f)})[0].to_vector<float>() == std::vector<float>{6, 6, 6});
}

TEST_CASE("tracing: tree arguments and outputs") {
  auto f = [](const std::pair<fx::Array, fx::Array>& xy, const std::vector<fx::Array>& zs) {
    return std::tuple{xy.first + xy.second, zs[0] * zs[1]};
  };
  fx::Program p = fx::make_ir(f)(std::pair{fx::ones({2}), fx::ones({2})}, std::vector{fx::ones({3}), fx::ones({3})});
  CHECK(p.invars.size() == 4);
  CHECK(p.outvars.size() == 2);
}

TEST_CASE("program: use counts and producers, for the passes that rewrite single-use values") {
  fx::Program p = fx::parse_program(
      "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = mul b b\n    d:f32[3] = add c 1.0:f32[]\n"
      "  in (d, b) }");
  CHECK(p.use_counts() == std::vector<int>{1, 3, 1, 1});  // a: sin; b: mul twice and an output; c; d
  CHECK(p.producers() == std::vector<int>{-1, 0, 1, 2});
}
