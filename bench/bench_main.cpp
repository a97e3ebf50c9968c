// Runs the benchmarks, then prints each one against its baseline (measured in the same run) and
// against its target, so a reader sees at once what met its target and what missed.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

namespace {

// Collects each benchmark's CPU time per iteration, in nanoseconds. CPU time rather than wall time:
// every benchmark here is single-threaded, and on a shared machine wall time also counts the time
// the process waited for a core.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (!r.error_occurred && r.run_type == Run::RT_Iteration)
        ns[r.benchmark_name()] = r.GetAdjustedCPUTime() / benchmark::GetTimeUnitMultiplier(r.time_unit) * 1e9;
    ConsoleReporter::ReportRuns(runs);
  }
};

const char* verdict(bool met) { return met ? "MET" : "MISSED"; }

void summarize(const std::map<std::string, double>& ns) {
  auto has = [&](const char* k) { return ns.count(k) != 0; };
  std::printf("\n==== summary: CPU time per iteration; baselines measured in the same run ====\n");
  if (has("eager_add_f32x4") && has("baseline_hand_add_f32x4") && has("baseline_new_array_f32x4")) {
    double op = ns.at("eager_add_f32x4"), hand = ns.at("baseline_hand_add_f32x4"), alloc = ns.at("baseline_new_array_f32x4");
    std::printf("(a) eager a + b, f32[4]:       %8.3f us/op   target <= 0.5 us   %s\n", op / 1e3, verdict(op <= 500));
    std::printf("    hand loop + std::vector:   %8.3f us      (op / hand = %.1fx)\n", hand / 1e3, op / hand);
    std::printf("    new concrete Array alone:  %8.3f us      (op / new Array = %.1fx)\n", alloc / 1e3, op / alloc);
  }
  if (has("trace_chain_10k") && has("baseline_build_program_10k")) {
    double per = ns.at("trace_chain_10k") / 10000, base = ns.at("baseline_build_program_10k") / 10000;
    std::printf("(b) make_ir, 10,000-eqn chain: %8.3f us/eqn  target <= 1 us     %s\n", per / 1e3, verdict(per <= 1000));
    std::printf("    Program built directly:    %8.3f us/eqn  (trace / direct = %.1fx)\n", base / 1e3, per / base);
  }
  if (has("eager_fma_16m") && has("baseline_hand_fma_16m")) {
    double fx = ns.at("eager_fma_16m"), hand = ns.at("baseline_hand_fma_16m");
    std::printf("(c) a*b + c, 16M f32:          %8.2f ms      hand loop %.2f ms   throughput %.2fx of hand   target >= 0.8x   %s\n",
                fx / 1e6, hand / 1e6, hand / fx, verdict(hand / fx >= 0.8));
    if (has("baseline_hand_two_pass_fma_16m")) {
      double two = ns.at("baseline_hand_two_pass_fma_16m");
      std::printf("    hand loop, unfused (2 passes, 2 fresh buffers): %.2f ms   eager is %.2fx of it\n", two / 1e6, two / fx);
    }
  }
  if (has("eager_sin_16m") && has("baseline_hand_sin_16m")) {
    double fx = ns.at("eager_sin_16m"), hand = ns.at("baseline_hand_sin_16m");
    std::printf("    sin, 16M f32:              %8.2f ms      hand loop %.2f ms   throughput %.2fx of hand   target >= 0.8x   %s\n",
                fx / 1e6, hand / 1e6, hand / fx, verdict(hand / fx >= 0.8));
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  summarize(reporter.ns);
  return 0;
}
