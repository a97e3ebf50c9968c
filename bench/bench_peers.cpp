// The Fluxion side of the peer table (issue 10): the workloads of bench/peers/peers_jax.py and
// peers_torch.py with the same sizes, dtypes, data (bench/peer_data.h) and semantics, written as a
// user writes them (jit, vmap, grad, jacfwd). Each jit'd function is called once (compile) before
// timing; the best of N wall-clock runs is kept. Prints one JSON line per workload (the schema of
// bench/peers/common.py), which bench/peers/join.py joins with the peers' lines; bench/peers/run.sh
// runs everything. The GradBench-style rows also time their plain C++ loops (baseline_peers.cpp),
// on the kernels' thread count and on one thread.
//   build/bench/fluxion_bench_peers [repeats [group...]]   groups: elementwise models dispatch gradbench conv pool linalg mixed resnet (resnet_f32, resnet_bf16: one precision)
#include <fluxion.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../examples/resnet_model.h"
#include "baseline_peers.h"
#include "models.h"
#include "peer_data.h"
#include "peer_models.h"
#include "compile/compile_cache.h"
#include "compile/target.h"

namespace fx = fluxion;
using namespace bench::peers;
using Clock = std::chrono::steady_clock;

namespace {

int g_repeats = 10;

/// Best of g_repeats runs of `inner` calls of f, in seconds per call.
double best_s(const std::function<void()>& f, int inner = 1) {
  double best = 1e300;
  for (int r = 0; r < g_repeats; ++r) {
    auto t = Clock::now();
    for (int i = 0; i < inner; ++i) f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t).count() / inner);
  }
  return best;
}

/// One JSON line: the time in `unit` ("ms" or "us") per call (divided by `per`) and a result value.
void emit(const char* workload, const char* side, double seconds, std::optional<double> check, const char* unit = "ms",
          double per = 1) {
  const double t = seconds / per * (std::string(unit) == "ms" ? 1e3 : 1e6);
  char c[64] = "null";
  if (check) std::snprintf(c, sizeof c, "%.17g", *check);
  std::printf("{\"workload\": \"%s\", \"side\": \"%s\", \"time\": %.6g, \"unit\": \"%s\", \"check\": %s}\n", workload, side, t,
              unit, c);
  std::fflush(stdout);
}

/// sum of |x| over the leaves of a tree, in double (the check value of multi-output workloads).
template <class T>
double abs_sum(const T& tree) {
  double s = 0;
  for (const fx::Array& a : fx::tree::leaves(tree)) {
    fx::Array d = fx::astype(a, fx::float64);
    for (double v : d.template to_vector<double>()) s += std::fabs(v);
  }
  return s;
}

/// Runs body(t, lo, hi) over [0, n) on `threads` std::threads (t: the thread's number).
void parallel(int threads, int64_t n, const std::function<void(int, int64_t, int64_t)>& body) {
  if (threads <= 1) return body(0, 0, n);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(body, t, n * t / threads, n * (t + 1) / threads);
  for (auto& t : ts) t.join();
}

/// Compiles f on args (first call), times it and emits the record.
template <class F, class Check, class... Args>
void timed(const char* workload, F f, Check check, const char* unit, double per, const Args&... args) {
  auto out = f(args...);
  emit(workload, "fluxion", best_s([&] { out = f(args...); }), check(out), unit, per);
}

double item(const fx::Array& a) { return fx::astype(a, fx::float64).item<double>(); }

void elementwise_rows() {
  const auto abs = [](const fx::Array& y) { return abs_sum(y); };
  {
    fx::Array a = pattern({kElementwise}, -3, 3, 1), b = pattern({kElementwise}, 0.5, 2, 2), c = pattern({kElementwise}, -4, 2, 3);
    auto f = fx::jit([](const fx::Array& a, const fx::Array& b, const fx::Array& c) { return fx::sin(a * b) + fx::exp(c); });
    timed("fused", f, abs, "ms", 1, a, b, c);
  }
  fx::Array x = pattern({kElementwise}, -20, 20, 1);
  timed("softplus", fx::jit([](const fx::Array& x) { return fx::log1p(fx::exp(x)); }), abs, "ms", 1, x);
  fx::Array m = pattern({kRows, kRows}, -1, 1, 1);
  timed("rowsum", fx::jit([](const fx::Array& m) { return fx::sum(m, {1}); }), abs, "ms", 1, m);
  m = pattern({kRows, kRows}, -4, 4, 1);
  auto first_columns = [](const fx::Array& s) { return item(fx::sum(fx::slice(s, {0, 0}, {kRows, 7}))); };
  timed("softmax", fx::jit([](const fx::Array& m) { return fx::nn::softmax(m, -1); }), first_columns, "ms", 1, m);
}

