// The CPU target of compiled code (lowering/target.h), the builtins the runtime lends to kernels
// (kernels/kernel_symbols.h) and the check that every symbol of a kernel resolves before it is
// linked (lowering/codegen_cpu.h). meson also runs this file, with every other jit test, under
// FLUXION_CPU=x86-64-v2 and x86-64-v3, where LLVM calls the conversion builtins.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "lowering/codegen_cpu.h"
#include "lowering/target.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {

// Bit patterns of every special case of a conversion: zeros, subnormals, the largest finite
// values, infinities, NaNs, and values exactly halfway between two bf16/f16 neighbours.
std::vector<float> special_floats() {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, 1e-45f, -1e-45f, 1e-40f, 1.17549435e-38f, 3.4028235e38f,
                          -3.4028235e38f, 65504.f, 65519.f, 65520.f, 1e5f, 6e-8f, 5.96e-8f, 2.98e-8f, 1e-10f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 0.1f, 1.f / 3.f, 3.14159265f};
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f800001u, 0x3f807fffu, 0x7f7f8000u, 0x00008000u})  // bf16 ties
    v.push_back(std::bit_cast<float>(bits));
  for (int i = -30; i <= 30; ++i) v.push_back(std::ldexp(1.2345f, i));
  return v;
}

template <class T>
std::vector<uint16_t> bits_of(const fx::Array& a) {
  std::vector<uint16_t> out;
  for (T v : a.to_vector<T>()) out.push_back(v.bits);
  return out;
}

// An ELF object compiled by the system's C compiler from `source` (g++ is a build dependency).
std::string compile_c(const std::string& source) {
  const std::string stem = "/tmp/fluxion_target_test_" + std::to_string(::getpid());
  std::ofstream(stem + ".c") << source;
  const std::string cmd = "cc -O1 -fPIC -c " + stem + ".c -o " + stem + ".o 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream f(stem + ".o", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(stem + ".c");
  std::filesystem::remove(stem + ".o");
  return bytes;
}

}  // namespace

TEST_CASE("jit target: FLUXION_CPU names resolve to their ISA level, unknown names are a CompileError") {
  const fx::lowering::CpuTarget& t = fx::lowering::cpu_target();
  CHECK_FALSE(t.cpu.empty());
#if defined(__x86_64__)
  CHECK(t.isa_level >= 1);
  CHECK(t.vector_bits >= 128);
  const fx::lowering::CpuTarget host = fx::lowering::resolve_cpu_target("");
  CHECK_FALSE(host.overridden);
  CHECK(t.isa_level <= host.isa_level);  // never code the host cannot run
  CHECK(fx::lowering::resolve_cpu_target("x86-64").isa_level == 1);
  if (host.isa_level >= 2) CHECK(fx::lowering::resolve_cpu_target("x86-64-v2").isa_level == 2);
  if (host.isa_level >= 3) {
    const fx::lowering::CpuTarget v3 = fx::lowering::resolve_cpu_target("x86-64-v3");
    CHECK(v3.isa_level == 3);
    CHECK(v3.vector_bits == 256);
    CHECK(v3.f16c);
    CHECK_FALSE(v3.avx512bf16);
    CHECK(fx::lowering::resolve_cpu_target("haswell").isa_level == 3);
  }
  if (host.isa_level < 4) {
    CHECK_THROWS_WITH_AS(fx::lowering::resolve_cpu_target("x86-64-v4"), doctest::Contains("avx512f"), fx::CompileError);
  }
#endif
  CHECK_THROWS_WITH_AS(fx::lowering::resolve_cpu_target("not-a-cpu"),
                       doctest::Contains("FLUXION_CPU=not-a-cpu: LLVM knows no such CPU"), fx::CompileError);
}

