// The jit's int8 products (dot_general of int8 operands, preferred_element_type int32) through the
// library call into kernels/gemm_int8.h: bit for bit against the reference interpreter (fx::eval's
// eval_program) and an int64 loop, over odd sizes, k not a multiple of 4 or 64, batch dims, every
// orientation and operands at -128/127, for each compile target the path depends on (x86-64-v2
// -> portable, -v3 and -v4 -> AVX2, the host -> its VNNI, the host less AVX512-VNNI -> AVX-VNNI),
// each forced with ScopedCpuTarget; a per-path call counter says the path each target took.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <iterator>
#include <random>
#include <source_location>
#include <string>
#include <vector>

#include "kernels/conv.h"
#include "kernels/gemm_int8.h"
#include "lowering/target.h"
#include "prims/isa_level.h"

namespace fx = fluxion;
namespace rt = fluxion::runtime;

namespace {

enum class Fill { random, extremes, uint8 };

struct Case {
  int64_t batch;  // 0: no batch dim
  int64_t m, k, n;
  bool trans_lhs, trans_rhs;
  Fill fill;
  bool library;  // at least 32^3 multiply-adds of int8 operands: the library call (else generated code)
};

// k = 31, 67, 130, 1000, 4099 (not multiples of 4 or 64), rows and columns off the 4 x 4-register
// tiles, a single row, two batched products, operands at their extremes over k = 4099 (sums of
// +-67 M that int16 pairs would saturate), one product below the library threshold and one of
// uint8 operands (both generated code).
const Case kCases[] = {
    {0, 33, 31, 35, false, false, Fill::random, true},   {0, 64, 67, 40, true, false, Fill::random, true},
    {0, 37, 130, 70, false, true, Fill::random, true},   {0, 5, 1000, 17, true, true, Fill::random, true},
    {0, 1, 64, 600, false, false, Fill::random, true},   {3, 20, 45, 50, false, false, Fill::random, true},
    {2, 16, 99, 33, true, true, Fill::extremes, true},   {0, 8, 4099, 19, false, true, Fill::extremes, true},
    {0, 7, 9, 11, false, false, Fill::extremes, false},  {0, 40, 50, 30, false, false, Fill::uint8, false},
};

struct Operands {
  fx::Array lhs, rhs;
  fx::Params params;
};

fx::Array bytes(const std::vector<float>& v, fx::Shape s, fx::DType d) { return fx::astype(fx::array(v, s), d); }

Operands make_operands(const Case& c, std::mt19937& rng) {
  const int64_t nb = c.batch ? 1 : 0, batch = c.batch ? c.batch : 1;
  fx::Shape ls = c.trans_lhs ? fx::Shape{c.k, c.m} : fx::Shape{c.m, c.k};
  fx::Shape rs = c.trans_rhs ? fx::Shape{c.n, c.k} : fx::Shape{c.k, c.n};
  if (c.batch) ls = fx::Shape{c.batch, ls[0], ls[1]}, rs = fx::Shape{c.batch, rs[0], rs[1]};
  std::vector<float> a(size_t(batch * c.m * c.k)), b(size_t(batch * c.k * c.n));
  if (c.fill == Fill::extremes) {
    for (size_t i = 0; i < a.size(); ++i) a[i] = i % 5 == 3 ? 127.f : -128.f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = i % 7 == 2 ? 127.f : -128.f;
  } else {
    const int lo = c.fill == Fill::uint8 ? 0 : -128;
    std::uniform_int_distribution<int> byte(lo, lo + 255);
    for (float& x : a) x = float(byte(rng));
    for (float& x : b) x = float(byte(rng));
  }
  const fx::DType d = c.fill == Fill::uint8 ? fx::uint8 : fx::int8;
  return {bytes(a, ls, d), bytes(b, rs, d),
          fx::Params{{"lhs_batch", c.batch ? fx::IntList{0} : fx::IntList{}},
                     {"rhs_batch", c.batch ? fx::IntList{0} : fx::IntList{}},
                     {"lhs_contracting", fx::IntList{c.trans_lhs ? nb : nb + 1}},
                     {"rhs_contracting", fx::IntList{c.trans_rhs ? nb + 1 : nb}},
                     {"preferred_element_type", fx::int32}}};
}

// The product summed in int64 over the stored layouts, wrapped to int32.
std::vector<int32_t> loop_product(const Case& c, const Operands& o) {
  const std::vector<int32_t> a = fx::astype(o.lhs, fx::int32).to_vector<int32_t>();
  const std::vector<int32_t> b = fx::astype(o.rhs, fx::int32).to_vector<int32_t>();
  const int64_t batch = c.batch ? c.batch : 1;
  std::vector<int32_t> out;
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        int64_t s = 0;
        for (int64_t p = 0; p < c.k; ++p)
          s += int64_t(a[size_t(q * c.m * c.k + (c.trans_lhs ? p * c.m + i : i * c.k + p))]) *
               b[size_t(q * c.k * c.n + (c.trans_rhs ? j * c.k + p : p * c.n + j))];
        out.push_back(int32_t(uint32_t(uint64_t(s))));
      }
  return out;
}