void model_rows() {
  for (int64_t n : {512, 1024}) {
    auto f = fx::jit([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); });
    timed(n == 512 ? "matmul512" : "matmul1024", f, [](const fx::Array& y) { return abs_sum(y); }, "ms", 1,
          pattern({n, n}, -1, 1, 1), pattern({n, n}, -1, 1, 2));
  }
  {
    MlpInputs d = mlp_data(kMlpHidden);
    timed("mlp_forward", fx::jit(bench::mlp_loss), item, "ms", 1, d.p, d.x, d.y);
    auto step = [](const bench::Mlp& p, const fx::Array& x, const fx::Array& y) {
      auto [loss, g] = fx::value_and_grad(bench::mlp_loss)(p, x, y);
      const float lr = 0.01f;
      return std::make_tuple(loss, bench::Mlp{p.w1 - lr * g.w1, p.b1 - lr * g.b1, p.w2 - lr * g.w2, p.b2 - lr * g.b2});
    };
    timed("mlp_step", fx::jit(step), [](const auto& r) { return abs_sum(std::get<1>(r)); }, "ms", 1, d.p, d.x, d.y);
  }
  {
    auto [g, x] = gmm_data();
    timed("gmm_vg", fx::jit(fx::value_and_grad(bench::gmm_loglik)), [](const auto& r) { return item(r.first); }, "ms", 1, g, x);
  }
  {
    RnnInputs d = rnn_data();
    timed("rnn_scan", fx::jit(bench::rnn_loss), item, "us", double(kRnnSteps), d.p, d.h0, d.xs);
  }
  {
    MlpInputs d = mlp_data(kPexHidden);
    auto f = fx::jit(fx::vmap(fx::grad(bench::mlp_example_loss), fx::in_axes(fx::none, 0, 0)));
    timed("per_example", f, [](const bench::Mlp& g) { return abs_sum(g); }, "ms", 1, d.p, d.x, d.y);
  }
}

void dispatch_rows() {
  fx::Array x = pattern({kSmall}, -1, 1, 1);
  auto f = fx::jit([](const fx::Array& x) { return fx::sin(x) * 2.f + 1.f; });
  fx::Array y = f(x);
  emit("jit_call", "fluxion", best_s([&] { y = f(x); }, 10000), abs_sum(y), "us");
  y = x + x;
  emit("eager_add", "fluxion", best_s([&] { y = x + x; }, 10000), abs_sum(y), "us");
  // Compile: a fresh function (a new constant, so a new program) each time, timed from its first
  // call to its result: trace, compile, run.
  fx::Array c = pattern({kCompileN}, 0, 1, 1);
  int k = 2;
  emit("compile", "fluxion", best_s([&] {
         const float kf = float(k++);
         fx::Array r = fx::jit([kf](const fx::Array& x) { return x * kf; })(c);
       }),
       std::nullopt);
}

