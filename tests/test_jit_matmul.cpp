// Matrix products through the runtime's library call (kernels/matmul.h): every per-level Eigen
// build and its slicing for threads against a double-precision loop; compiled dot_generals against
// eager in every orientation, batched, at odd sizes and on both sides of the library threshold,
// with one and two threads; and the build a compiled kernel runs following the compile target.
// tests/meson.build runs the "matmul jit" cases again with FLUXION_CPU=x86-64-v2 and x86-64-v3.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "lowering/target.h"
#include "kernels/matmul.h"

namespace fx = fluxion;
namespace rt = fluxion::runtime;

namespace {

struct Mkn {
  int64_t m, k, n;
};

// Deterministic values in about [-1, 1] that vary along every axis.
template <class T>
std::vector<T> wave(int64_t n, int seed) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = T(std::sin(0.37 * double(i) + seed) * 0.9 + 0.015 * double(i % 7));
  return v;
}

// op(lhs[b]) @ op(rhs[b]) in double over the stored layouts of rt::Matmul, and the same product of
// absolute values: the scale of the rounding error.
struct Reference {
  std::vector<double> value, scale;
};
template <class T>
Reference reference(const std::vector<T>& a, const std::vector<T>& b, int64_t batch, Mkn s, bool tl, bool tr) {
  Reference r{std::vector<double>(size_t(batch * s.m * s.n)), std::vector<double>(size_t(batch * s.m * s.n))};
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double v = 0, w = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          const double x = double(a[size_t(q * s.m * s.k + (tl ? p * s.m + i : i * s.k + p))]);
          const double y = double(b[size_t(q * s.k * s.n + (tr ? j * s.k + p : p * s.n + j))]);
          v += x * y;
          w += std::fabs(x * y);
        }
        r.value[size_t((q * s.m + i) * s.n + j)] = v;
        r.scale[size_t((q * s.m + i) * s.n + j)] = w;
      }
  return r;
}

// |got - want| <= rounds * eps * scale everywhere: what `rounds` roundings per product term allow.
template <class T, class U>
void check_rounding(const std::vector<T>& got, const std::vector<U>& want, const std::vector<double>& scale, double rounds) {
  REQUIRE(got.size() == want.size());
  const double eps = std::is_same_v<T, float> ? 0x1p-24 : 0x1p-53;
  size_t bad = 0;
  double worst = 0;  // largest error as a fraction of its bound
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = rounds * eps * scale[i] + 1e-300;
    const double err = std::fabs(double(got[i]) - double(want[i]));
    if (!(err <= bound)) ++bad;
    worst = std::max(worst, err / bound);
  }
  CAPTURE(worst);
  CHECK(bad == 0);
}

// The x86-64 level FLUXION_CPU asks for: N for x86-64-vN, the host's when unset ("native",
// "host"), 0 for an LLVM CPU name (whose level only LLVM's CPU tables know).
int requested_level() {
  const char* cpu = std::getenv("FLUXION_CPU");
  const std::string name = cpu ? cpu : "";
  if (name.empty() || name == "native" || name == "host") return rt::host_isa_level();
  if (name.size() == 9 && name.compare(0, 8, "x86-64-v") == 0) return name[8] - '0';
  return 0;
}

}  // namespace

