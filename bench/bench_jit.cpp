// Benchmarks of fx::jit with their baselines measured in the same run (best of N wall-clock runs;
// this file is compiled with -O3 -march=native -ffast-math, so the hand loops are the fast-math
// baselines the targets name). Run: build/bench/fluxion_bench_jit [repeats [section...]], sections
// matmul bf16 softmax mlp batchnorm fused rowsum softplus cumsum call compile (all when none is named).
#include <fluxion.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <source_location>
#include <thread>
#include <vector>

#include <unistd.h>

#include "lowering/target.h"
#include "models.h"
#include "compile/compile_cache.h"
#include "kernels/matmul.h"

// Eigen is the baseline of the matmul and MLP benchmarks (this file is built -march=native).
#include <eigen3/Eigen/Core>

#include "bench/timing.h"

namespace fx = fluxion;
using Clock = std::chrono::steady_clock;

namespace {

int g_repeats = 10;

double best_ms(const std::function<void()>& f) { return fluxion_bench::best_ms(f, g_repeats); }

// Runs body(lo, hi) over [0, n) on `threads` std::threads.
void parallel(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  if (threads <= 1) return body(0, n);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(body, n * t / threads, n * (t + 1) / threads);
  for (auto& t : ts) t.join();
}

fx::Array filled(fx::Shape s, float lo, float hi) {
  fx::Array a = fx::zeros(s, fx::float32);
  float* p = static_cast<float*>(const_cast<void*>(a.data()));
  const int64_t n = a.size();
  for (int64_t i = 0; i < n; ++i) p[i] = lo + (hi - lo) * float((i * 7919) % 10007) / 10007.f;
  return a;
}

float* ptr(const fx::Array& a) { return static_cast<float*>(const_cast<void*>(a.data())); }

bool want(int argc, char** argv, const char* section) {
  if (argc <= 2) return true;
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], section) == 0) return true;
  return false;
}

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapMat = Eigen::Map<RowMat>;

// Eigen by hand, one thread, for a runtime::Matmul's operands (either orientation, batched).
template <class T>
void hand_matmul(const fx::runtime::Matmul& mm) {
  using Row = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Col = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  for (int64_t i = 0; i < mm.batch; ++i) {
    const T* x = static_cast<const T*>(mm.lhs) + i * mm.m * mm.k;
    const T* y = static_cast<const T*>(mm.rhs) + i * mm.k * mm.n;
    Eigen::Map<Row> z(static_cast<T*>(mm.out) + i * mm.m * mm.n, mm.m, mm.n);
    if (!mm.trans_lhs && !mm.trans_rhs) z.noalias() = Eigen::Map<const Row>(x, mm.m, mm.k) * Eigen::Map<const Row>(y, mm.k, mm.n);
    else if (mm.trans_lhs && !mm.trans_rhs) z.noalias() = Eigen::Map<const Col>(x, mm.m, mm.k) * Eigen::Map<const Row>(y, mm.k, mm.n);
    else if (!mm.trans_lhs) z.noalias() = Eigen::Map<const Row>(x, mm.m, mm.k) * Eigen::Map<const Col>(y, mm.k, mm.n);
    else z.noalias() = Eigen::Map<const Col>(x, mm.m, mm.k) * Eigen::Map<const Col>(y, mm.k, mm.n);
  }
}

using bench::Gmm;
using bench::Mlp;
using bench::gmm_loglik;
using bench::mlp_loss;

// Matrix products: the jit's dot_general (a library call into runtime::matmul) against that
// library called directly (the same Eigen build, the one for the compile target's x86-64 level)
// and against Eigen written by hand in this file (-march=native, one thread); the generated
// contraction for the square shapes. Shapes: 512^3 and 1024^3; 512 x 521 x 512, a prime K the
// generated code's cache tiles leave untiled; the MLP's products (forward x w1 and h w2, backward
// x^T dh, dl w2^T and h^T dl); a batch of small products. Times are best of g_repeats, ratios are
// speeds (baseline time / jit time).
struct MatmulShape {
  const char* what;
  int64_t batch, m, k, n;
  bool trans_lhs, trans_rhs, f64, generated;
};