/// The GradBench-style rows, with their plain loops on `threads` threads and on one.
void gradbench_rows(int threads) {
  const BaData ba;
  std::vector<fx::Array> a = ba.arrays();
  const auto abs = [](const fx::Array& y) { return abs_sum(y); };
  timed("ba_residuals", fx::jit(ba_residuals), abs, "ms", 1, a[0], a[1], a[2], a[3], a[4], a[5]);
  timed("ba_jacobian", fx::jit(ba_jacobian), abs, "ms", 1, a[0], a[1], a[2], a[3], a[4], a[5]);
  std::vector<double> out(size_t(2 * kBaObs));
  auto ba_loop = [&](int thr) {
    return best_s([&] {
      parallel(thr, kBaObs, [&](int, int64_t lo, int64_t hi) {
        fluxion_bench::ba_residuals_loop(ba.cams.data(), ba.points.data(), ba.weights.data(), ba.feats.data(), ba.cam_idx.data(),
                                         ba.point_idx.data(), lo, hi, out.data());
      });
    });
  };
  const double ba_t = ba_loop(threads), ba_1 = ba_loop(1);
  double ba_check = 0;
  for (double v : out) ba_check += std::fabs(v);
  for (const char* w : {"ba_residuals", "ba_jacobian"}) {
    emit(w, "loop", ba_t, std::string(w) == "ba_residuals" ? std::optional(ba_check) : std::nullopt);
    emit(w, "loop_1t", ba_1, std::nullopt);
  }

  const KmeansData km;
  fx::Array points = fx::array(km.points, {kKmN, kKmD}), centroids = fx::array(km.centroids, {kKmK, kKmD});
  timed("kmeans_cost", fx::jit(kmeans_cost), item, "ms", 1, points, centroids);
  timed("kmeans_dir", fx::jit(kmeans_dir), abs, "ms", 1, points, centroids);
  double cost = 0;
  auto km_loop = [&](int thr) {
    std::vector<double> part(static_cast<size_t>(thr));
    return best_s([&] {
      parallel(thr, kKmN, [&](int t, int64_t lo, int64_t hi) {
        part[size_t(t)] = fluxion_bench::kmeans_cost_loop(km.points.data(), km.centroids.data(), kKmK, kKmD, lo, hi);
      });
      cost = 0;
      for (double p : part) cost += p;
    });
  };
  const double km_t = km_loop(threads), km_1 = km_loop(1);
  for (const char* w : {"kmeans_cost", "kmeans_dir"}) {
    emit(w, "loop", km_t, std::string(w) == "kmeans_cost" ? std::optional(cost) : std::nullopt);
    emit(w, "loop_1t", km_1, std::nullopt);
  }
}

bool want(int argc, char** argv, const char* group) {
  if (argc <= 2) return true;
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == group) return true;
  return false;
}

}  // namespace

// The convolution of issue 14 (bench/bench_conv.cpp measures it against im2col + Eigen by hand).
void conv_rows() {
  const int64_t n = 128, ch = 64, hw = 32;
  fx::Array x = pattern({n, ch, hw, hw}, -1, 1, 1), w = pattern({ch, ch, 3, 3}, -0.1, 0.1, 2);
  fx::Array g = pattern({n, ch, hw, hw}, -1, 1, 3);
  auto conv = [](const fx::Array& a, const fx::Array& k) { return fx::conv_general_dilated(a, k, {1, 1}, "SAME"); };
  // The output comes back as aux: the gradients alone would leave the forward convolution dead.
  auto loss = [conv](const fx::Array& a, const fx::Array& k, const fx::Array& ct) {
    fx::Array y = conv(a, k);
    return std::pair{fx::sum(y * ct), y};
  };
  timed("conv3x3_forward", fx::jit(conv), [](const fx::Array& y) { return abs_sum(y); }, "ms", 1, x, w);
  timed("conv3x3", fx::jit(fx::grad<0, 1>(loss, fx::has_aux)),
        [](const auto& r) { return abs_sum(r.second) + abs_sum(std::get<0>(r.first)) + abs_sum(std::get<1>(r.first)); },
        "ms", 1, x, w, g);
}

// Mixed precision (issue 14): the 512^3 matmul and the 3x3 convolution of conv_rows with float32,
// bfloat16 and float16 operands (16-bit results, or float32 ones through preferred_element_type).
// "_generated" rows compile the product as generated code (Device::matmul = "generated"): the
// path 16-bit products took before they went through the GEMM library call.
void mixed_rows() {
  const auto abs = [](const fx::Array& y) { return abs_sum(y); };
  const fx::Array a = pattern({512, 512}, -1, 1, 1), b = pattern({512, 512}, -1, 1, 2);
  auto mm = fx::jit([](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y); });
  auto mm32 = fx::jit([](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y, fx::float32); });
  timed("matmul512_f32", mm, abs, "ms", 1, a, b);
  for (fx::DType d : {fx::bfloat16, fx::float16}) {
    const fx::Array a16 = fx::astype(a, d), b16 = fx::astype(b, d);
    const std::string name = std::string("matmul512_") + (d == fx::bfloat16 ? "bf16" : "f16");
    timed(name.c_str(), mm, abs, "ms", 1, a16, b16);
    timed((name + "_f32out").c_str(), mm32, abs, "ms", 1, a16, b16);
    fx::runtime::CompileTarget dev = fx::runtime::default_target();
    dev.matmul = "generated";
    auto exe = fx::runtime::compile(fx::make_ir([](const fx::Array& x, const fx::Array& y) { return fx::matmul(x, y); })(a16, b16), dev);
    const std::vector<fx::Array> args{a16, b16};
    timed((name + "_generated").c_str(), [&](const std::vector<fx::Array>& v) { return exe->run(v)[0]; }, abs, "ms", 1, args);
  }
  const int64_t n = 128, ch = 64, hw = 32;
  const fx::Array x = pattern({n, ch, hw, hw}, -1, 1, 1), w = pattern({ch, ch, 3, 3}, -0.1, 0.1, 2);
  auto conv = fx::jit([](const fx::Array& u, const fx::Array& k) { return fx::conv_general_dilated(u, k, {1, 1}, "SAME"); });
  timed("conv3x3_forward_f32", conv, abs, "ms", 1, x, w);
  timed("conv3x3_forward_bf16", conv, abs, "ms", 1, fx::astype(x, fx::bfloat16), fx::astype(w, fx::bfloat16));
}