struct Target {
  std::string name;
  fx::lowering::CpuTarget cpu;
  rt::Int8Path expected;
};

// The targets this host can compile for, with the path each must take.
std::vector<Target> targets() {
  namespace lw = fx::lowering;
  std::vector<Target> t;
  const int host = fx::host_isa_level();
  if (host < 2) return t;
  t.push_back({"x86-64-v2", lw::resolve_cpu_target("x86-64-v2"), rt::Int8Path::portable});
  if (host >= 3) t.push_back({"x86-64-v3", lw::resolve_cpu_target("x86-64-v3"), rt::Int8Path::avx2});
  if (host >= 4) t.push_back({"x86-64-v4", lw::resolve_cpu_target("x86-64-v4"), rt::Int8Path::avx2});
  const bool vnni512 = rt::host_has_avx512_vnni(), vnni256 = rt::host_has_avx_vnni();
  const rt::Int8Path native = vnni512 ? rt::Int8Path::avx512_vnni
                              : vnni256 ? rt::Int8Path::avx_vnni
                              : host >= 3 ? rt::Int8Path::avx2
                                          : rt::Int8Path::portable;
  t.push_back({"host", lw::resolve_cpu_target(""), native});
  if (vnni512 && vnni256) {  // the host less AVX512-VNNI: a different feature string, so a different cache key
    lw::CpuTarget less = lw::resolve_cpu_target("");
    const size_t at = less.features.find("+avx512vnni");
    REQUIRE(at != std::string::npos);
    less.features.replace(at, 1, "-");
    less.avx512vnni = false;
    t.push_back({"host without avx512vnni", less, rt::Int8Path::avx_vnni});
  }
  return t;
}

uint64_t calls(rt::Int8Path p) { return rt::int8_gemm_calls(p); }

}  // namespace

