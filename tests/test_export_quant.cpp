// fx::export_ of a quantized model (fx::quant::Quantized: int8 convolutions and products) and of a
// magnitude-pruned one: the object and its header linked into a C program with the AOT runtime
// only (ldd: no LLVM, MLIR or Fluxion library), run on an input it reads from a file, against the
// function called in-process -- the jitted Quantized exactly, the interpreted one within the int8
// tolerance; the pruned model's weights stored sparse in the header, with the same results. And
// the refusal of a windowed call the AOT runtime has no kernel for.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/export_helpers.h"
#include "tests/quant_net.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {

using quant_net::kInput;
using quant_net::net_forward;
using quant_net::net_init;

// main.c: reads argv[2] floats from the file argv[1], runs net_forward, prints argv[3] outputs (%a).
const char* kMain = R"(#include <stdio.h>
#include <stdlib.h>
#include "net.h"
static void* buffer(long floats) { return aligned_alloc(64, (size_t)((floats * 4 + 63) / 64 * 64)); }
int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const long n_in = atol(argv[2]), n_out = atol(argv[3]);
  float* x = buffer(n_in);
  float* y = buffer(n_out);
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(x, sizeof(float), (size_t)n_in, f) != (size_t)n_in) return 3;
  fclose(f);
  net_forward(x, y);
  for (long i = 0; i < n_out; ++i) printf("%a\n", (double)y[i]);
  free(x);
  free(y);
  return 0;
}
)";

// A scratch directory holding main.c and the input, removed at the end.
struct Workdir {
  std::filesystem::path dir;
  explicit Workdir(const std::string& name, const fx::Array& x)
      : dir(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "main.c") << kMain;
    const std::vector<float> v = x.to_vector<float>();
    std::ofstream(dir / "in.bin", std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
  }
  ~Workdir() { std::filesystem::remove_all(dir); }
};

// The bytes main.c's object takes in the program's file (`size`: text and data; the unpacked
// sparse constants are bss, which the file does not hold) -- the header's constants and code.
int64_t main_object_bytes(const Workdir& w) {
  int status = 0;
  const std::string out =
      export_helpers::run_command("cd " + w.dir.string() + " && cc -O2 -std=c11 -c main.c -o probe.o && size probe.o", &status);
  INFO(out);
  REQUIRE(status == 0);
  std::istringstream lines(out);
  std::string header;
  std::getline(lines, header);  // "text data bss dec hex filename"
  int64_t text = 0, data = 0;
  lines >> text >> data;
  return text + data;
}

// Exports f for x's type into `w.dir` (the header's constants sparse where smaller, or all dense),
// links it, checks ldd, and returns what the program prints; *header_bytes is what the header's
// part of the program takes (main_object_bytes).
template <class F>
std::vector<double> run_exported(const F& f, const fx::Array& x, const Workdir& w, int64_t n_out, bool sparse = true,
                                 int64_t* header_bytes = nullptr) {
  fx::Exported e = fx::export_(f, x.aval());
  e.write_header((w.dir / "net.h").string(), "net_forward", sparse);
  const std::string obj = (w.dir / "net.o").string(), prog = (w.dir / "net").string();
  e.write_object(obj);
  export_helpers::link_c_program(w.dir, obj, prog);
  if (header_bytes) *header_bytes = main_object_bytes(w);
  int status = 0;
  const std::string libs = export_helpers::run_command("ldd " + prog, &status);
  INFO(libs);
  CHECK(libs.find("LLVM") == std::string::npos);
  CHECK(libs.find("MLIR") == std::string::npos);
  CHECK(libs.find("fluxion") == std::string::npos);
  return export_helpers::program_numbers(prog + " " + (w.dir / "in.bin").string() + " " + std::to_string(x.size()) +
                                         " " + std::to_string(n_out));
}

double max_abs(const std::vector<double>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double m = 0;
  for (size_t i = 0; i < got.size(); ++i) m = std::max(m, std::abs(got[i] - double(want[i])));
  return m;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float f : v) m = std::max(m, double(std::abs(f)));
  return m;
}

}  // namespace

