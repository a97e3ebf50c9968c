// The op table's GPU programs for a machine that has a GPU and its driver but not this build's
// libraries (docs/gpu.md, "Checking on a GPU"): with FLUXION_TEST_GPU_BUNDLE=<dir>, each program
// compiled here goes to <dir>/<n>/ -- its PTX modules, its launch plan and its inputs -- for
// scripts/gpu_bundle_run.py, which needs only libcuda.so.1 and Python. With
// FLUXION_TEST_GPU_RESULTS=<dir>, the outputs that script wrote there are compared with the eager
// results on the CPU, as the GPU op table does. Both are skipped unless their setting is given.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gpu_programs.h"
#include "interpreters/jit_passes.h"

namespace optable {
namespace {

const char* setting(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

void write_bytes(const std::string& path, const void* data, size_t n) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), std::streamsize(n));
}

size_t bytes_of(const fx::AbstractArray& a) { return std::max<size_t>(1, size_t(a.size()) * fx::itemsize(a.dtype)); }

// plan.txt: one line per fact, read by scripts/gpu_bundle_run.py.
// With `with_data` false the inputs' bytes are not written (plan: "in <i> <bytes> 0"): a benchmark's
// runner fills them on the GPU (scripts/gpu_bench_run.py), since 1 GiB inputs cannot travel.
void write_case(const std::string& dir, const fx::Program& p, const std::vector<fx::Array>& args,
                const fx::runtime::GpuProgram& g, bool with_data = true) {
  std::filesystem::create_directories(dir);
  std::ofstream plan(dir + "/plan.txt");
  std::vector<fx::Array> inputs = args;
  inputs.insert(inputs.end(), p.consts.begin(), p.consts.end());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t n = with_data ? size_t(inputs[i].size()) * fx::itemsize(inputs[i].dtype()) : 0;
    plan << "in " << i << " " << bytes_of(fx::AbstractArray{inputs[i].shape(), inputs[i].dtype()}) << " " << n << "\n";
    if (n) write_bytes(dir + "/in" + std::to_string(i) + ".bin", inputs[i].data(), n);
  }
  for (size_t i = 0; i < p.outvars.size(); ++i) plan << "out " << i << " " << bytes_of(p.aval(p.outvars[i])) << "\n";
  for (size_t i = 0; i < g.temporary_bytes.size(); ++i) plan << "temp " << i << " " << g.temporary_bytes[i] << "\n";
  for (size_t i = 0; i < g.modules.size(); ++i) {
    std::ofstream(dir + "/m" + std::to_string(i) + ".ptx") << g.modules[i].ptx;
    plan << "module " << i << " m" << i << ".ptx\n";
  }
  for (const fx::runtime::GpuLaunch& l : g.launches) {
    REQUIRE(l.kind == fx::runtime::GpuLaunch::Kind::kernel);  // the runner has the driver, not cuBLAS
    plan << "launch " << l.module << " " << l.kernel;
    for (uint32_t d : l.grid) plan << " " << d;
    for (uint32_t d : l.block) plan << " " << d;
    plan << " " << l.shared_bytes << " " << l.params.size();
    for (const fx::runtime::GpuParam& prm : l.params)
      plan << " " << (prm.kind == fx::runtime::GpuParam::Kind::buffer ? "b" : "t") << prm.index;
    plan << "\n";
  }
}

// status.txt of a results directory: case number -> "ok" or the error.
std::map<int, std::string> statuses(const std::string& dir) {
  std::map<int, std::string> out;
  std::ifstream f(dir + "/status.txt");
  for (std::string line; std::getline(f, line);) {
    std::istringstream is(line);
    int n = -1;
    is >> n;
    std::string rest;
    std::getline(is, rest);
    if (n >= 0) out[n] = rest.substr(rest.find_first_not_of(' ') == std::string::npos ? 0 : rest.find_first_not_of(' '));
  }
  return out;
}

}  // namespace

TEST_CASE("gpu bundle: the op table's GPU programs written for a machine with only a CUDA driver" *
          doctest::skip(!setting("FLUXION_TEST_GPU_BUNDLE") || fx::lowering::cuda_toolkit_path().empty())) {
  const std::string dir = setting("FLUXION_TEST_GPU_BUNDLE");
  std::filesystem::create_directories(dir);
  std::ofstream cases(dir + "/cases.txt");
  int n = 0;
  for_each_program([&](const OpInfo&, fx::DType, const std::vector<fx::Array>& args, const fx::Program& p,
                       const std::string& what) {
    if (not_on_gpu(p) || calls_gpu_library(p)) return;  // the runner has no cuBLAS
    CAPTURE(what);
    write_case(dir + "/" + std::to_string(n), p, args, fx::lowering::compile_cuda(p, {}));
    cases << n++ << " " << what << "\n";
  }, /*every_sample=*/true);
  MESSAGE(n << " programs written to " << dir);
  CHECK(n > 0);
}