TEST_CASE("jit int8: dot_general int8 -> int32 through the int8 GEMM equals the interpreter bit for bit") {
  std::mt19937 rng(33);
  std::vector<Operands> ops;
  std::vector<fx::Array> args;
  uint64_t library_calls = 0;  // int8_gemm calls per run: one per batch entry of each library product
  for (const Case& c : kCases) {
    ops.push_back(make_operands(c, rng));
    args.push_back(ops.back().lhs), args.push_back(ops.back().rhs);
    if (c.library) library_calls += uint64_t(c.batch ? c.batch : 1);
  }
  auto products = [&ops](const std::vector<fx::Array>& a) {
    std::vector<fx::Array> out;
    for (size_t i = 0; i < ops.size(); ++i)
      out.push_back(fx::bind1(fx::Prim::dot_general, {a[2 * i], a[2 * i + 1]}, ops[i].params, std::source_location::current()));
    return out;
  };
  const fx::Program prog = fx::make_ir(products)(args);
  const std::vector<fx::Array> want = fx::eval_program(prog, args);
  for (size_t i = 0; i < ops.size(); ++i) {
    CAPTURE(i);
    REQUIRE(want[i].dtype() == fx::int32);
    CHECK(want[i].to_vector<int32_t>() == loop_product(kCases[i], ops[i]));
  }
  for (const Target& t : targets())
    for (int threads : {1, 2}) {
      if (threads == 1) MESSAGE("target " << t.name << ": int8 GEMM path " << rt::int8_path_name(t.expected));
      CAPTURE(t.name);
      CAPTURE(threads);
      CAPTURE(rt::int8_path_name(t.expected));
      const fx::lowering::ScopedCpuTarget scoped(t.cpu);
      fx::runtime::CompileTarget dev = fx::runtime::default_target();
      dev.num_threads = threads;
      uint64_t before[4];
      for (int p = 0; p < 4; ++p) before[p] = calls(rt::Int8Path(p));
      const std::vector<fx::Array> got = fx::runtime::compile(prog, dev)->run(args);
      for (int p = 0; p < 4; ++p) {
        CAPTURE(rt::int8_path_name(rt::Int8Path(p)));
        CHECK(calls(rt::Int8Path(p)) - before[p] == (rt::Int8Path(p) == t.expected ? library_calls : 0));
      }
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        REQUIRE(got[i].aval() == want[i].aval());
        CHECK(got[i].to_vector<int32_t>() == want[i].to_vector<int32_t>());
      }
    }
}

// The one-argument choice (eager callers, the benchmark) and the compiled kernels' choice agree
// where both apply, and a target's VNNI is never used beyond what the host has.
TEST_CASE("jit int8: the path follows the compile target's level and VNNI, capped by the host") {
  using rt::Int8Path;
  CHECK(rt::int8_gemm_path(2, true, true) == Int8Path::portable);
  for (int level = 1; level <= 4; ++level)
    for (bool v512 : {false, true})
      for (bool v256 : {false, true}) {
        const Int8Path p = rt::int8_gemm_path(level, v512, v256);
        CHECK(rt::int8_path_available(p));
        if (p == Int8Path::avx512_vnni) CHECK((level >= 4 && v512));
        if (p == Int8Path::avx_vnni) CHECK((level >= 3 && v256));
      }
  if (fx::kernel_isa_level() >= 3) CHECK(rt::int8_gemm_path(3, false, false) == Int8Path::avx2);
}

