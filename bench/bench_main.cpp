// Runs the benchmarks, then prints each one against its baseline (measured in the same run) and
// against its target, so a reader sees at once what met its target and what missed.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

namespace {

// Collects each benchmark's time per iteration, in nanoseconds: CPU time for the single-threaded
// eager benchmarks (on a shared machine wall time also counts waiting for a core), wall time for
// anything compiled by jit, whose kernels run on several threads (CPU time would see one of them).
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (!r.error_occurred && r.run_type == Run::RT_Iteration)
        ns[r.benchmark_name()] = (r.benchmark_name().find("jit") != std::string::npos ? r.GetAdjustedRealTime()
                                                                                       : r.GetAdjustedCPUTime()) /
                                 benchmark::GetTimeUnitMultiplier(r.time_unit) * 1e9;
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
  auto throughput = [&](const char* label, const char* eager, const char* hand_key, bool target) {
    if (!has(eager) || !has(hand_key)) return;
    double fx = ns.at(eager), hand = ns.at(hand_key);
    std::printf("%-34s %8.2f ms   hand loop %7.2f ms   throughput %.2fx of hand", label, fx / 1e6, hand / 1e6, hand / fx);
    if (target)
      std::printf("   target >= 0.8x   %s\n", verdict(hand / fx >= 0.8));
    else
      std::printf("   (no target: eager cannot fuse; jit does)\n");
  };
  auto ratio = [&](const char* label, const char* grad, const char* fwd, double target) {
    if (!has(grad) || !has(fwd)) return;
    double r = ns.at(grad) / ns.at(fwd);
    std::printf("%-34s forward %7.2f ms   value_and_grad %7.2f ms   ratio %.2f   (target under jit: <= %.0f)\n", label,
                ns.at(fwd) / 1e6, ns.at(grad) / 1e6, r, target);
  };
  ratio("(d) MLP 256x784-512-10, eager:", "mlp_value_and_grad", "mlp_forward", 3);
  ratio("    GMM d=10 K=25 n=1000, eager:", "gmm_value_and_grad", "gmm_forward", 3);
  if (has("differentiate_10k"))
    std::printf("(e) trace+grad+simplify, 10k eqns: %7.2f ms   target <= 50 ms   %s\n", ns.at("differentiate_10k") / 1e6,
                verdict(ns.at("differentiate_10k") <= 50e6));
  if (has("per_example_vmap_grad_jit") && has("baseline_per_example_hand_batched_jit")) {
    double v = ns.at("per_example_vmap_grad_jit"), h = ns.at("baseline_per_example_hand_batched_jit");
    std::printf("(f) per-example grads, jit(vmap(grad)) [wall]: %7.2f ms   hand-batched %7.2f ms   %.2fx of it   target >= 0.9x   %s\n",
                v / 1e6, h / 1e6, h / v, verdict(h / v >= 0.9));
    if (has("baseline_per_example_loop_of_jit_grad"))
      std::printf("    loop of 256 jit(grad) calls [wall]:        %7.2f ms   speed-up of vmap over the loop: %.2fx\n",
                  ns.at("baseline_per_example_loop_of_jit_grad") / 1e6, ns.at("baseline_per_example_loop_of_jit_grad") / v);
  }
  if (has("rnn_scan_forward_eager") && has("baseline_rnn_eigen")) {
    // A 1,000-step scan of an RNN cell of width 64 (bench_control.cpp); per step, against the same
    // recurrence hand-written with Eigen (-O3 -march=native -ffast-math, bench/baseline_rnn.cpp).
    double hand = ns.at("baseline_rnn_eigen") / 1000;
    auto per_step = [&](const char* label, const char* key, bool target) {
      if (!has(key)) {
        std::printf("%-34s (not run: see the benchmark's error above)\n", label);
        return;
      }
      double s = ns.at(key) / 1000;
      std::printf("%-34s %8.2f us/step   Eigen %6.2f us/step   %.3fx of it", label, s / 1e3, hand / 1e3, hand / s);
      if (target)
        std::printf("   target >= 0.7x   %s\n", verdict(hand / s >= 0.7));
      else
        std::printf("   (no target: the interpreter)\n");
    };
    per_step("(g) scan RNN w=64, 1000 steps, eager:", "rnn_scan_forward_eager", false);
    per_step("    scan RNN under jit:", "rnn_scan_forward_jit", true);
    if (has("baseline_rnn_hand"))
      std::printf("    (the recurrence as plain loops with std::tanh: %.2f us/step)\n", ns.at("baseline_rnn_hand") / 1e6);
    ratio("    scan RNN grad/forward, eager:", "rnn_scan_value_and_grad_eager", "rnn_scan_forward_eager", 3);
    ratio("    scan RNN grad/forward, jit:", "rnn_scan_value_and_grad_jit", "rnn_scan_forward_jit", 3);
  }
  throughput("(c) a * b, 16M f32 (one op):", "eager_mul_16m", "baseline_hand_mul_16m", true);
  throughput("    sin, 16M f32 (one op):", "eager_sin_16m", "baseline_hand_sin_16m", true);
  throughput("    a*b + c vs a fused hand loop:", "eager_fma_16m", "baseline_hand_fma_16m", false);
  throughput("    a*b + c vs a two-pass hand loop:", "eager_fma_16m", "baseline_hand_two_pass_fma_16m", true);
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
