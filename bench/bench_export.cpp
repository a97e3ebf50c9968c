// An exported function against the jit (issue 16's target: the exported MLP inference runs from a
// C program with no LLVM/MLIR loaded at >= 1.0x the jit's speed). The MLP 784-512-10 (relu,
// softmax), batch 256, f32, with its weights closed over: exported with fx::export_, linked into a
// C driver with libfluxion_aot_rt.a only, which times its own calls; the jit's calls are timed here,
// in the same run, on the same input.
//
//   build/bench/fluxion_bench_export [repetitions]
#include <fluxion.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

namespace fx = fluxion;

namespace {

constexpr int64_t kBatch = 256, kIn = 784, kHidden = 512, kOut = 10;

// The C driver: the best per-call time of `reps` rounds of `calls` calls, in microseconds.
const char* kDriver = R"(#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "mlp.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 10, calls = 50;
  float* x = aligned_alloc(64, 256 * 784 * sizeof(float));
  float* y = aligned_alloc(64, 256 * 16 * sizeof(float));
  for (int i = 0; i < 256 * 784; ++i) x[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
  mlp_forward(x, y);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    double t = now();
    for (int c = 0; c < calls; ++c) mlp_forward(x, y);
    t = (now() - t) / calls;
    if (t < best) best = t;
  }
  printf("%.3f %.6f\n", best * 1e6, (double)y[0]);
  return 0;
}
)";

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  for (size_t n; p && (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  if (p && ::pclose(p) != 0) {
    std::fprintf(stderr, "command failed: %s\n%s", cmd.c_str(), out.c_str());
    std::exit(1);
  }
  return out;
}

double jit_us(const fx::Array& x, int reps, const std::function<fx::Array(const fx::Array&)>& f) {
  auto g = fx::jit(f);
  g(x);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t = std::chrono::steady_clock::now();
    for (int c = 0; c < 50; ++c) g(x);
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / 50);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  fx::Array w1 = fx::random::normal(fx::random::key(1), {kIn, kHidden}) * 0.05f, b1 = fx::zeros({kHidden});
  fx::Array w2 = fx::random::normal(fx::random::key(2), {kHidden, kOut}) * 0.05f, b2 = fx::zeros({kOut});
  auto mlp = [&](const fx::Array& x) { return fx::nn::softmax(fx::matmul(fx::nn::relu(fx::matmul(x, w1) + b1), w2) + b2); };
  std::vector<float> xs(size_t(kBatch * kIn));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float((i * 37) % 101) / 101.0f - 0.5f;
  fx::Array x = fx::array(xs, fx::Shape{kBatch, kIn});

  const auto dir = std::filesystem::temp_directory_path() / ("fluxion-bench-export-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  fx::Exported e = fx::export_(mlp, x.aval());
  e.write_header((dir / "mlp.h").string(), "mlp_forward");
  const int threads = fx::runtime::default_target().num_threads;
  e.write_object((dir / "mlp.o").string(), "", threads);
  std::ofstream(dir / "main.c") << kDriver;
  run("cd " + dir.string() + " && cc -O2 -std=c11 main.c mlp.o " FLUXION_AOT_RUNTIME
      " -lstdc++ -lm -lmvec -lpthread -ldl -L" FLUXION_LIBOMP_DIR " -lomp -Wl,-rpath," FLUXION_LIBOMP_DIR " -o mlp");
  const std::string out = run((dir / "mlp").string() + " " + std::to_string(reps));
  const double exported = std::strtod(out.c_str(), nullptr);
  const double first = std::strtod(out.substr(out.find(' ')).c_str(), nullptr);
  const double jitted = jit_us(x, reps, mlp);
  const float want = fx::jit(mlp)(x).to_vector<float>()[0];
  std::filesystem::remove_all(dir);

  std::printf("MLP %lldx%lld-%lld-%lld inference (relu, softmax), f32, best of %d x 50 calls\n", (long long)kBatch,
              (long long)kIn, (long long)kHidden, (long long)kOut, reps);
  std::printf("  jit call (in process, %d kernel threads)     %9.1f us\n", fx::runtime::default_target().num_threads, jitted);
  std::printf("  exported (%d threads), C program, AOT runtime %9.1f us   speed / jit = %.2fx (target >= 1.0x)\n", threads, exported,
              jitted / exported);
  std::printf("  first output: exported %.6f, jit %.6f\n", first, double(want));
  return 0;
}