TEST_CASE("gpu bundle: a GPU's outputs of the bundle match eager results on the CPU" *
          doctest::skip(!setting("FLUXION_TEST_GPU_RESULTS"))) {
  const std::string dir = setting("FLUXION_TEST_GPU_RESULTS");
  const std::map<int, std::string> status = statuses(dir);
  int n = 0, passed = 0;
  for_each_program([&](const OpInfo& op, fx::DType, const std::vector<fx::Array>& args, const fx::Program& p,
                       const std::string& what) {
    if (not_on_gpu(p) || calls_gpu_library(p)) return;  // the runner has no cuBLAS
    CAPTURE(what);
    const int index = n++;
    auto s = status.find(index);
    if (s == status.end() || s->second != "ok") {
      FAIL_CHECK("case " << index << ": " << (s == status.end() ? std::string("did not run") : s->second));
      return;
    }
    const fx::Array want = op.op(args);
    std::ifstream f(dir + "/" + std::to_string(index) + "/out0.bin", std::ios::binary);
    std::vector<char> bytes(bytes_of(p.aval(p.outvars[0])));
    f.read(bytes.data(), std::streamsize(bytes.size()));
    const fx::Array got = fx::detail::array_from_host(bytes.data(), want.dtype(), want.shape(), size_t(want.size()), {});
    const Tolerance tol = op.tolerance(Check::jit, want.dtype());
    const std::vector<double> g = to_host(got).data, w = to_host(want).data;
    int wrong = 0;
    for (size_t i = 0; i < g.size(); ++i)
      if (!close(g[i], w[i], tol) && ++wrong <= 3) FAIL_CHECK("element " << i << ": " << g[i] << " on the GPU, " << w[i] << " eager");
    passed += wrong == 0;
  }, /*every_sample=*/true);
  MESSAGE(passed << " of " << n << " programs match (" << status.size() << " ran)");
  CHECK(passed == n);
}

// The GPU workloads of issue 30 that the pipeline lowers today, as the GPU machine's benchmark runner
// takes them (scripts/gpu_bench_run.py: inputs filled on the GPU, CUDA-event timings): the fused
// elementwise chain over 256M float32 (against a device-to-device copy of the same bytes), row
// softmax and row sums of 8192 x 8192 float32, and a one-op program of 1024 elements (the launch).
TEST_CASE("gpu bundle: the benchmark programs for a machine with only a CUDA driver" *
          doctest::skip(!setting("FLUXION_TEST_GPU_BENCH") || fx::lowering::cuda_toolkit_path().empty())) {
  const std::string dir = setting("FLUXION_TEST_GPU_BENCH");
  std::filesystem::create_directories(dir);
  std::ofstream cases(dir + "/cases.txt");
  int n = 0;
  auto add = [&](const std::string& name, const fx::Program& traced, const std::vector<fx::Array>& args) {
    const fx::Program p = fx::jit_passes(traced, name);  // what fx::jit compiles (custom_jvp inlined, ...)
    write_case(dir + "/" + std::to_string(n), p, args, fx::lowering::compile_cuda(p, {}), /*with_data=*/false);
    cases << n++ << " " << name << "\n";
  };
  {
    const fx::Array x = fx::zeros({int64_t(1) << 28}), y = fx::zeros({int64_t(1) << 28});
    auto chain = [](const fx::Array& a, const fx::Array& b) { return fx::tanh(a) * b + fx::exp(-(a * a)) * 0.5f; };
    add("chain_f32_256M", fx::make_ir(chain)(x, y), {x, y});
  }
  {
    const fx::Array x = fx::zeros({8192, 8192});
    add("softmax_f32_8192x8192", fx::make_ir([](const fx::Array& a) { return fx::nn::softmax(a, -1); })(x), {x});
    add("rowsum_f32_8192x8192", fx::make_ir([](const fx::Array& a) { return fx::sum(a, {1}); })(x), {x});
  }
  {
    const fx::Array x = fx::zeros({1024});
    add("scale_f32_1024", fx::make_ir([](const fx::Array& a) { return a * 3.f; })(x), {x});
  }
  MESSAGE(n << " benchmark programs written to " << dir);
  CHECK(n == 4);
}

}  // namespace optable
