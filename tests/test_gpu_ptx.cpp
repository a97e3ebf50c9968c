// The CUDA pipeline without a GPU: every op-table program whose primitives the GPU pipeline lowers
// goes to PTX, and ptxas (from the toolkit, when there is one) must accept it for sm_90; a program
// holding any other primitive raises CompileError naming it and the user's line. With a GPU -- or
// the emulated one, FLUXION_CUDA_DRIVER=emulate (the meson test gpu_emulated) -- the same programs
// run on it and are compared with eager results on the CPU (skipped without either).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "gpu_programs.h"
#include "gpu_run.h"
#include "lowering/compile_cuda.h"
#include "op_table.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_emulator.h"

namespace optable {
namespace {

namespace cuda = fx::runtime::cuda;

std::string ptxas() { return fx::lowering::cuda_toolkit_path() + "/bin/ptxas"; }
bool have_toolkit() { return !fx::lowering::cuda_toolkit_path().empty(); }
bool have_ptxas() { return have_toolkit() && access(ptxas().c_str(), X_OK) == 0; }

// ptxas's verdict on the PTX: empty when accepted, else what it said.
std::string ptxas_rejects(const std::string& ptx) {
  const std::string dir = std::filesystem::temp_directory_path() / ("fluxion_ptx_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = dir + "/k.ptx", log = dir + "/ptxas.log";
  std::ofstream(in) << ptx;
  const std::string cmd = ptxas() + " -arch=" + fx::lowering::gpu_chip() + " " + in + " -o " + dir + "/k.cubin > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::stringstream said;
  said << std::ifstream(log).rdbuf();
  std::filesystem::remove_all(dir);
  return rc == 0 ? std::string() : "ptxas exit " + std::to_string(rc) + ": " + said.str();
}

}  // namespace

TEST_CASE("gpu op table: the PTX of every program the GPU pipeline lowers is accepted by ptxas" *
          doctest::skip(!have_ptxas())) {
  int compiled = 0;
  std::set<std::string> ops;
  for_each_program([&](const OpInfo& op, fx::DType, const std::vector<fx::Array>&, const fx::Program& p,
                       const std::string& what) {
    if (not_on_gpu(p)) return;
    CAPTURE(what);
    if (std::getenv("FLUXION_TEST_VERBOSE")) fprintf(stderr, "%s\n", what.c_str());
    fx::runtime::GpuProgram g;
    try {
      g = fx::lowering::compile_cuda(p, {});
    } catch (const fx::CompileError& e) {
      FAIL_CHECK(std::string(e.what()));
      return;
    }
    // Only a program without any element to compute (a pad that crops everything) has no launch.
    const bool nothing = std::all_of(p.outvars.begin(), p.outvars.end(), [&](const fx::Atom& a) { return p.aval(a).size() == 0; });
    CHECK(g.launches.empty() == nothing);
    for (const fx::runtime::GpuLaunch& l : g.launches) {
      if (l.kind == fx::runtime::GpuLaunch::Kind::library) {  // no PTX: cuBLAS (runtime/gpu_library.h)
        CHECK(l.kernel == "fluxion_rt_gemm");
        for (const fx::runtime::GpuCallArg& a : l.call_args) CHECK(a.param < int(l.params.size()));
      } else {
        REQUIRE(size_t(l.module) < g.modules.size());
        CHECK(g.modules[size_t(l.module)].ptx.find(".entry " + l.kernel + "(") != std::string::npos);
      }
      for (const fx::runtime::GpuParam& prm : l.params)
        CHECK(prm.index < (prm.kind == fx::runtime::GpuParam::Kind::buffer ? g.num_buffers : int(g.temporary_bytes.size())));
    }
    for (const fx::runtime::GpuModule& m : g.modules) {
      CHECK(m.ptx.find(".target " + fx::lowering::gpu_chip()) != std::string::npos);
      const std::string rejected = ptxas_rejects(m.ptx);
      CHECK_MESSAGE(rejected.empty(), m.name << ": " << rejected);
    }
    ++compiled;
    ops.insert(op.name);
  });
  MESSAGE(compiled << " programs of " << ops.size() << " ops through PTX and ptxas");
  CHECK(ops.size() >= 40);
}

TEST_CASE("gpu launch plan: an elementwise op is one launch of 256-thread blocks along x, whatever its rank" *
          doctest::skip(!have_toolkit())) {
  // Loop dimension d used to map to block dimension d: a rank-3 kernel asked for a block depth of
  // 256 (CUDA allows 64 in z), and a 3-wide innermost dimension left 253 threads of 256 idle.
  for (const fx::Shape& shape : {fx::Shape{1000}, fx::Shape{300, 1000}, fx::Shape{7, 30, 100}, fx::Shape{2, 3, 4, 5, 3},
                                 fx::Shape{100, 3}, fx::Shape{5}}) {
    CAPTURE(shape.str());
    fx::Array x = fx::ones(shape), y = fx::ones(shape);
    const fx::Program p = fx::make_ir([](const fx::Array& a, const fx::Array& b) { return fx::exp(a) * b + 1.f; })(x, y);
    const fx::runtime::GpuProgram g = fx::lowering::compile_cuda(p, {});
    REQUIRE(g.launches.size() == 1);  // the chain is fused into one kernel
    const fx::runtime::GpuLaunch& l = g.launches[0];
    const int64_t n = shape.numel(), threads = std::min<int64_t>(n, 256);
    CHECK(l.block == std::array<uint32_t, 3>{uint32_t(threads), 1, 1});
    CHECK(l.grid == std::array<uint32_t, 3>{uint32_t((n + threads - 1) / threads), 1, 1});
    CHECK(g.num_buffers == 3);
    CHECK(g.temporary_bytes.empty());
    // Every buffer is a parameter, the output among them.
    std::set<int> used;
    for (const fx::runtime::GpuParam& prm : l.params) used.insert(prm.index);
    CHECK(used == std::set<int>{0, 1, 2});
    // On a GPU (or the emulated one): many blocks, each element from its own thread.
    if (cuda::device_count() == 0) continue;
    x = fx::reshape(fx::arange(0.f, float(n)) / float(n), shape);
    const std::vector<float> got = gpu_test::run(cuda::Gpu::get(0), g, p, {x, y})[0].to_vector<float>();
    const std::vector<float> want = (fx::exp(x) * y + 1.f).to_vector<float>();
    REQUIRE(got.size() == want.size());
    int wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) wrong += !(std::abs(got[i] - want[i]) <= 1e-6f * want[i]);
    CHECK(wrong == 0);
  }
}

TEST_CASE("gpu op table: a primitive the GPU pipeline does not lower raises CompileError naming it and the line" *
          doctest::skip(!have_toolkit())) {
  int raised = 0;
  for_each_program([&](const OpInfo&, fx::DType, const std::vector<fx::Array>&, const fx::Program& p,
                       const std::string& what) {
    const fx::Eqn* e = not_on_gpu(p);
    if (!e) return;
    CAPTURE(what);
    const std::string name(fx::prim_name(e->prim));
    try {
      fx::lowering::compile_cuda(p, {});
      FAIL_CHECK("no CompileError for a program holding " << name);
    } catch (const fx::CompileError& err) {
      CHECK_MESSAGE(std::string(err.what()).find("'" + name + "' has no GPU lowering") != std::string::npos, err.what());
      if (e->loc.known()) CHECK_MESSAGE(std::string(err.what()).find(e->loc.str()) != std::string::npos, err.what());
      ++raised;
    }
  });
  CHECK(raised > 0);
}

// One program on the GPU against the eager result on the CPU; false when it could not run.
bool matches_eager(cuda::Gpu& gpu, const OpInfo& op, fx::DType d, const std::vector<fx::Array>& args,
                   const fx::Program& p, const std::string& what) {
  try {
    const fx::Array want = op.op(args);
    const std::vector<fx::Array> got = gpu_test::run(gpu, fx::lowering::compile_cuda(p, {}), p, args);
    REQUIRE(got.size() == 1);
    CHECK(got[0].shape() == want.shape());
    CHECK(got[0].dtype() == want.dtype());
    const Tolerance tol = op.tolerance(Check::jit, want.dtype());  // the result's dtype, as the jit driver
    const std::vector<double> g = to_host(got[0]).data, w = to_host(want).data;
    REQUIRE(g.size() == w.size());
    int wrong = 0;
    for (size_t i = 0; i < g.size(); ++i)
      if (!close(g[i], w[i], tol) && ++wrong <= 3) FAIL_CHECK("element " << i << ": " << g[i] << " on the GPU, " << w[i] << " eager");
    return true;
  } catch (const fx::Error& e) {
    FAIL_CHECK(what << ": " << std::string(e.what()));
    if (cuda::emulating()) cuda::emulator::reset();  // a sticky error ends a GPU's process; here the test goes on
    return false;
  }
}

// Every sample of every op in every dtype (4057 programs; about 75 s of CPU on the emulated GPU):
// shapes the first samples lack (empty arrays, padding, rank 0) run too.
TEST_CASE("gpu op table: programs run on the GPU match eager results on the CPU" *
          doctest::skip(!have_toolkit() || cuda::device_count() == 0)) {
  cuda::Gpu& gpu = cuda::Gpu::get(0);
  int ran = 0;
  std::set<std::string> ops;
  std::map<std::string, int> dtypes;
  for_each_program([&](const OpInfo& op, fx::DType d, const std::vector<fx::Array>& args, const fx::Program& p,
                       const std::string& what) {
    if (not_on_gpu(p)) return;
    CAPTURE(what);
    if (std::getenv("FLUXION_TEST_VERBOSE")) fprintf(stderr, "%s\n", what.c_str());
    if (!matches_eager(gpu, op, d, args, p, what)) return;
    ++ran;
    ops.insert(op.name);
    ++dtypes[std::string(fx::dtype_name(d))];
  }, /*every_sample=*/true);
  std::string per_dtype;
  for (const auto& [name, n] : dtypes) per_dtype += " " + name + ":" + std::to_string(n);
  MESSAGE(ran << " programs of " << ops.size() << " ops run on " << cuda::device_name(0) << " (" << per_dtype << " )");
  CHECK(ops.size() >= 40);
}

}  // namespace optable