TEST_CASE("jit target: float conversions (the builtins without native instructions) are bit-exact with eager") {
  const std::vector<float> xs = special_floats();
  fx::Array x = fx::array(xs);
  auto to = [](fx::DType d) { return [d](const fx::Array& a) { return fx::astype(a, d); }; };
  // f32 -> bf16 (__truncsfbf2 without AVX512-BF16), f32 -> f16 (__truncsfhf2 without F16C)
  CHECK(bits_of<fx::bfloat16_t>(fx::jit(to(fx::bfloat16))(x)) == bits_of<fx::bfloat16_t>(to(fx::bfloat16)(x)));
  CHECK(bits_of<fx::float16_t>(fx::jit(to(fx::float16))(x)) == bits_of<fx::float16_t>(to(fx::float16)(x)));
  // f16 -> f32 (__extendhfsf2) and bf16 -> f32, from every 16-bit pattern
  std::vector<fx::float16_t> halves(65536);
  std::vector<fx::bfloat16_t> bhalves(65536);
  for (uint32_t i = 0; i < 65536; ++i) halves[i].bits = bhalves[i].bits = uint16_t(i);
  for (const fx::Array& h : {fx::array(halves, {65536}), fx::array(bhalves, {65536})}) {
    const std::vector<float> got = fx::jit(to(fx::float32))(h).to_vector<float>();
    const std::vector<float> want = to(fx::float32)(h).to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      if (std::isnan(want[i])) CHECK(std::isnan(got[i]));
      else CHECK(std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i]));
    }
  }
  // f64 -> 16 bits rounds correctly (within one step of eager, which rounds through f32) and
  // arithmetic in bf16/f16 (convert, compute in f32, convert back) still agrees.
  std::vector<double> ds(xs.begin(), xs.end());
  fx::Array d = fx::array(ds);
  const std::vector<float> got = fx::astype(fx::jit(to(fx::bfloat16))(d), fx::float32).to_vector<float>();
  const std::vector<float> want = fx::astype(to(fx::bfloat16)(d), fx::float32).to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(ds[i]);
    if (std::isnan(want[i])) CHECK(std::isnan(got[i]));
    else CHECK(got[i] == want[i]);
  }
  auto f = [](const fx::Array& a) { return fx::exp(a * 0.5f) + a; };
  fx::Array hb = fx::astype(fx::array(std::vector<float>{0.5f, -1.25f, 3.f, 7.75f}), fx::bfloat16);
  CHECK(bits_of<fx::bfloat16_t>(fx::jit(f)(hb)) == bits_of<fx::bfloat16_t>(f(hb)));
}

TEST_CASE("jit target: a kernel is linked only when every symbol it calls resolves") {
  // An object that calls a function nothing provides: refused, naming the function.
  const std::string bad = compile_c("void fluxion_test_no_such_function(void);\n"
                                    "void kernel(void) { fluxion_test_no_such_function(); }\n"
                                    "void _mlir_kernel(void** a) { (void)a; kernel(); }\n");
  const std::vector<std::string> missing = fx::lowering::unresolved_symbols(bad);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0] == "fluxion_test_no_such_function");
  CHECK_THROWS_WITH_AS(fx::lowering::link_object(bad, "a test object"),
                       doctest::Contains("it calls fluxion_test_no_such_function, which nothing in this process provides"),
                       fx::CompileError);
#if defined(__FLT16_MAX__) && (defined(__x86_64__) || defined(__aarch64__))
  // One that calls the runtime's builtins and libm links, and computes.
  const std::string good = compile_c(
      "#include <math.h>\n"
      "extern _Float16 __truncsfbf2(float);\n"
      "extern float __extendhfsf2(_Float16);\n"
      "void kernel(float* x, unsigned short* out, float* y) {\n"
      "  _Float16 b = __truncsfbf2(x[0]);\n"
      "  __builtin_memcpy(out, &b, 2);\n"
      "  y[0] = sinf(x[0]) + __extendhfsf2((_Float16)x[0]);\n"
      "}\n"
      "void _mlir_kernel(void** a) { kernel(*(float**)a[0], *(unsigned short**)a[1], *(float**)a[2]); }\n");
  CHECK(fx::lowering::unresolved_symbols(good).empty());
  auto kernel = fx::lowering::link_object(good, "a test object");
  float x = 1.3f, y = 0.f;
  unsigned short out = 0;
  float* px = &x;
  unsigned short* pout = &out;
  float* py = &y;
  void* args[] = {&px, &pout, &py};
  kernel->packed(args);
  CHECK(out == fx::bfloat16_t(1.3f).bits);
  CHECK(y == doctest::Approx(std::sin(1.3f) + float(fx::float16_t(1.3f))));
#endif
}