namespace {

struct ConvCase {
  const char* label;
  fx::Shape x, w;
  fx::IntList strides;
  std::vector<std::pair<int64_t, int64_t>> padding;
  fx::IntList lhs_dil, rhs_dil;
  const char *lhs_layout, *rhs_layout, *out_layout;
  int64_t groups;
};

// Random bytes over the whole int8 range, one in five at -128 or 127.
fx::Array random_int8(const fx::Shape& s, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(-128, 127);
  std::vector<float> v(size_t(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 5 == 0 ? (i % 10 == 0 ? -128.f : 127.f) : float(byte(rng));
  return bytes(v, s, fx::int8);
}

}  // namespace

// int8 convolutions (preferred_element_type int32) under jit: im2col into the int8 GEMM where
// ungrouped (outputs copied by runs in NCHW, scattered in NHWC; a single block of images on two
// threads splits its rows, 40 images in blocks of 16, 16 and 8 split by block), the reference
// kernel for feature groups -- bit for bit against the interpreter on every target of targets().
TEST_CASE("jit int8: conv_general_dilated int8 -> int32 through im2col and the int8 GEMM equals the interpreter") {
  const ConvCase cases[] = {
      {"NCHW 3x3 SAME", {3, 5, 9, 9}, {7, 5, 3, 3}, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, "NCHW", "OIHW", "NCHW", 1},
      {"NHWC strided, dilated, padded", {1, 11, 8, 6}, {2, 3, 6, 9}, {2, 1}, {{1, 0}, {2, 2}}, {1, 2}, {2, 1},
       "NHWC", "HWIO", "NHWC", 1},
      {"1-D over k = 3 * 70", {2, 70, 30}, {16, 70, 3}, {1}, {{0, 0}}, {1}, {1}, "NCH", "OIH", "NCH", 1},
      {"40 images in blocks of 16", {40, 3, 10, 10}, {4, 3, 3, 3}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, {1, 1}, "NCHW",
       "OIHW", "NCHW", 1},
      {"feature groups (reference kernel)", {2, 4, 6, 6}, {6, 2, 3, 3}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, {1, 1},
       "NCHW", "OIHW", "NCHW", 2},
  };
  std::mt19937 rng(34);
  std::vector<fx::Array> args;
  for (const ConvCase& c : cases) args.push_back(random_int8(c.x, rng)), args.push_back(random_int8(c.w, rng));
  auto convs = [&cases](const std::vector<fx::Array>& a) {
    std::vector<fx::Array> out;
    for (size_t i = 0; i < std::size(cases); ++i) {
      const ConvCase& c = cases[i];
      out.push_back(fx::conv_general_dilated(a[2 * i], a[2 * i + 1], c.strides, fx::Padding(c.padding), c.lhs_dil,
                                             c.rhs_dil, fx::conv_dimension_numbers(c.lhs_layout, c.rhs_layout, c.out_layout),
                                             c.groups, 1, fx::int32));
    }
    return out;
  };
  const fx::Program prog = fx::make_ir(convs)(args);
  const std::vector<fx::Array> want = fx::eval_program(prog, args);
  // The interpreter against float64 convolutions of the same values (exact: |sums| < 2^53).
  const std::vector<fx::Array> as_f64 = [&] {
    std::vector<fx::Array> f;
    for (const fx::Array& a : args) f.push_back(fx::astype(a, fx::float64));
    return f;
  }();
  for (size_t i = 0; i < std::size(cases); ++i) {
    CAPTURE(cases[i].label);
    const ConvCase& c = cases[i];
    const fx::Array f = fx::conv_general_dilated(as_f64[2 * i], as_f64[2 * i + 1], c.strides, fx::Padding(c.padding),
                                                 c.lhs_dil, c.rhs_dil,
                                                 fx::conv_dimension_numbers(c.lhs_layout, c.rhs_layout, c.out_layout), c.groups);
    REQUIRE(want[i].dtype() == fx::int32);
    CHECK(fx::astype(want[i], fx::float64).to_vector<double>() == f.to_vector<double>());
  }
  for (const Target& t : targets())
    for (int threads : {1, 2}) {
      CAPTURE(t.name);
      CAPTURE(threads);
      const fx::lowering::ScopedCpuTarget scoped(t.cpu);
      fx::runtime::CompileTarget dev = fx::runtime::default_target();
      dev.num_threads = threads;
      const uint64_t int8_runs = rt::conv_runs(rt::ConvAlgorithm::im2col_int8);
      const uint64_t on_path = calls(t.expected);
      const std::vector<fx::Array> got = fx::runtime::compile(prog, dev)->run(args);
      CHECK(rt::conv_runs(rt::ConvAlgorithm::im2col_int8) - int8_runs == 4);  // all but the grouped one
      CHECK(calls(t.expected) - on_path == 1 + 1 + 1 + 3);  // one product per block of images (<= 1024 positions)
      for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(cases[i].label);
        REQUIRE(got[i].aval() == want[i].aval());
        CHECK(got[i].to_vector<int32_t>() == want[i].to_vector<int32_t>());
      }
    }
}
