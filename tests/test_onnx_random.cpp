// The ONNX writer's round trip (issue 35, item 2): random programs (tests/random_program.h, the ops
// the writer has a form for: elementwise math, broadcasting, reductions, logsumexp, transpose,
// flip, cumsum, products, slices, concatenation, reshape, broadcast_to, integer_pow) exported with
// fx::onnx::export_, run by onnxruntime -- all of them in one Python process -- and compared with
// Fluxion's eager result. A program the writer refuses is a failure here: the op set is the one it
// claims. Skipped, not passed, where onnxruntime is not installed (scripts/onnxruntime.sh).
// FLUXION_TEST_RANDOM_PROGRAMS programs (40 by default) from seed FLUXION_TEST_RANDOM_SEED (1).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/export_helpers.h"
#include "tests/random_program.h"

namespace fx = fluxion;

namespace {

using namespace random_program;

// Runs every model of `manifest` (lines: model, output, inputs...) in one onnxruntime process; each
// output is written as .npy, or `<output>.err` with the exception's text. False if Python failed.
bool run_all(const std::filesystem::path& dir, const std::string& manifest) {
  const std::string script =
      "import sys, traceback, numpy as np, onnxruntime as ort\n"
      "for line in open(sys.argv[1]):\n"
      "    model, out, *ins = line.split()\n"
      "    try:\n"
      "        s = ort.InferenceSession(model, providers=['CPUExecutionProvider'])\n"
      "        feeds = {f'in{i}': np.load(p) for i, p in enumerate(ins)}\n"
      "        np.save(out, s.run(['out0'], feeds)[0])\n"
      "    except Exception:\n"
      "        open(out + '.err', 'w').write(traceback.format_exc())\n";
  std::ofstream(dir / "run_all.py") << script;
  int status = 0;
  const std::string log = export_helpers::run_command(
      export_helpers::python() + " " + (dir / "run_all.py").string() + " " + manifest, &status);
  if (status != 0) MESSAGE(log);
  return status == 0;
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("onnx: random programs exported and run by onnxruntime agree with Fluxion" *
          doctest::skip(!export_helpers::have_onnxruntime())) {
  const uint64_t count = env_or("FLUXION_TEST_RANDOM_PROGRAMS", 40), first = env_or("FLUXION_TEST_RANDOM_SEED", 1);
  const auto dir = std::filesystem::temp_directory_path() / ("fluxion-onnx-random-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  struct Exported {
    Case c;
    fx::Array want;
    std::string out;
  };
  std::vector<Exported> exported;
  std::ofstream manifest(dir / "manifest.txt");
  int refused = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const Case c = case_of(seed);
    const RandomProgram f{c.seed, c.steps, nullptr, OpSet::onnx};
    const Inputs in = inputs(c.seed, c.a, c.b, fx::float32);
    const std::string stem = (dir / ("p" + std::to_string(seed))).string();
    try {
      fx::onnx::export_(f, in.x, in.y, in.z, stem + ".onnx");
    } catch (const fx::Error& e) {
      if (++refused <= 3) FAIL_CHECK("seed " << seed << ": the writer refused an op it claims: " << std::string(e.what()));
      continue;
    }
    std::string line = stem + ".onnx " + stem + "-out.npy";
    int k = 0;
    for (const fx::Array& a : {in.x, in.y, in.z}) {
      const std::string p = stem + "-in" + std::to_string(k++) + ".npy";
      fx::save(p, a);
      line += " " + p;
    }
    manifest << line << "\n";
    exported.push_back({c, f(in.x, in.y, in.z), stem + "-out.npy"});
  }
  manifest.close();
  REQUIRE(run_all(dir, (dir / "manifest.txt").string()));

  int failures = 0;
  double worst = 0;
  for (const Exported& e : exported) {
    std::string what;
    if (std::filesystem::exists(e.out + ".err")) {
      what = "onnxruntime raised:\n" + file_text(e.out + ".err");
    } else {
      const fx::Array got = fx::load<fx::Array>(e.out);
      if (got.dtype() != e.want.dtype() || got.shape() != e.want.shape()) {
        what = "onnxruntime gives " + got.aval().str() + ", Fluxion " + e.want.aval().str();
      } else {
        const double err = max_rel_error(got, e.want, 1e-3);
        worst = std::max(worst, err);
        if (err > 1e-3) what = "relative error " + num(err);
      }
    }
    if (!what.empty() && ++failures <= 3) {
      const Inputs in = inputs(e.c.seed, e.c.a, e.c.b, fx::float32);
      FAIL_CHECK("seed " << e.c.seed << ": " << what << "\n"
                         << fx::make_ir(RandomProgram{e.c.seed, e.c.steps, nullptr, OpSet::onnx})(in.x, in.y, in.z).str());
    }
  }
  MESSAGE(exported.size() << " random programs from seed " << first << " run by onnxruntime, " << failures
                          << " disagreeing; largest relative error " << worst);
  CHECK(refused == 0);
  CHECK(failures == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("onnx: integer not/and/or/xor are refused (ONNX's operators of those names take bools)") {
  const fx::Array i = fx::array(std::vector<int32_t>{1, 2, 3});
  const auto path = (std::filesystem::temp_directory_path() / ("fluxion-onnx-xor-" + std::to_string(::getpid()) + ".onnx")).string();
  try {
    fx::onnx::export_([](const fx::Array& a) { return fx::bitwise_xor(a, a + 1); }, i, path);
    FAIL("no error");
  } catch (const fx::CompileError& e) {
    CHECK(std::string(e.what()).find("xor") != std::string::npos);
    CHECK(std::string(e.what()).find("i32[3]") != std::string::npos);
    CHECK(std::string(e.what()).find("test_onnx_random.cpp") != std::string::npos);
  }
  // Bools are what ONNX's Xor takes: written.
  fx::onnx::export_([](const fx::Array& a) { return fx::logical_xor(a > 1, a > 2); }, i, path);
  CHECK(std::filesystem::file_size(path) > 0);
  std::filesystem::remove(path);
}
