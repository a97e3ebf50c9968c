// What the export tests share: running a shell command, linking a C program in a directory with an
// exported object and the AOT runtime (libfluxion_aot_rt.a), reading the numbers it prints; and
// the complex-refusal check both exporters' tests make (tests/test_export.cpp, test_onnx.cpp); the
// Python interpreter that has onnxruntime (tests/test_onnx.cpp, test_onnx_random.cpp).
#pragma once
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace export_helpers {

/// The interpreter scripts/onnxruntime.sh installed onnxruntime into ($FLUXION_TEST_PYTHON), else
/// python3.
inline std::string python() {
  const char* p = std::getenv("FLUXION_TEST_PYTHON");
  return p && *p ? p : "python3";
}

/// Whether that interpreter imports onnxruntime and numpy (the ONNX tests are skipped where not).
inline bool have_onnxruntime() {
  static const bool have = std::system((python() + " -c 'import onnxruntime, numpy' >/dev/null 2>&1").c_str()) == 0;
  return have;
}

/// The command's stdout and stderr; *status is its exit status as pclose gives it.
inline std::string run_command(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return "";
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

/// Links `main` (a C file in `dir`) with `obj` and the AOT runtime (and `libs`) into `prog`;
/// REQUIREs success.
inline void link_c_program(const std::filesystem::path& dir, const std::string& obj, const std::string& prog,
                           const std::string& libs = "", const std::string& main = "main.c") {
  int status = 0;
  std::string log = run_command("cd " + dir.string() + " && cc -O2 -std=c11 " + main + " " + obj + " " +
                                    FLUXION_AOT_RUNTIME + " -lstdc++ -lm -lmvec -lpthread -ldl" + libs + " -o " + prog,
                                &status);
  INFO(log);
  REQUIRE(status == 0);
}

/// Runs `prog`, which prints one number per line (%a for floats), and returns them; REQUIREs that
/// it exits 0.
inline std::vector<double> program_numbers(const std::string& prog) {
  int status = 0;
  const std::string text = run_command(prog, &status);
  INFO(text);
  REQUIRE(status == 0);
  std::istringstream out(text);
  std::vector<double> got;
  for (std::string line; std::getline(out, line);) got.push_back(std::strtod(line.c_str(), nullptr));
  return got;
}

/// Runs `prog` and checks what it prints against `want` (relative 1e-5).
inline void check_program_output(const std::string& prog, const std::vector<float>& want) {
  const std::vector<double> got = program_numbers(prog);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(float(got[i]) == doctest::Approx(want[i]).epsilon(1e-5));
}

/// export_one(f, x) exports f at x. A complex argument is a CompileError naming it; a real
/// argument whose program goes through complex values is one naming the user's line (the test file).
inline void check_complex_refused(
    const std::function<void(const std::function<fluxion::Array(const fluxion::Array&)>&, const fluxion::Array&)>& export_one,
    const std::string& test_file) {
  namespace fx = fluxion;
  auto square = [](const fx::Array& a) { return a * a; };
  try {
    export_one(square, fx::astype(fx::ones({4}), fx::complex64));
    FAIL("no error");
  } catch (const fx::CompileError& e) {
    CHECK(std::string(e.what()).find("argument 0 is c64[4]") != std::string::npos);
  }
  auto through_complex = [](const fx::Array& a) {
    const fx::Array c = fx::astype(a, fx::complex64);
    return fx::real(c * c);
  };
  try {
    export_one(through_complex, fx::ones({4}));
    FAIL("no error");
  } catch (const fx::CompileError& e) {
    CHECK(std::string(e.what()).find("complex") != std::string::npos);
    CHECK(std::string(e.what()).find(test_file) != std::string::npos);
  }
}

}  // namespace export_helpers