void bench_matmul(int threads) {
  const MatmulShape shapes[] = {
      {"512^3", 1, 512, 512, 512, false, false, false, true},
      {"1024^3", 1, 1024, 1024, 1024, false, false, false, true},
      {"512x521x512", 1, 512, 521, 512, false, false, false, true},
      {"512^3 f64", 1, 512, 512, 512, false, false, true, false},
      {"mlp x w1 256x784x512", 1, 256, 784, 512, false, false, false, false},
      {"mlp x^T dh 784x256x512", 1, 784, 256, 512, true, false, false, false},
      {"mlp h w2 256x512x10", 1, 256, 512, 10, false, false, false, false},
      {"mlp dl w2^T 256x10x512", 1, 256, 10, 512, false, true, false, false},
      {"mlp h^T dl 512x256x10", 1, 512, 256, 10, true, false, false, false},
      {"batch 64 x 32x48x40", 64, 32, 48, 40, false, false, false, false},
  };
  const int level = fx::lowering::cpu_target().isa_level;
  std::printf("matmul, ms (library: runtime::matmul by %s; T = %d threads; speed ratios)\n",
              fx::runtime::matmul_implementation(level).c_str(), threads);
  std::printf("  %-24s %8s %8s %8s %8s %8s %7s %7s %7s\n", "shape", "Eigen 1t", "lib 1t", "lib Tt", "jit 1t", "jit Tt",
              "jit/lib", "Tt/Eig", "GFLOP/s");
  for (const MatmulShape& s : shapes) {
    const fx::DType d = s.f64 ? fx::float64 : fx::float32;
    const fx::Shape ls = s.trans_lhs ? fx::Shape{s.k, s.m} : fx::Shape{s.m, s.k};
    const fx::Shape rs = s.trans_rhs ? fx::Shape{s.n, s.k} : fx::Shape{s.k, s.n};
    auto batched = [&](const fx::Shape& x) { return s.batch > 1 ? fx::Shape{s.batch, x[0], x[1]} : x; };
    fx::Array a = fx::astype(filled(batched(ls), -1, 1), d), b = fx::astype(filled(batched(rs), -1, 1), d);
    const bool tl = s.trans_lhs, tr = s.trans_rhs;
    const int64_t nb = s.batch > 1 ? 1 : 0;  // a transposed operand contracts its first matrix dim
    const fx::Params dims{{"lhs_batch", nb ? fx::IntList{0} : fx::IntList{}},
                          {"rhs_batch", nb ? fx::IntList{0} : fx::IntList{}},
                          {"lhs_contracting", fx::IntList{tl ? nb : nb + 1}},
                          {"rhs_contracting", fx::IntList{tr ? nb + 1 : nb}}};
    fx::Program p = fx::make_ir([&dims](const fx::Array& x, const fx::Array& y) {
      return fx::bind1(fx::Prim::dot_general, {x, y}, dims, std::source_location::current());
    })(a, b);
    std::vector<fx::Array> args{a, b};
    auto time_jit = [&](const char* path, int thr) {
      fx::runtime::CompileTarget dev = fx::runtime::default_target();
      dev.matmul = path;
      dev.num_threads = thr;
      auto exe = fx::runtime::compile(p, dev);
      std::vector<fx::Array> out = exe->run(args);
      return best_ms([&] { out = exe->run(args); });
    };
    fx::Array c = fx::zeros(batched(fx::Shape{s.m, s.n}), d);
    fx::runtime::Matmul mm{s.f64, s.batch, s.m, s.n, s.k, tl, tr, a.data(), b.data(), const_cast<void*>(c.data())};
    auto time_library = [&](int thr) { return best_ms([&] { fx::runtime::matmul(mm, level, thr); }); };
    const double jit1 = time_jit("auto", 1), jit_t = time_jit("auto", threads);
    const double lib1 = time_library(1), lib_t = time_library(threads);
    const double hand = s.f64 ? best_ms([&] { hand_matmul<double>(mm); }) : best_ms([&] { hand_matmul<float>(mm); });
    const double gflop = 2.0 * double(s.batch * s.m * s.k * s.n) / 1e9;
    std::printf("  %-24s %8.3f %8.3f %8.3f %8.3f %8.3f %6.2fx %6.2fx %7.0f\n", s.what, hand, lib1, lib_t, jit1, jit_t,
                lib_t / jit_t, hand / jit_t, gflop / jit_t * 1e3);
    if (s.generated)
      std::printf("  %-24s generated code: 1 thread %.3f ms, %d threads %.3f ms\n", "", time_jit("generated", 1), threads,
                  time_jit("generated", threads));
  }
  std::printf("\n");
}