// The splits for threads: 129 x 70 x 131 and 200 x 90 x 61 in row slabs, 20 x 200 x 300 in column
// slabs, batch 3 by whole entries, batch 2 on 3 threads in slabs of each entry (all above the
// threading threshold of 2^20 multiply-adds); 5 x 3 x 7 below it.
TEST_CASE("runtime matmul: every level's Eigen build, in slabs for 1-3 threads, matches a loop") {
  struct Case {
    int64_t batch;
    Mkn s;
  };
  const Case cases[] = {{1, {129, 70, 131}}, {1, {200, 90, 61}}, {1, {20, 200, 300}},
                         {3, {50, 80, 90}},   {2, {64, 100, 90}},  {1, {5, 3, 7}}};
  auto run = [&](auto zero) {
    using T = decltype(zero);
    for (const Case& c : cases)
      for (int orient = 0; orient < 4; ++orient) {
        const bool tl = orient & 1, tr = orient & 2;
        const std::vector<T> a = wave<T>(c.batch * c.s.m * c.s.k, 1), b = wave<T>(c.batch * c.s.k * c.s.n, 2);
        const Reference want = reference(a, b, c.batch, c.s, tl, tr);
        for (int level = 1; level <= rt::host_isa_level(); ++level)
          for (int threads = 1; threads <= 3; ++threads) {
            CAPTURE(c.s.m);
            CAPTURE(c.batch);
            CAPTURE(orient);
            CAPTURE(level);
            CAPTURE(threads);
            std::vector<T> out(size_t(c.batch * c.s.m * c.s.n), T(-7));
            rt::Matmul mm{std::is_same_v<T, double>, c.batch, c.s.m, c.s.n, c.s.k, tl, tr, a.data(), b.data(), out.data()};
            rt::matmul(mm, level, threads);
            check_rounding(out, want.value, want.scale, double(c.s.k + 2));
          }
      }
  };
  run(float(0));
  run(double(0));
}

// 31 x 32 x 32 stays generated code (below 32^3 multiply-adds); the others take the library call,
// the two largest on two threads as well (in row slabs, then column slabs).
TEST_CASE("matmul jit: dot_general through the library call agrees with eager") {
  const Mkn sizes[] = {{31, 32, 32}, {32, 32, 32}, {33, 31, 35}, {1, 64, 600}, {257, 129, 65}, {24, 300, 700}};
  for (fx::DType d : {fx::float32, fx::float64})
    for (Mkn s : sizes)
      for (int orient = 0; orient < 4; ++orient)
        for (bool batched : {false, true}) {
          const bool tl = orient & 1, tr = orient & 2;
          const int64_t nb = batched ? 1 : 0, batch = batched ? 3 : 1;
          fx::Shape ls = tl ? fx::Shape{s.k, s.m} : fx::Shape{s.m, s.k}, rs = tr ? fx::Shape{s.n, s.k} : fx::Shape{s.k, s.n};
          if (batched) {
            ls = fx::Shape{batch, ls[0], ls[1]};
            rs = fx::Shape{batch, rs[0], rs[1]};
          }
          const fx::Array a = fx::astype(fx::array(wave<float>(ls.numel(), 1), ls), d);
          const fx::Array b = fx::astype(fx::array(wave<float>(rs.numel(), 2), rs), d);
          const fx::Params p{{"lhs_batch", batched ? fx::IntList{0} : fx::IntList{}},
                             {"rhs_batch", batched ? fx::IntList{0} : fx::IntList{}},
                             {"lhs_contracting", fx::IntList{tl ? nb : nb + 1}},
                             {"rhs_contracting", fx::IntList{tr ? nb + 1 : nb}}};
          auto f = [&p](const fx::Array& x, const fx::Array& y) { return fx::bind1(fx::Prim::dot_general, {x, y}, p, std::source_location::current()); };
          const fx::Array want = f(a, b);
          const fx::Array scale = f(fx::abs(a), fx::abs(b));
          const fx::Program prog = fx::make_ir(f)(a, b);
          const bool large = s.m * s.k * s.n >= (int64_t(1) << 20);
          for (int threads : {1, 2}) {
            if (threads == 2 && !large) continue;
            CAPTURE(fx::dtype_name(d));
            CAPTURE(s.m);
            CAPTURE(s.k);
            CAPTURE(orient);
            CAPTURE(batched);
            CAPTURE(threads);
            fx::runtime::CompileTarget dev = fx::runtime::default_target();
            dev.num_threads = threads;
            const fx::Array got = fx::runtime::compile(prog, dev)->run(std::vector<fx::Array>{a, b})[0];
            REQUIRE(got.shape() == want.shape());
            // Two summation orders, each within (k + 1) roundings of the exact sum.
            const std::vector<double> sc = fx::astype(scale, fx::float64).to_vector<double>();
            if (d == fx::float32) check_rounding(got.to_vector<float>(), want.to_vector<float>(), sc, 2.0 * double(s.k + 1));
            else check_rounding(got.to_vector<double>(), want.to_vector<double>(), sc, 2.0 * double(s.k + 1));
          }
        }
}