// The ResNet-18 training step of issue 14 (examples/resnet_model.h: CIFAR stem, BasicBlocks, batch
// norm; SGD with momentum 0.9, learning rate 0.1 and weight decay 5e-4 on the conv and dense weights)
// at batch 128 on f32[128, 3, 32, 32] images, labels (i * 7) % 10, in float32 and with the bfloat16
// compute policy (float32 master weights). Parameters, statistics and optimizer state are donated
// and fed back: every timed call is the next step. The check is the first step's loss.
void resnet_rows(bool f32, bool bf16_too) {
  using namespace example;
  const int64_t n = 128;
  const fx::Array images = pattern({n, 3, 32, 32}, -1, 1, 1);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = int32_t((i * 7) % 10);
  const fx::Array labels = fx::array(ids, fx::Shape{n});
  const auto opt = benchmark_optimizer();
  for (const char* precision : {"f32", "bf16"}) {
    const bool bf16 = std::string(precision) == "bf16";
    if (!(bf16 ? bf16_too : f32)) continue;
    const auto policy = benchmark_policy(bf16);
    auto [model, bn] = init(fx::random::key(0), 3, config(18));
    fx::optim::State state = opt.init(model);
    auto step = fx::jit([&](const ResNet& m, const ResNetState& s, const fx::optim::State& os, const fx::Array& x,
                            const fx::Array& y) { return train_step(opt, policy, m, s, os, x, y); },
                        fx::donate_argnums(0, 1, 2));
    fx::Array loss;
    std::tie(model, bn, state, loss) = step(model, bn, state, images, labels);  // compile
    const double first = item(loss);
    const double t = best_s([&] { std::tie(model, bn, state, loss) = step(model, bn, state, images, labels); });
    emit((std::string("resnet18_step_") + precision).c_str(), "fluxion", t, first);
  }
}

// The linear algebra of issue 15 (bench/bench_linalg.cpp measures the same against Eigen by hand).
void linalg_rows() {
  namespace la = fx::linalg;
  const LinalgInputs d = linalg_data();
  const auto abs = [](const fx::Array& y) { return abs_sum(y); };
  auto cho_solve = [](const fx::Array& m, const fx::Array& r) {
    fx::Array l = la::cholesky(m);
    return la::triangular_solve(l, la::triangular_solve(l, r), {.transpose_a = true});
  };
  timed("cho_solve", fx::jit(cho_solve), abs, "ms", 1, d.spd, d.rhs);
  timed("lu_solve", fx::jit([](const fx::Array& m, const fx::Array& r) { return la::solve(m, r); }), abs, "ms", 1, d.spd, d.rhs);
  timed("qr512", fx::jit([](const fx::Array& m) { return la::qr(m); }), [](const auto& r) { return abs_sum(r.second); }, "ms", 1, d.a);
  timed("eigh512", fx::jit([](const fx::Array& m) { return la::eigh(m); }), [](const auto& r) { return abs_sum(r.first); }, "ms", 1,
        d.sym);
  timed("svd512", fx::jit([](const fx::Array& m) { return la::svd(m); }), [](const auto& r) { return abs_sum(std::get<1>(r)); },
        "ms", 1, d.a);
  const auto [x, y] = gp_data();
  auto loglik = [x, y](const fx::Array& t) {
    fx::Array dx = fx::expand_dims(x, 1) - fx::expand_dims(x, 0);
    fx::Array eye = fx::eye(kGpN, fx::float64);
    fx::Array k = fx::exp(2.0 * t[0]) * fx::exp(-0.5 * dx * dx / fx::exp(2.0 * t[1])) + fx::exp(2.0 * t[2]) * eye;
    fx::Array l = la::cholesky(k);
    fx::Array z = la::triangular_solve(l, y);
    return -0.5 * fx::sum(z * z) - fx::sum(fx::log(fx::sum(l * eye, {1})));
  };
  timed("gp_vg", fx::jit(fx::value_and_grad(loglik)), [](const auto& r) { return item(r.first); }, "ms", 1,
        fx::array({0.0, 0.0, -2.0}));
  // The FFT of 2^20 complex64 points (bench/bench_fft.cpp measures it against FFTW by hand).
  const fx::Array z = fx::complex(pattern({kFftN}, -1, 1, 21), pattern({kFftN}, -1, 1, 22));
  timed("fft", fx::jit([](const fx::Array& a) { return fx::fft::fft(a); }), [](const fx::Array& y) { return abs_sum(fx::abs(y)); },
        "ms", 1, z);
}