// bfloat16 products: runtime::matmul on bfloat16 operands (the AVX512-BF16 kernel where the CPU
// and the compile target have it), against the widening path on the same operands and the float32
// product of the same shape, all at the compile target's level, 1 and T threads. Shapes: the
// squares, a ResNet-18 3x3 convolution's im2col product in each of its forms (256 channels at
// 8x8 over a batch of 16: 256 x 2304 x 1024 forward; 64 channels at 32x32 over a batch of 8:
// 64 x 576 x 8192), and the MLP's first layer.
void bench_matmul_bf16(int threads) {
  struct Shape {
    const char* what;
    int64_t m, k, n;
  };
  const Shape shapes[] = {{"512^3", 512, 512, 512},          {"1024^3", 1024, 1024, 1024},
                          {"conv 256x2304x1024", 256, 2304, 1024}, {"conv 64x576x8192", 64, 576, 8192},
                          {"mlp 256x784x512", 256, 784, 512}};
  const int level = fx::lowering::cpu_target().isa_level;
  std::printf("bf16 matmul, ms (bf16: runtime::matmul, %s; widened: the float32 path on widened copies; f32: "
              "float32 operands; T = %d threads)\n",
              fx::runtime::native_bf16_for(level) ? "AVX512-BF16 kernel" : "widened (no AVX512-BF16 for this target)",
              threads);
  std::printf("  %-20s %8s %8s %8s %8s %8s %8s %9s %9s %7s\n", "shape", "bf16 1t", "f32 1t", "bf16 Tt", "wide Tt",
              "f32 Tt", "bf16/f32", "bf16/wide", "GFLOP/s", "");
  for (const Shape& s : shapes) {
    const fx::Array a32 = filled({s.m, s.k}, -1, 1), b32 = filled({s.k, s.n}, -1, 1);
    const fx::Array a = fx::astype(a32, fx::bfloat16), b = fx::astype(b32, fx::bfloat16);
    fx::Array c = fx::zeros({s.m, s.n}, fx::float32);
    fx::runtime::Matmul bf{false, 1, s.m, s.n, s.k, false, false, a.data(), b.data(), const_cast<void*>(c.data()), fx::bfloat16};
    fx::runtime::Matmul f32{false, 1, s.m, s.n, s.k, false, false, a32.data(), b32.data(), const_cast<void*>(c.data())};
    auto time = [&](const fx::runtime::Matmul& mm, int thr) { return best_ms([&] { fx::runtime::matmul(mm, level, thr); }); };
    const double bf1 = time(bf, 1), f1 = time(f32, 1), bft = time(bf, threads), ft = time(f32, threads);
    const double wt = best_ms([&] { fx::runtime::matmul_widened(bf, level, threads); });
    std::printf("  %-20s %8.3f %8.3f %8.3f %8.3f %8.3f %7.2fx %8.2fx %9.0f\n", s.what, bf1, f1, bft, wt, ft, ft / bft,
                wt / bft, 2.0 * double(s.m * s.k * s.n) / 1e6 / bft);
  }
  std::printf("\n");
}

void bench_softmax(int threads) {
  const int64_t R = 4096, C = 4096;
  fx::Array m = filled({R, C}, -4, 4);
  auto f = fx::jit([](const fx::Array& m) { return fx::nn::softmax(m, -1); });
  fx::Array s = f(m);
  const double jit_ms = best_ms([&] { s = f(m); });
  std::vector<float> out(size_t(R * C));
  const float* pm = ptr(m);
  auto hand = [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* row = pm + r * C;
      float* o = out.data() + r * C;
      float mx = row[0];
      for (int64_t j = 1; j < C; ++j) mx = std::max(mx, row[j]);
      float sum = 0;
      for (int64_t j = 0; j < C; ++j) sum += (o[j] = std::exp(row[j] - mx));
      const float inv = 1.f / sum;
      for (int64_t j = 0; j < C; ++j) o[j] *= inv;
    }
  };
  const double hand_ms = best_ms([&] { parallel(threads, R, hand); });
  const double hand1_ms = best_ms([&] { hand(0, R); });
  float err = 0;
  for (int64_t i = 0; i < R * C; i += 101) err = std::max(err, std::fabs(ptr(s)[i] - out[size_t(i)]) / out[size_t(i)]);
  std::printf("softmax over rows of 4096x4096 f32\n");
  std::printf("  jit                               %8.2f ms\n", jit_ms);
  std::printf("  hand 3-pass loop -ffast-math, %d thr %6.2f ms  jit is %.2fx of it (target >= 0.9)\n", threads, hand_ms,
              hand_ms / jit_ms);
  std::printf("  hand 3-pass loop, 1 thread        %8.2f ms\n", hand1_ms);
  std::printf("  max relative difference: %.2e\n\n", err);
}