// The build that runs follows the compile target: FLUXION_CPU=x86-64-v3 on an AVX-512 host runs
// the AVX2 build. Counted by the blocks each build computes.
TEST_CASE("matmul jit: the library call runs the Eigen build of the compile target") {
  const int target = fx::lowering::cpu_target().isa_level;
  const std::string impl = rt::matmul_implementation(target);
  MESSAGE("compile target " << fx::lowering::cpu_target().cpu << " (x86-64 level " << target << "): matmul by " << impl);
  if (requested_level() != 0) CHECK(target == requested_level());
  const int level = std::max(1, std::min(target, rt::host_isa_level()));
#if defined(__x86_64__)
  CHECK(impl == (level == 1 ? std::string("eigen x86-64") : "eigen x86-64-v" + std::to_string(level)));
#endif
  uint64_t before[5];
  for (int l = 1; l <= 4; ++l) before[l] = rt::matmul_blocks_computed(l);
  const fx::Array a = fx::array(wave<float>(64 * 48, 1), fx::Shape{64, 48}), b = fx::array(wave<float>(48 * 40, 2), fx::Shape{48, 40});
  const fx::Array got = fx::jit([](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y); })(a, b);
  CHECK(got.shape() == fx::Shape{64, 40});
  for (int l = 1; l <= 4; ++l) {
    CAPTURE(l);
    if (l == level) CHECK(rt::matmul_blocks_computed(l) > before[l]);
    else CHECK(rt::matmul_blocks_computed(l) == before[l]);
  }
}

// 16-bit operands (the mixed-precision path): the library call widens them to float32, accumulates
// in float32 and rounds the output once (to the operands' dtype, or not at all with a float32
// preferred_element_type). Against a double loop over the same 16-bit values: (k + 2) float32
// roundings per product term plus one rounding of the output. Under FLUXION_CPU=x86-64-v2
// (tests/meson.build) float16 converts without F16C.
TEST_CASE("matmul jit: bfloat16 and float16 products take the library call, accumulate in float32") {
  const Mkn sizes[] = {{33, 31, 35}, {257, 129, 65}};
  const int level = std::max(1, std::min(fx::lowering::cpu_target().isa_level, rt::host_isa_level()));
  for (fx::DType d : {fx::bfloat16, fx::float16})
    for (bool f32_out : {false, true})
      for (Mkn s : sizes)
        for (int orient = 0; orient < 4; ++orient) {
          const bool tl = orient & 1, tr = orient & 2, batched = orient == 3;
          const int64_t batch = batched ? 2 : 1;
          fx::Shape ls = tl ? fx::Shape{s.k, s.m} : fx::Shape{s.m, s.k}, rs = tr ? fx::Shape{s.n, s.k} : fx::Shape{s.k, s.n};
          if (batched) ls = fx::Shape{batch, ls[0], ls[1]}, rs = fx::Shape{batch, rs[0], rs[1]};
          const fx::Array a = fx::astype(fx::array(wave<float>(ls.numel(), 1), ls), d);
          const fx::Array b = fx::astype(fx::array(wave<float>(rs.numel(), 2), rs), d);
          const int64_t nb = batched ? 1 : 0;
          const fx::Params p{{"lhs_batch", batched ? fx::IntList{0} : fx::IntList{}},
                             {"rhs_batch", batched ? fx::IntList{0} : fx::IntList{}},
                             {"lhs_contracting", fx::IntList{tl ? nb : nb + 1}},
                             {"rhs_contracting", fx::IntList{tr ? nb + 1 : nb}},
                             {"preferred_element_type", f32_out ? fx::float32 : d}};
          auto f = [&p](const fx::Array& x, const fx::Array& y) { return fx::bind1(fx::Prim::dot_general, {x, y}, p, std::source_location::current()); };
          CAPTURE(fx::dtype_name(d));
          CAPTURE(f32_out);
          CAPTURE(s.m);
          CAPTURE(orient);
          // Eigen's build, or for bfloat16 the AVX512-BF16 kernel where the target has it.
          auto blocks = [&] { return rt::matmul_blocks_computed(level) + rt::matmul_bf16_blocks_computed(); };
          const uint64_t before = blocks();
          const fx::Array got = fx::jit(f)(a, b);
          CHECK(blocks() > before);
          CHECK(got.dtype() == (f32_out ? fx::float32 : d));
          const std::vector<float> av = fx::astype(a, fx::float32).to_vector<float>(), bv = fx::astype(b, fx::float32).to_vector<float>();
          const Reference want = reference(av, bv, batch, s, tl, tr);
          std::vector<double> bound = want.scale;
          const double out_eps = f32_out ? 0 : d == fx::bfloat16 ? 0x1p-8 : 0x1p-11;
          for (size_t i = 0; i < bound.size(); ++i) bound[i] += out_eps * std::fabs(want.value[i]) / ((s.k + 2) * 0x1p-24);
          check_rounding(fx::astype(got, fx::float32).to_vector<float>(), want.value, bound, double(s.k + 2));
        }
}

