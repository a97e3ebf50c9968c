// The GPU check's programs to run and compare (tests/gpu_bundle.h says which settings do what): the
// op table's GPU programs -- every sample of every op in every dtype, or CI's subset -- and the
// composed transforms, written as <bundle>/check for tools/gpu_runner; and the comparison of the
// outputs it brings back with eager results on the CPU, as the GPU op table compares them. Both
// are skipped unless their setting is given (scripts/gpu_check.sh pack / compare give them).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "gpu_bundle.h"
#include "gpu_programs.h"

namespace optable {
namespace {

using gpu_bundle::setting;

// Every program of the check, in order: the op table's that the GPU lowers (each op's first, and
// every `every`-th), then the composed ones. f(what, program, args, eager, tolerance).
template <class F>
void for_each_check(int every, F&& f) {
  int n = 0;
  std::string last_op;
  std::map<std::string, int> seen;  // samples of one op may share a label: the second is "... #2"
  for_each_program([&](const OpInfo& op, fx::DType, const std::vector<fx::Array>& args, const fx::Program& p,
                       const std::string& label) {
    const int k = ++seen[label];
    const std::string what = k == 1 ? label : label + " #" + std::to_string(k);
    if (not_on_gpu(p)) return;
    const bool first = op.name != last_op;
    last_op = op.name;
    if (!first && n++ % every != 0) return;
    const fx::DType out = p.aval(p.outvars[0]).dtype;
    f(what, p, args, [&] { return std::vector<fx::Array>{op.op(args)}; }, op.tolerance(Check::jit, out));
  }, /*every_sample=*/true);
  for (const gpu_bundle::Composed& c : gpu_bundle::composed_cases()) f(c.what, c.program, c.args, c.eager, c.tol);
}

int every() {
  const char* k = setting("FLUXION_TEST_GPU_BUNDLE_EVERY");
  return k ? std::max(1, std::atoi(k)) : 1;
}

}  // namespace

TEST_CASE("gpu bundle: the op table's GPU programs and the composed transforms written for the GPU check" *
          doctest::skip(!setting("FLUXION_TEST_GPU_BUNDLE") || fx::lowering::cuda_toolkit_path().empty())) {
  const std::string dir = std::string(setting("FLUXION_TEST_GPU_BUNDLE")) + "/check";
  std::filesystem::create_directories(dir);
  std::ofstream cases(dir + "/cases.txt");
  std::set<std::string> names;
  int n = 0, composed = 0;
  for_each_check(every(), [&](const std::string& what, const fx::Program& p, const std::vector<fx::Array>& args,
                              const auto&, const Tolerance&) {
    CAPTURE(what);
    CHECK_MESSAGE(names.insert(what).second, "two cases are called " << what);
    gpu_bundle::write_case(dir + "/" + std::to_string(n), p, args, /*with_data=*/true);
    cases << n++ << " " << what << "\n";
    composed += what.rfind("composed:", 0) == 0;
  });
  MESSAGE(n << " programs written to " << dir << " (" << composed << " of composed transforms)");
  CHECK(composed == int(gpu_bundle::composed_cases().size()));
}

TEST_CASE("gpu bundle: a GPU's outputs of the check match eager results on the CPU" *
          doctest::skip(!setting("FLUXION_TEST_GPU_RESULTS"))) {
  const std::string dir = setting("FLUXION_TEST_GPU_RESULTS");
  std::map<std::string, gpu_bundle::Result> results = gpu_bundle::read_results(dir);
  REQUIRE_MESSAGE(!results.empty(), dir << " has no cases.txt (the runner's results directory)");
  const size_t total = results.size();
  int passed = 0;
  for_each_check(1, [&](const std::string& what, const fx::Program& p, const std::vector<fx::Array>&,
                        const std::function<std::vector<fx::Array>()>& eager, const Tolerance& tol) {
    auto r = results.find(what);
    if (r == results.end()) return;  // not in this bundle (CI's subset)
    const gpu_bundle::Result result = r->second;
    results.erase(r);
    CAPTURE(what);
    if (result.status != "ok") {
      FAIL_CHECK("case " << result.n << ": " << result.status);
      return;
    }
    const std::vector<fx::Array> want = eager();
    REQUIRE(want.size() == p.outvars.size());
    int wrong = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const fx::Array got = gpu_bundle::read_output(dir, result.n, i, p.aval(p.outvars[i]));
      const std::vector<double> g = to_host(got).data, w = to_host(want[i]).data;
      for (size_t k = 0; k < g.size(); ++k)
        if (!close(g[k], w[k], tol) && ++wrong <= 3)
          FAIL_CHECK("output " << i << " element " << k << ": " << g[k] << " on the GPU, " << w[k] << " eager");
    }
    passed += wrong == 0;
  });
  for (const auto& [what, r] : results) FAIL_CHECK("case " << r.n << " (" << what << ") is not one this build makes");
  MESSAGE(passed << " of " << total << " programs match");
  CHECK(size_t(passed) == total);
}

}  // namespace optable