TEST_CASE("export quant: a quantized convnet in a C program equals the jitted Quantized, within int8 of the interpreted") {
  const ExportNet net = net_init();
  std::vector<fx::Array> calib;
  for (uint32_t i = 0; i < 3; ++i) calib.push_back(fx::random::normal(fx::random::key(50 + i), kInput));
  const fx::quant::Quantized q = fx::quant::quantize(net_forward, net, fx::quant::calibrate(net_forward, net, calib));
  REQUIRE(q.report().find("layer 2 dot_general: int8") != std::string::npos);
  const fx::Array x = fx::random::normal(fx::random::key(77), kInput);
  const std::vector<float> jitted = fx::jit(q)(x).to_vector<float>(), eager = q(x).to_vector<float>();
  const Workdir w("fluxion-export-quant", x);
  const std::vector<double> got = run_exported(q, x, w, 6 * 10);
  // The object is the jit's program compiled once more: the same int8 products (exact) and the same
  // float code around them, so the same bits.
  CHECK(max_abs(got, jitted) == 0);
  // The interpreted Quantized runs each operation eagerly (the same bits here too); where a fused
  // kernel rounds x / scale differently near a half, an int8 activation moves by one step: the
  // tolerance is 1% of the largest output.
  CHECK(max_abs(got, eager) <= 0.01 * max_abs(eager));
  // The header carries the weights as int8.
  std::ifstream header(w.dir / "net.h");
  const std::string text((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
  CHECK(text.find("static const int8_t net_forward_const") != std::string::npos);
}

TEST_CASE("export quant: a 90%-pruned model, float and quantized, in a C program equals the jit; sparse storage") {
  const ExportNet net = fx::prune::magnitude(net_init(), 0.9f);
  REQUIRE(fx::prune::weight_sparsity(net) == doctest::Approx(0.9).epsilon(1e-2));
  const fx::Array x = fx::random::normal(fx::random::key(78), kInput);
  auto pruned = [&](const fx::Array& in) { return net_forward(net, in); };
  const std::vector<float> want = fx::jit(pruned)(x).to_vector<float>();
  const Workdir w("fluxion-export-pruned", x);
  CHECK(max_abs(run_exported(pruned, x, w, 6 * 10), want) <= 1e-5 * max_abs(want));
  const fx::quant::Quantized q = fx::quant::quantize(net_forward, net, fx::quant::calibrate(net_forward, net, {x}));
  const std::vector<float> jitted = fx::jit(q)(x).to_vector<float>();
  int64_t dense_bytes = 0, sparse_bytes = 0;
  const std::vector<double> dense = run_exported(q, x, w, 6 * 10, /*sparse=*/false, &dense_bytes);
  CHECK(max_abs(dense, jitted) == 0);
  // Stored sparse (a bitmap and the nonzero values, unpacked at the first call): the same outputs,
  // and the 3,784 int8 weights at 90% zeros take about a quarter of their bytes.
  const std::vector<double> sparse = run_exported(q, x, w, 6 * 10, /*sparse=*/true, &sparse_bytes);
  CHECK(sparse == dense);
  CHECK(sparse_bytes < dense_bytes - 3784 / 2);
  std::ifstream header(w.dir / "net.h");
  const std::string text((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
  CHECK(text.find("zeros: stored sparse") != std::string::npos);
  CHECK(text.find("pthread_once(&net_forward_once") != std::string::npos);
}

TEST_CASE("export quant: a windowed call the AOT runtime has no kernel for is refused, naming it") {
  // A grouped int8 convolution runs the reference kernel of libfluxion, which the AOT runtime lacks.
  auto grouped = [](const fx::Array& x, const fx::Array& w) {
    return fx::conv_general_dilated(x, w, {1, 1}, fx::Padding("SAME"), {}, {}, std::nullopt, 2, 1, fx::int32);
  };
  const fx::Array x = fx::astype(fx::ones({1, 4, 5, 5}), fx::int8), w = fx::astype(fx::ones({4, 2, 3, 3}), fx::int8);
  const std::string e = test_helpers::error_of<fx::CompileError>([&] { (void)fx::export_(grouped, x, w); });
  CHECK_MESSAGE(e.find("conv_general_dilated") != std::string::npos, e);
  CHECK_MESSAGE(e.find("reference kernel") != std::string::npos, e);
  // The same convolution ungrouped has a kernel there: exported.
  auto plain = [](const fx::Array& x, const fx::Array& w) {
    return fx::conv_general_dilated(x, w, {1, 1}, fx::Padding("SAME"), {}, {}, std::nullopt, 1, 1, fx::int32);
  };
  CHECK_NOTHROW((void)fx::export_(plain, x, fx::astype(fx::ones({4, 4, 3, 3}), fx::int8)));
}
