// fx::export_: an MLP compiled ahead of time, linked into a C program with the AOT runtime only
// (ldd shows no LLVM or MLIR), run, and compared with the jit -- for the host and for x86-64-v3,
// single-threaded, and for the host on two OpenMP threads (linked with libomp).
// And the text form of programs: serialize, deserialize, same results.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/export_helpers.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {

using export_helpers::check_program_output;
using export_helpers::link_c_program;
using export_helpers::run_command;
using test_helpers::ramp;

// A two-layer MLP whose weights are closed over (they end up in the header).
struct Mlp {
  fx::Array w1 = fx::array(ramp(16 * 32, -0.5f, 0.5f), fx::Shape{16, 32});
  fx::Array b1 = fx::array(ramp(32, -0.1f, 0.1f));
  fx::Array w2 = fx::array(ramp(32 * 4, 0.3f, -0.3f), fx::Shape{32, 4});
  fx::Array b2 = fx::array(ramp(4, 0.f, 1.f));
  fx::Array operator()(const fx::Array& x) const { return fx::matmul(fx::tanh(fx::matmul(x, w1) + b1), w2) + b2; }
};

// main.c: reads nothing, computes the MLP on a fixed input, prints every output with %a.
const char* kMain = R"(#include <stdio.h>
#include <stdlib.h>
#include "mlp.h"
int main(void) {
  float* x = aligned_alloc(64, 8 * 16 * sizeof(float));
  float* y = aligned_alloc(64, 64 * sizeof(float));
  for (int i = 0; i < 8 * 16; ++i) x[i] = -1.0f + 2.0f * (float)i / (float)(8 * 16 - 1);
  mlp_forward(x, y);
  for (int i = 0; i < 8 * 4; ++i) printf("%a\n", (double)y[i]);
  free(x);
  free(y);
  return 0;
}
)";

}  // namespace

TEST_CASE("export: an MLP linked into a C program without LLVM or MLIR equals the jit") {
  Mlp mlp;
  fx::Array x = fx::array(ramp(8 * 16, -1.f, 1.f), fx::Shape{8, 16});
  const std::vector<float> want = fx::jit(mlp)(x).to_vector<float>();
  fx::Exported exported = fx::export_(mlp, fx::AbstractArray{fx::Shape{8, 16}, fx::float32, false});
  CHECK(exported.program().consts.size() >= 4);

  const auto dir = std::filesystem::temp_directory_path() / ("fluxion-export-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "main.c") << kMain;
  exported.write_header((dir / "mlp.h").string(), "mlp_forward");
  struct Build {
    const char* cpu;
    int threads;  // > 1: OpenMP loops, linked with libomp
  };
  for (Build build : {Build{"", 1}, Build{"x86-64-v3", 1}, Build{"", 2}}) {
    const std::string cpu = build.cpu;
    CAPTURE(cpu);
    CAPTURE(build.threads);
    const std::string name = "mlp" + cpu + "_t" + std::to_string(build.threads);
    const std::string obj = (dir / (name + ".o")).string(), prog = (dir / name).string();
    exported.write_object(obj, cpu, build.threads);
    const std::string omp = build.threads > 1 ? " -L" FLUXION_LIBOMP_DIR " -lomp -Wl,-rpath," FLUXION_LIBOMP_DIR : "";
    link_c_program(dir, obj, prog, omp);
    int status = 0;
    const std::string libs = run_command("ldd " + prog, &status);
    INFO(libs);
    CHECK(libs.find("LLVM") == std::string::npos);  // (libomp lives in /usr/lib/llvm-14: lower case)
    CHECK(libs.find("MLIR") == std::string::npos);
    CHECK(libs.find("fluxion") == std::string::npos);
    check_program_output(prog, want);
  }
  std::filesystem::remove_all(dir);
}

// main.c for the polymorphic export: one object, batches of 1, 3 and 8 rows.
const char* kMainPoly = R"(#include <stdio.h>
#include <stdlib.h>
#include "mlp_poly.h"
int main(void) {
  const int64_t batches[3] = {1, 3, 8};
  for (int k = 0; k < 3; ++k) {
    const int64_t b = batches[k];
    float* x = aligned_alloc(64, 8 * 16 * sizeof(float));
    float* y = aligned_alloc(64, 64 * sizeof(float));
    for (int i = 0; i < b * 16; ++i) x[i] = -1.0f + 2.0f * (float)i / (float)(b * 16 - 1);
    mlp_forward(x, y, b);
    for (int i = 0; i < b * 4; ++i) printf("%a\n", (double)y[i]);
    free(x);
    free(y);
  }
  return 0;
}
)";