// The conversions at every level up to the host's (level 3 and up take F16C for float16) agree
// with ir/dtype.h's scalar ones bit for bit: normal, subnormal, zero, infinite, halfway values.
TEST_CASE("runtime matmul: widening and rounding 16-bit floats agree with the scalar conversions") {
  std::vector<float> values;
  for (float v : {0.f, -0.f, 1.f, -2.5f, 65504.f, 65520.f, 1e-5f, 6e-8f, 3e-8f, 1e30f, -1e-40f, 1.00390625f, 1.01171875f})
    values.push_back(v);
  values.push_back(std::numeric_limits<float>::infinity());
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffa00000u, 0x7fffffffu}) values.push_back(std::bit_cast<float>(nan));
  for (int i = 0; i < 200; ++i) values.push_back(std::ldexp(float(std::sin(i * 1.7)), (i % 60) - 30));
  const int64_t n = int64_t(values.size());
  const auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
  for (int level = 1; level <= rt::host_isa_level(); ++level) {
    CAPTURE(level);
    std::vector<fx::bfloat16_t> bf(values.size());
    std::vector<fx::float16_t> h(values.size());
    rt::narrow_from_f32(values.data(), fx::bfloat16, bf.data(), n, level, 1);
    rt::narrow_from_f32(values.data(), fx::float16, h.data(), n, level, 1);
    std::vector<float> wb(values.size()), wh(values.size());
    rt::widen_to_f32(fx::bfloat16, bf.data(), wb.data(), n, level, 1);
    rt::widen_to_f32(fx::float16, h.data(), wh.data(), n, level, 1);
    for (size_t i = 0; i < values.size(); ++i) {
      CAPTURE(values[i]);
      CHECK(bf[i].bits == fx::bfloat16_t(values[i]).bits);
      if (std::isnan(values[i])) CHECK(std::isnan(float(h[i])));  // F16C keeps a NaN's payload, the scalar one not
      else CHECK(h[i].bits == fx::float16_t(values[i]).bits);
      CHECK(bits(wb[i]) == bits(float(fx::bfloat16_t(values[i]))));
      if (!std::isnan(values[i])) CHECK(wh[i] == float(fx::float16_t(values[i])));
    }
    // Every length up to two vectors: the vector loops' tails write exactly n elements.
    for (int64_t m = 0; m <= 40; ++m) {
      CAPTURE(m);
      std::vector<fx::bfloat16_t> part(41, fx::bfloat16_t(7.f));
      std::vector<float> back(41, 7.f);
      rt::narrow_from_f32(values.data(), fx::bfloat16, part.data(), m, level, 1);
      rt::widen_to_f32(fx::bfloat16, part.data(), back.data(), m, level, 1);
      for (int64_t i = 0; i < 41; ++i) {
        CHECK(part[size_t(i)].bits == (i < m ? bf[size_t(i)] : fx::bfloat16_t(7.f)).bits);
        CHECK(bits(back[size_t(i)]) == bits(i < m ? wb[size_t(i)] : 7.f));
      }
    }
  }
}