// The object-code cache in a process whose first compile is a hit: nothing of MLIR has run, the
// linker starts cold, and the kernel still finds libmvec, the runtime's library calls and its
// conversion builtins. (A hit in a fresh process once failed: LLVM's target was not initialized.)
TEST_CASE("jit target: a new process links object code from the disk cache") {
  auto f = [](const fx::Array& x) {
    return std::make_tuple(fx::sin(x) * 2.f, fx::sort(x, 0), fx::astype(fx::exp(x), fx::bfloat16));
  };
  std::vector<float> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(float(i) * 0.37f) * 5.f;
  const fx::Array x = fx::array(v);
  fx::runtime::CompileTarget dev = fx::runtime::default_target();
  dev.label = "cpu-new-process-test";
  const fx::Program p = fx::make_ir(f)(x);
  if (std::getenv("FLUXION_TEST_DISK_CHILD")) {  // the child: its first compile must come from disk
    auto exe = fx::runtime::compile(p, dev);
    REQUIRE(exe->from_disk_cache());
    std::vector<fx::Array> got = exe->run(std::vector<fx::Array>{x});
    auto [a, b, c] = f(x);
    const std::vector<float> sin_got = got[0].to_vector<float>(), sin_want = a.to_vector<float>();
    for (size_t i = 0; i < sin_got.size(); ++i) CHECK(sin_got[i] == doctest::Approx(sin_want[i]).epsilon(1e-6).scale(1));
    CHECK(got[1].to_vector<float>() == b.to_vector<float>());
    const std::vector<float> e_got = fx::astype(got[2], fx::float32).to_vector<float>();
    const std::vector<float> e_want = fx::astype(c, fx::float32).to_vector<float>();
    for (size_t i = 0; i < e_got.size(); ++i) CHECK(e_got[i] == doctest::Approx(e_want[i]).epsilon(1e-2));
    return;
  }
  const std::string dir = "/tmp/fluxion_test_newproc_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    const test_helpers::ScopedEnv cache("FLUXION_CACHE_DIR", dir);
    CHECK_FALSE(fx::runtime::compile(p, dev)->from_disk_cache());  // fills the cache
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();  // this test binary
  const std::string cmd = "FLUXION_CACHE_DIR=" + dir + " FLUXION_TEST_DISK_CHILD=1 " + self + " " +
                          "'--test-case=jit target: a new process*' > " + dir + "/child.log 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(dir + "/child.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CAPTURE(text);
  CHECK(rc == 0);
  CHECK(text.find("1 passed") != std::string::npos);
  std::filesystem::remove_all(dir);
}

// LLVM 19's X86 backend aborted the process ("Do not know how to soft promote this operator's
// operand!") legalizing a bfloat16 vector of 9, 17, 25, ... elements that lives across basic blocks,
// on targets with AVX512-BF16 or AVX-NE-CONVERT (Cooper Lake, Sapphire Rapids, Zen 4; found by the
// bfloat16 random programs, seed 152809). The code generator turns both features off (nothing
// Fluxion compiles uses them). Compiled here for such a target on any x86-64 host -- compiled, not
// run, since the host may lack AVX-512.
TEST_CASE("jit target: bfloat16 vectors of 9 and 25 elements compile for targets with AVX512-BF16 and AVX-NE-CONVERT") {
#if defined(__x86_64__)
  namespace lw = fx::lowering;
  auto f = [](const fx::Array& c, const fx::Array& b) { return fx::reshape(fx::maximum(c, b), {-1}); };
  for (const char* features : {"+avx512f,+avx512bw,+avx512vl,+avx512bf16", "+avx2,+fma,+f16c,+avxneconvert"})
    for (int64_t n : {3, 5}) {
      CAPTURE(features);
      CAPTURE(n);
      const fx::Array c = fx::astype(fx::ones({n, 1}), fx::bfloat16), b = fx::astype(fx::ones({n}), fx::bfloat16);
      const fx::Program prog = fx::make_ir(f)(c, b);
      lw::CpuTarget target;
      target.cpu = "x86-64";
      target.features = features;
      target.overridden = true;
      const lw::ScopedCpuTarget scoped(target);
      CHECK(fx::runtime::compile(prog, fx::runtime::default_target()) != nullptr);
    }
#endif
}