TEST_CASE("export: one object for every batch size (polymorphic_shapes); the C entry takes b") {
  Mlp mlp;
  std::vector<float> want;
  for (int64_t b : {1, 3, 8}) {
    const int64_t n = b * 16;
    fx::Array x = fx::array(ramp(n, -1.f, 1.f), fx::Shape{b, 16});
    for (float v : fx::jit(mlp)(x).to_vector<float>()) want.push_back(v);
  }
  fx::Exported exported = fx::export_(mlp, fx::polymorphic_shapes("b, 16"));
  CHECK(exported.program().in_avals().at(0).str() == "f32[b,16]");
  const auto dir = std::filesystem::temp_directory_path() / ("fluxion-export-poly-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "main.c") << kMainPoly;
  exported.write_header((dir / "mlp_poly.h").string(), "mlp_forward");
  std::ifstream header(dir / "mlp_poly.h");
  const std::string text((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
  CHECK(text.find("float* out0, int64_t b)") != std::string::npos);
  const std::string obj = (dir / "mlp_poly.o").string(), prog = (dir / "mlp_poly").string();
  exported.write_object(obj);
  link_c_program(dir, obj, prog);
  check_program_output(prog, want);
  // Without examples every argument is float32 of the spec's shape; '_' needs an example.
  CHECK_THROWS_AS(fx::export_(mlp, fx::polymorphic_shapes("b, _")), fx::ValueError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("export: errors name what cannot be exported") {
  auto sorts = [](const fx::Array& a) { return fx::sort(a); };
  CHECK_THROWS_AS(fx::export_(sorts, fx::zeros({4})), fx::CompileError);
  auto prints = [](const fx::Array& a) {
    fx::debug::print("{}", a);
    return a;
  };
  CHECK_THROWS_AS(fx::export_(prints, fx::zeros({4})), fx::Error);
  fx::Exported e = fx::export_([](const fx::Array& a) { return a * 2.f; }, fx::zeros({4}));
  CHECK_THROWS_AS(e.write_header("/tmp/x.h", "not an identifier"), fx::ValueError);
  CHECK_THROWS_AS(e.write_object("/tmp/x.o", "no-such-cpu"), fx::CompileError);
  CHECK_THROWS_AS(e.write_object("/tmp/x.o", "", 0), fx::ValueError);
}

// The header declares buffers by C element type, and complex has none there: refused, not
// declared as uint8_t (what the header said before 2026-11-29).
TEST_CASE("export: complex arguments and values are a CompileError naming the argument or the user's line") {
  export_helpers::check_complex_refused(
      [](const std::function<fx::Array(const fx::Array&)>& f, const fx::Array& x) { (void)fx::export_(f, x); },
      "export_helpers.h");
}

TEST_CASE("serialize: a program and its constants round-trip through text") {
  Mlp mlp;
  fx::Array x = fx::array(ramp(8 * 16, -1.f, 1.f), fx::Shape{8, 16});
  fx::Program p = fx::make_ir(mlp)(x);
  const std::string text = fx::serialize(p);
  fx::Program q = fx::deserialize(text);
  CHECK(q == p);
  CHECK(fx::serialize(q) == text);
  CHECK(fx::eval(q, {x})[0].to_vector<float>() == fx::eval(p, {x})[0].to_vector<float>());
  CHECK_THROWS_AS(fx::deserialize("not a program"), fx::ParseError);
  std::string broken = text;
  broken.back() = 'z';
  broken += '\n';
  CHECK_THROWS_AS(fx::deserialize(broken), fx::ParseError);
}