// The hand-written training step: forward, backward and SGD in place, Eigen, one thread.
struct HandMlp {
  RowMat w1, w2, x, y, h, logits, dl, dh, gw1, gw2;
  Eigen::RowVectorXf b1, b2, gb1, gb2;
  float step(float lr) {
    const float batch = float(x.rows());
    h.noalias() = x * w1;
    h.rowwise() += b1;
    h = h.cwiseMax(0.f);
    logits.noalias() = h * w2;
    logits.rowwise() += b2;
    float loss = 0;
    for (int64_t r = 0; r < logits.rows(); ++r) {  // log_softmax, loss and its gradient, row by row
      const float mx = logits.row(r).maxCoeff();
      const float lse = mx + std::log((logits.row(r).array() - mx).exp().sum());
      for (int64_t j = 0; j < logits.cols(); ++j) {
        const float logp = logits(r, j) - lse;
        loss -= logp * y(r, j);
        dl(r, j) = (std::exp(logp) - y(r, j)) / batch;
      }
    }
    gw2.noalias() = h.transpose() * dl;
    gb2 = dl.colwise().sum();
    dh.noalias() = dl * w2.transpose();
    dh = (h.array() > 0.f).select(dh, 0.f);
    gw1.noalias() = x.transpose() * dh;
    gb1 = dh.colwise().sum();
    w1 -= lr * gw1;
    b1 -= lr * gb1;
    w2 -= lr * gw2;
    b2 -= lr * gb2;
    return loss / batch;
  }
};

void bench_mlp(int threads) {
  auto k = fx::random::key(0);
  Mlp p{fx::random::normal(fx::random::fold_in(k, 1), {784, 512}) * 0.05f, fx::zeros({512}),
        fx::random::normal(fx::random::fold_in(k, 2), {512, 10}) * 0.05f, fx::zeros({10})};
  fx::Array x = fx::random::normal(fx::random::fold_in(k, 3), {256, 784});
  fx::Array y = fx::nn::one_hot(fx::random::randint(fx::random::fold_in(k, 4), {256}, 0, 10), 10);
  auto step_fn = [](const Mlp& p, const fx::Array& x, const fx::Array& y) {
    auto [loss, g] = fx::value_and_grad(mlp_loss)(p, x, y);
    const float lr = 0.01f;
    return std::make_tuple(loss, Mlp{p.w1 - lr * g.w1, p.b1 - lr * g.b1, p.w2 - lr * g.w2, p.b2 - lr * g.b2});
  };
  // Compile time: the step's program compiled from scratch (a fresh fingerprint via the device).
  fx::Program prog = fx::make_ir(step_fn)(p, x, y);
  std::vector<double> compile_ms;
  double lower = 0, passes = 0, llvm = 0;
  for (int i = 0; i < 5; ++i) {
    fx::runtime::CompileTarget dev = fx::runtime::default_target();
    dev.label = "cpu-compile-" + std::to_string(i);
    auto t = Clock::now();
    auto exe = fx::runtime::compile(prog, dev);
    compile_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    lower = exe->lower_ms(), passes = exe->passes_ms(), llvm = exe->llvm_ms();
  }
  std::sort(compile_ms.begin(), compile_ms.end());
  // The same compile served by the on-disk cache (FLUXION_CACHE_DIR) after the in-memory one is cleared.
  double disk_ms = 0, disk_llvm = 0;
  {
    const std::string dir = "/tmp/fluxion_bench_cache_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    setenv("FLUXION_CACHE_DIR", dir.c_str(), 1);
    fx::runtime::CompileTarget dev = fx::runtime::default_target();
    dev.label = "cpu-disk";
    fx::runtime::compile(prog, dev);
    fx::runtime::clear_cache();
    auto t = Clock::now();
    auto exe = fx::runtime::compile(prog, dev);
    disk_ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    disk_llvm = exe->llvm_ms();
    if (!exe->from_disk_cache()) std::printf("  (the on-disk cache missed)\n");
    unsetenv("FLUXION_CACHE_DIR");
    std::filesystem::remove_all(dir);
  }
  auto step = fx::jit(step_fn);
  auto t0 = Clock::now();
  auto [loss, q] = step(p, x, y);
  const double first_call = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double jit_ms = best_ms([&] { std::tie(loss, q) = step(p, x, y); });

  HandMlp h;
  h.w1 = MapMat(ptr(p.w1), 784, 512);
  h.w2 = MapMat(ptr(p.w2), 512, 10);
  h.x = MapMat(ptr(x), 256, 784);
  h.y = MapMat(ptr(y), 256, 10);
  h.b1 = Eigen::RowVectorXf::Zero(512);
  h.b2 = Eigen::RowVectorXf::Zero(10);
  h.h.resize(256, 512), h.logits.resize(256, 10), h.dl.resize(256, 10), h.dh.resize(256, 512);
  const RowMat w1_0 = h.w1, w2_0 = h.w2;
  const float hand_loss = h.step(0.01f);
  const float dw = (h.w1 - MapMat(ptr(q.w1), 784, 512)).cwiseAbs().maxCoeff();
  const double hand_ms = best_ms([&] {
    h.w1 = w1_0, h.w2 = w2_0;  // same starting point each time (a copy of 1.6 MB, included)
    h.step(0.01f);
  });
  std::printf("2-layer MLP training step (batch 256, 784-512-10: forward, value_and_grad, SGD) under jit\n");
  std::printf("  compile (trace excluded): median %.1f ms (target <= 150 ms): MLIR build %.1f, passes %.1f, LLVM %.1f ms\n",
              compile_ms[compile_ms.size() / 2], lower, passes, llvm);
  std::printf("  compile served by FLUXION_CACHE_DIR: %.1f ms (LLVM %.1f ms of it)\n", disk_ms, disk_llvm);
  std::printf("  first call (trace + grad + compile + run) %.1f ms\n", first_call);
  std::printf("  jit step                          %8.3f ms  (kernel threads %d)\n", jit_ms, threads);
  std::printf("  Eigen hand-written step, 1 thread %8.3f ms  jit is %.2fx of it (target >= 0.8)\n", hand_ms, hand_ms / jit_ms);
  std::printf("  loss jit %.6f vs hand %.6f; max |w1 difference| %.2e\n\n", double(loss.item<float>()), double(hand_loss), double(dw));

  // Gradient-to-forward time ratios under jit.
  auto fwd = fx::jit(mlp_loss);
  auto vg = fx::jit(fx::value_and_grad(mlp_loss));
  fx::Array l = fwd(p, x, y);
  auto r = vg(p, x, y);
  const double fwd_ms = best_ms([&] { l = fwd(p, x, y); });
  const double vg_ms = best_ms([&] { r = vg(p, x, y); });
  auto kg = fx::random::key(1);
  Gmm g{fx::random::normal(fx::random::fold_in(kg, 1), {25}), fx::random::normal(fx::random::fold_in(kg, 2), {25, 10}),
        fx::random::normal(fx::random::fold_in(kg, 3), {25, 10}) * 0.1f};
  fx::Array gx = fx::random::normal(fx::random::fold_in(kg, 4), {1000, 10});
  auto gfwd = fx::jit(gmm_loglik);
  auto gvg = fx::jit(fx::value_and_grad(gmm_loglik));
  fx::Array gl = gfwd(g, gx);
  auto gr = gvg(g, gx);
  const double gfwd_ms = best_ms([&] { gl = gfwd(g, gx); });
  const double gvg_ms = best_ms([&] { gr = gvg(g, gx); });
  std::printf("gradient-to-forward time under jit (value_and_grad / forward; target <= 3)\n");
  std::printf("  MLP loss: forward %.3f ms, value_and_grad %.3f ms: ratio %.2f\n", fwd_ms, vg_ms, vg_ms / fwd_ms);
  std::printf("  GMM log-likelihood: forward %.3f ms, value_and_grad %.3f ms: ratio %.2f\n\n", gfwd_ms, gvg_ms, gvg_ms / gfwd_ms);
}