// Max pooling forward and forward + gradient on a ResNet-sized activation (bench/peers/common.py
// pool_data): 2x2 stride 2 (VALID) and ResNet's 3x3 stride 2 with padding 1. The "_ref" rows run
// the same functions eagerly, i.e. through the reference kernels the jit called before
// kernels/pool.cpp (the baseline of docs/nn.md's measurement).
void pool_rows() {
  const int64_t n = 32, ch = 64, hw = 56;
  const fx::Array x = pattern({n, ch, hw, hw}, -1, 1, 1);
  struct Pool {
    const char* name;
    int64_t k;
    int64_t pad;
  };
  for (const Pool& p : {Pool{"maxpool2", 2, 0}, Pool{"maxpool3", 3, 1}}) {
    auto pool = [p](const fx::Array& a) {
      return fx::nn::max_pool(a, {p.k, p.k}, {2, 2}, fx::Padding({{p.pad, p.pad}, {p.pad, p.pad}}));
    };
    const fx::Array g = pattern(pool(x).shape(), -1, 1, 3);
    auto loss = [pool](const fx::Array& a, const fx::Array& ct) {
      fx::Array y = pool(a);
      return std::pair{fx::sum(y * ct), y};
    };
    auto checked = [](const auto& r) { return abs_sum(r.second) + abs_sum(r.first); };
    const std::string fwd = std::string(p.name) + "_forward", step = p.name;
    timed(fwd.c_str(), fx::jit(pool), [](const fx::Array& y) { return abs_sum(y); }, "ms", 1, x);
    timed(step.c_str(), fx::jit(fx::grad(loss, fx::has_aux)), checked, "ms", 1, x, g);
    timed((fwd + "_ref").c_str(), pool, [](const fx::Array& y) { return abs_sum(y); }, "ms", 1, x);
    timed((step + "_ref").c_str(), fx::grad(loss, fx::has_aux), checked, "ms", 1, x, g);
  }
}

int main(int argc, char** argv) {
  if (argc > 1) g_repeats = std::max(1, std::atoi(argv[1]));
  const int threads = fx::runtime::default_target().num_threads;
  const char* cpu = std::getenv("FLUXION_CPU");
  std::printf("# fluxion: %d kernel threads, FLUXION_CPU=%s, best of %d\n", threads, cpu ? cpu : "(host)", g_repeats);
  if (want(argc, argv, "elementwise")) elementwise_rows();
  if (want(argc, argv, "models")) model_rows();
  if (want(argc, argv, "dispatch")) dispatch_rows();
  if (want(argc, argv, "gradbench")) gradbench_rows(threads);
  if (want(argc, argv, "conv")) conv_rows();
  if (want(argc, argv, "pool")) pool_rows();
  if (want(argc, argv, "linalg")) linalg_rows();
  if (want(argc, argv, "mixed")) mixed_rows();
  if (want(argc, argv, "resnet") || want(argc, argv, "resnet_f32") || want(argc, argv, "resnet_bf16"))
    resnet_rows(!want(argc, argv, "resnet_bf16") || want(argc, argv, "resnet") || want(argc, argv, "resnet_f32"),
                !want(argc, argv, "resnet_f32") || want(argc, argv, "resnet") || want(argc, argv, "resnet_bf16"));
  return 0;
}
