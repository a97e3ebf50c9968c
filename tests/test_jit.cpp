// fx::jit: compiled results against the reference interpreter, the compile cache, closures,
// static arguments, composition with tracing, and the CompileError path.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <thread>

#include "lowering/compile.h"
#include "prims/registry.h"

namespace fx = fluxion;

namespace {
std::vector<float> ramp(int64_t n, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = lo + (hi - lo) * float(i) / float(std::max<int64_t>(n - 1, 1));
  return v;
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