// Batch norm (batch statistics) + ReLU at the shapes of ResNet-18's four stages (batch 128): the
// forward alone, and forward + backward (the gradients of sum(y * dy) with respect to x, scale and
// bias). Time is counted in passes over x -- its bytes read or written once -- timed as half a
// 2-thread memcpy of x in the same run. The least a fused layer can do: forward 3 passes (x read for
// the statistics, read again, y written), with the backward about 6 more (dy and x read for the two
// sums, read again, dx written). In bfloat16 (x, dy, scale and bias, as the ResNet-18 bf16 step
// has them; the statistics accumulate in f32) a pass moves half the bytes.
void bench_batchnorm(int threads, fx::DType dtype) {
  const std::vector<std::vector<int64_t>> shapes{{128, 64, 32, 32}, {128, 128, 16, 16}, {128, 256, 8, 8}, {128, 512, 4, 4}};
  const size_t bytes = dtype == fx::float32 ? 4 : 2;
  std::printf("batch norm + ReLU, training, %s (passes over x: time / half a memcpy of x, same run)\n",
              dtype == fx::float32 ? "f32" : "bf16");
  for (const std::vector<int64_t>& s : shapes) {
    const int64_t c = s[1];
    const fx::Array x = fx::astype(filled(fx::Shape(s), -2, 2), dtype), dy = fx::astype(filled(fx::Shape(s), -1, 1), dtype);
    const fx::Array g = fx::astype(filled({c}, 0.5, 1.5), dtype), b = fx::astype(filled({c}, -0.5, 0.5), dtype);
    const fx::Array rm = fx::zeros({c}, fx::float32), rv = fx::ones({c}, fx::float32);
    auto layer = [rm, rv](const fx::Array& u, const fx::Array& k, const fx::Array& o) {
      return fx::nn::relu(fx::nn::batch_norm(u, k, o, rm, rv, true).out);
    };
    auto fwd = fx::jit(layer);
    auto both = fx::jit([layer](const std::vector<fx::Array>& p, const fx::Array& t) {
      return fx::grad([&](const std::vector<fx::Array>& q) { return fx::sum(layer(q[0], q[1], q[2]) * t); })(p);
    });
    const std::vector<fx::Array> p{x, g, b};
    fx::Array y = fwd(x, g, b);
    std::vector<fx::Array> d = both(p, dy);
    const double fwd_ms = best_ms([&] { y = fwd(x, g, b); });
    const double both_ms = best_ms([&] { d = both(p, dy); });
    const size_t n = size_t(x.size());
    std::vector<char> src(n * bytes, 1), dst(n * bytes, 0);
    const double copy_ms = best_ms([&] {
      parallel(threads, int64_t(n), [&](int64_t lo, int64_t hi) {
        std::memcpy(dst.data() + lo * bytes, src.data() + lo * bytes, size_t(hi - lo) * bytes);
      });
    });
    const double pass = copy_ms / 2;
    std::printf("  [%3lld, %3lld, %2lld, %2lld]  forward %7.2f ms (%4.1f passes)  forward + backward %7.2f ms (%4.1f passes)  memcpy %6.2f ms\n",
                (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3], fwd_ms, fwd_ms / pass, both_ms,
                both_ms / pass, copy_ms);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_repeats = std::max(1, std::atoi(argv[1]));
  const int threads = fx::runtime::default_target().num_threads;
  std::printf("fluxion jit benchmarks: %d kernel threads (FLUXION_NUM_THREADS), best of %d runs\n\n", threads, g_repeats);

  if (argc > 2 && std::strcmp(argv[2], "probe") == 0) {  // per-op costs at the MLP's shapes
    fx::Array a = filled({256, 512}, -1, 1), w = filled({784, 512}, -1, 1), t = filled({512, 784}, -1, 1);
    fx::Array e = filled({256, 784}, -1, 1);
    auto time = [&](const char* what, auto f, auto... xs) {
      auto jf = fx::jit(f);
      auto r = jf(xs...);
      std::printf("  %-40s %8.3f ms\n", what, best_ms([&] { r = jf(xs...); }));
    };
    time("colsum [256,512] axis 0", [](const fx::Array& x) { return fx::sum(x, {0}); }, a);
    time("rowsum [256,512] axis 1", [](const fx::Array& x) { return fx::sum(x, {1}); }, a);
    time("sum(transpose [512,784], axis 1)", [](const fx::Array& x) { return fx::sum(fx::transpose(x), {1}); }, t);
    time("transpose [512,784]", [](const fx::Array& x) { return fx::transpose(x); }, t);
    time("w - 0.01 t^T [784,512]", [](const fx::Array& w, const fx::Array& x) { return w - 0.01f * fx::transpose(x); }, w, t);
    time("relu grad select chain [256,512]", [](const fx::Array& x) { return fx::where(x > 0.f, 1.f, fx::where(x == 0.f, 0.5f, 0.f)) * x; }, a);
    time("matmul e@w [256,784]x[784,512]", [](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y); }, e, w);
    time("matmul e^T@a [784,256]x[256,512]", [](const fx::Array& x, const fx::Array& y) { return fx::matmul(fx::transpose(x), y); }, e, a);
    return 0;
  }
  if (want(argc, argv, "matmul")) bench_matmul(threads);
  if (want(argc, argv, "bf16")) bench_matmul_bf16(threads);
  if (want(argc, argv, "softmax")) bench_softmax(threads);
  if (want(argc, argv, "mlp")) bench_mlp(threads);
  if (want(argc, argv, "batchnorm")) {
    bench_batchnorm(threads, fx::float32);
    bench_batchnorm(threads, fx::bfloat16);
  }

  // ---- fused y = sin(a*b) + exp(c), 16M f32 -------------------------------------------------------
  if (want(argc, argv, "fused")) {
    const int64_t n = int64_t(16) << 20;
    fx::Array a = filled({n}, -3, 3), b = filled({n}, 0.5, 2), c = filled({n}, -4, 2);
    auto f = fx::jit([](const fx::Array& a, const fx::Array& b, const fx::Array& c) { return fx::sin(a * b) + fx::exp(c); });
    fx::Array y = f(a, b, c);
    double jit_ms = best_ms([&] { y = f(a, b, c); });
    std::vector<float> out(static_cast<size_t>(n)), src(static_cast<size_t>(2 * n)), dst(static_cast<size_t>(2 * n));
    std::memset(src.data(), 1, src.size() * 4);
    std::memset(dst.data(), 1, dst.size() * 4);
    double memcpy_ms = best_ms([&] {
      parallel(threads, 2 * n, [&](int64_t lo, int64_t hi) { std::memcpy(dst.data() + lo, src.data() + lo, size_t(hi - lo) * 4); });
    });
    const float *pa = ptr(a), *pb = ptr(b), *pc = ptr(c);
    float* po = out.data();
    auto hand = [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = std::sin(pa[i] * pb[i]) + std::exp(pc[i]);
    };
    double hand_ms = best_ms([&] { parallel(threads, n, hand); });
    double hand1_ms = best_ms([&] { hand(0, n); });
    float err = 0;
    const float* py = ptr(y);
    for (int64_t i = 0; i < n; i += 997) err = std::max(err, std::fabs(py[i] - po[i]) / std::max(1.f, std::fabs(po[i])));
    std::printf("fused sin(a*b)+exp(c), 16M f32 (256 MiB of traffic)\n");
    std::printf("  jit                              %8.2f ms  (%.1f GB/s)\n", jit_ms, 4.0 * n * 4 / jit_ms / 1e6);
    std::printf("  memcpy of the same bytes         %8.2f ms  jit reaches %.2fx of memcpy (target >= 0.75)\n", memcpy_ms,
                memcpy_ms / jit_ms);
    std::printf("  hand loop -O3 -ffast-math, %d thr %8.2f ms  jit is %.2fx faster (target > 1)\n", threads, hand_ms,
                hand_ms / jit_ms);
    std::printf("  hand loop, 1 thread              %8.2f ms\n", hand1_ms);
    std::printf("  max relative difference jit vs hand: %.2e\n\n", err);
  }

  // ---- row sums of 4096 x 4096 f32 ----------------------------------------------------------------
  if (want(argc, argv, "rowsum")) {
    const int64_t R = 4096, C = 4096;
    fx::Array m = filled({R, C}, -1, 1);
    auto f = fx::jit([](const fx::Array& m) { return fx::sum(m, {1}); });
    fx::Array s = f(m);
    double jit_ms = best_ms([&] { s = f(m); });
    std::vector<float> out(static_cast<size_t>(R));
    const float* pm = ptr(m);
    auto hand = [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        float acc = 0;
        const float* row = pm + r * C;
        for (int64_t j = 0; j < C; ++j) acc += row[j];
        out[size_t(r)] = acc;
      }
    };
    double hand_ms = best_ms([&] { parallel(threads, R, hand); });
    double hand1_ms = best_ms([&] { hand(0, R); });
    float err = 0;
    for (int64_t r = 0; r < R; ++r) err = std::max(err, std::fabs(ptr(s)[r] - out[size_t(r)]));
    std::printf("row sums 4096x4096 f32 (64 MiB)\n");
    std::printf("  jit                              %8.2f ms  (%.1f GB/s)\n", jit_ms, double(R * C * 4) / jit_ms / 1e6);
    std::printf("  hand loop -O3 -ffast-math, %d thr %8.2f ms  jit is %.2fx of it (target >= 1.0)\n", threads, hand_ms,
                hand_ms / jit_ms);
    std::printf("  hand loop, 1 thread              %8.2f ms\n", hand1_ms);
    std::printf("  max abs difference: %.2e\n\n", err);
  }

  // ---- softplus log1p(exp(x)), 16M f32: a function without a polynomial (glibc's vector libm) ----
  if (want(argc, argv, "softplus")) {
    const int64_t n = int64_t(16) << 20;
    fx::Array x = filled({n}, -20, 20);
    auto f = fx::jit([](const fx::Array& x) { return fx::log1p(fx::exp(x)); });
    fx::Array y = f(x);
    double jit_ms = best_ms([&] { y = f(x); });
    std::vector<float> out(static_cast<size_t>(n));
    const float* px = ptr(x);
    auto hand = [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[size_t(i)] = std::log1p(std::exp(px[i]));
    };
    double hand_ms = best_ms([&] { parallel(threads, n, hand); });
    float err = 0;
    for (int64_t i = 0; i < n; i += 997) err = std::max(err, std::fabs(ptr(y)[i] - out[size_t(i)]) / std::max(1.f, out[size_t(i)]));
    // The same in f64 (libmvec's f64 variants; before, one libm call per element).
    fx::Array x64 = fx::astype(x, fx::float64);
    fx::Array y64 = f(x64);
    double jit64_ms = best_ms([&] { y64 = f(x64); });
    std::vector<double> out64(static_cast<size_t>(n));
    const double* px64 = static_cast<const double*>(x64.data());
    double hand64_ms = best_ms([&] {
      parallel(threads, n, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) out64[size_t(i)] = std::log1p(std::exp(px64[i]));
      });
    });
    std::printf("softplus log1p(exp(x)), 16M elements\n");
    std::printf("  jit, f32                         %8.2f ms\n", jit_ms);
    std::printf("  hand loop -O3 -ffast-math, %d thr %8.2f ms  jit is %.2fx of it\n", threads, hand_ms, hand_ms / jit_ms);
    std::printf("  jit, f64                         %8.2f ms\n", jit64_ms);
    std::printf("  hand loop f64, %d thr             %8.2f ms  jit is %.2fx of it\n", threads, hand64_ms, hand64_ms / jit64_ms);
    std::printf("  max relative difference (f32): %.2e\n\n", err);
  }

  // ---- cumsum along axis 0 of f32[4096, 1024]: lines side by side as vectors ---------------------
  if (want(argc, argv, "cumsum")) {
    const int64_t R = 4096, C = 1024;
    fx::Array m = filled({R, C}, -1, 1);
    auto f = fx::jit([](const fx::Array& m) { return fx::cumsum(m, 0); });
    fx::Array y = f(m);
    double jit_ms = best_ms([&] { y = f(m); });
    std::vector<float> out(static_cast<size_t>(R * C));
    const float* pm = ptr(m);
    auto hand = [&](int64_t lo, int64_t hi) {  // column blocks; each column summed in f64 like the reference
      std::vector<double> acc(static_cast<size_t>(hi - lo));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = lo; j < hi; ++j) {
          acc[size_t(j - lo)] += pm[r * C + j];
          out[size_t(r * C + j)] = float(acc[size_t(j - lo)]);
        }
    };
    double hand_ms = best_ms([&] { parallel(threads, C, hand); });
    float err = 0;
    for (int64_t i = 0; i < R * C; i += 997) err = std::max(err, std::fabs(ptr(y)[i] - out[size_t(i)]));
    std::printf("cumsum along axis 0, f32[4096,1024]\n");
    std::printf("  jit                              %8.2f ms\n", jit_ms);
    std::printf("  hand loop -O3 -ffast-math, %d thr %8.2f ms  jit is %.2fx of it\n", threads, hand_ms, hand_ms / jit_ms);
    std::printf("  max abs difference: %.2e\n\n", err);
  }

  // ---- cached call of a tiny function -------------------------------------------------------------
  if (want(argc, argv, "call")) {
    fx::Array x = filled({8}, -1, 1);
    auto f = fx::jit([](const fx::Array& x) { return fx::sin(x) * 2.f + 1.f; });
    fx::Array y = f(x);
    const int calls = 200000;
    double jit_us = best_ms([&] {
                      for (int i = 0; i < calls; ++i) y = f(x);
                    }) * 1e3 / calls;
    double alloc_us = best_ms([&] {
                        for (int i = 0; i < calls; ++i) y = fx::zeros({8}, fx::float32);
                      }) * 1e3 / calls;
    std::printf("cached call, 3 ops on f32[8]\n");
    std::printf("  jit call                         %8.3f us  (target <= 0.3 us; JAX ~7 us)\n", jit_us);
    std::printf("  allocating one f32[8] Array      %8.3f us\n\n", alloc_us);
  }

  // ---- compile time -------------------------------------------------------------------------------
  if (want(argc, argv, "compile")) {
    const int n = 20;
    std::vector<double> ms;
    double lower = 0, passes = 0, llvm = 0;
    for (int i = 0; i < n; ++i) {
      // A distinct literal per function, so each one is a new fingerprint and really compiles.
      fx::Program p = fx::make_ir([i](const fx::Array& x) { return x * float(i + 2); })(filled({1024}, 0, 1));
      auto t = Clock::now();
      auto exe = fx::runtime::compile(p);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
      lower += exe->lower_ms(), passes += exe->passes_ms(), llvm += exe->llvm_ms();
    }
    std::sort(ms.begin(), ms.end());
    std::printf("compile time of a one-op function (f32[1024] * c), %d compiles\n", n);
    std::printf("  median %.2f ms, best %.2f ms (target <= 10 ms); mean split: build MLIR %.2f, passes %.2f, LLVM %.2f ms\n",
                ms[ms.size() / 2], ms[0], lower / n, passes / n, llvm / n);
  }
  return 0;
}
