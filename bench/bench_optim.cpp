// The optimizer update against the memory-bandwidth bound, measured in the same run: an AdamW step
// (with a cosine schedule) over ResNet-18's 11.2M parameters in its 62 leaves, jitted, against
//   * the bound: the bytes the update must move at the memory bandwidth measured now (memcpy, a
//     triad, an in-place update; on 1 thread and on every hardware thread; the fastest is the bound);
//   * a hand-written fused C++ loop over the same leaves (one pass, the same float math).
// Bytes per parameter: reads p, g, m, v and writes p, m, v: 7 x 4 = 28. Target: >= 0.8x the bound.
//
//   build/bench/fluxion_bench_optim [repeats]
#include <fluxion.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "bench/timing.h"

namespace fx = fluxion;
using Clock = std::chrono::steady_clock;

namespace {

int g_repeats = 20;

double best_ms(const std::function<void()>& f) {
  f();  // warm: first touch, compilation
  return fluxion_bench::best_ms(f, g_repeats);
}

// ResNet-18 for CIFAR (3x3 stem, no max-pool, 10 classes): conv weights OIHW, batch-norm scale and
// bias per conv, the 1x1 downsample convs, the classifier.
std::vector<fx::Shape> resnet18_shapes() {
  std::vector<fx::Shape> s;
  auto conv = [&](int64_t o, int64_t i, int64_t k) {
    s.push_back({o, i, k, k});
    s.push_back({o});
    s.push_back({o});
  };
  conv(64, 3, 3);
  int64_t in = 64;
  for (int64_t width : {64, 128, 256, 512}) {
    for (int block = 0; block < 2; ++block) {
      conv(width, block == 0 ? in : width, 3);
      conv(width, width, 3);
      if (block == 0 && in != width) conv(width, in, 1);
    }
    in = width;
  }
  s.push_back({512, 10});
  s.push_back({10});
  return s;
}

// Memory bandwidth in bytes per second over `threads`: the best of memcpy (8 B per element), a
// triad into a touched output (12 B) and an in-place update a += s * b (12 B, the optimizer's own
// pattern). On this machine memcpy is the slowest of the three, the in-place update the fastest.
double memory_bandwidth(size_t bytes, int threads) {
  const size_t n = bytes / sizeof(float);
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  std::fill_n(a.get(), n, 1.f), std::fill_n(b.get(), n, 2.f), std::fill_n(c.get(), n, 3.f);
  auto parallel = [&](const std::function<void(size_t, size_t)>& body) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back(body, n * size_t(t) / size_t(threads), n * size_t(t + 1) / size_t(threads));
    for (auto& t : ts) t.join();
  };
  double copy_ms = best_ms([&] { parallel([&](size_t lo, size_t hi) { std::memcpy(a.get() + lo, b.get() + lo, (hi - lo) * 4); }); });
  double triad_ms = best_ms([&] {
    parallel([&](size_t lo, size_t hi) {
      float *pa = a.get(), *pb = b.get(), *pc = c.get();
      for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + 0.5f * pc[i];
    });
  });
  double update_ms = best_ms([&] {
    parallel([&](size_t lo, size_t hi) {
      float *pa = a.get(), *pb = b.get();
      for (size_t i = lo; i < hi; ++i) pa[i] += 1e-7f * pb[i];
    });
  });
  return std::max({2.0 * double(bytes) / (copy_ms * 1e-3), 3.0 * double(bytes) / (triad_ms * 1e-3),
                   3.0 * double(bytes) / (update_ms * 1e-3)});
}

// AdamW by hand over flat leaves: the fused loop a C++ programmer would write.
void hand_adamw(std::vector<std::vector<float>>& p, const std::vector<std::vector<float>>& g,
                std::vector<std::vector<float>>& m, std::vector<std::vector<float>>& v, int step, float lr) {
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 1e-4f;
  const float c1 = 1 / (1 - std::pow(b1, float(step))), c2 = 1 / (1 - std::pow(b2, float(step)));
  for (size_t l = 0; l < p.size(); ++l) {
    float *pp = p[l].data(), *pm = m[l].data(), *pv = v[l].data();
    const float* pg = g[l].data();
    for (size_t i = 0; i < p[l].size(); ++i) {
      float mi = b1 * pm[i] + (1 - b1) * pg[i], vi = b2 * pv[i] + (1 - b2) * pg[i] * pg[i];
      pm[i] = mi, pv[i] = vi;
      pp[i] -= lr * (mi * c1 / (std::sqrt(vi * c2) + eps) + wd * pp[i]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_repeats = std::max(1, std::atoi(argv[1]));
  std::vector<fx::Shape> shapes = resnet18_shapes();
  std::vector<fx::Array> params, grads;
  int64_t n = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    params.push_back(fx::random::normal(fx::random::key(int64_t(i)), shapes[i]) * 0.05f);
    grads.push_back(fx::random::normal(fx::random::key(int64_t(i) + 1000), shapes[i]) * 0.01f);
    n += shapes[i].numel();
  }
  const double bytes = 28.0 * double(n);
  std::printf("AdamW update: %zu leaves, %.2fM parameters, %.0f MB moved per step\n", shapes.size(), double(n) / 1e6,
              bytes / 1e6);

  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  double bw1 = memory_bandwidth(size_t(256) << 20, 1), bwn = hw > 1 ? memory_bandwidth(size_t(256) << 20, hw) : bw1;
  double bw = std::max(bw1, bwn);
  double bound_ms = bytes / bw * 1e3;
  std::printf("memory bandwidth: %.1f GB/s on 1 thread, %.1f GB/s on %d -> bound %.2f ms per step\n", bw1 / 1e9,
              bwn / 1e9, hw, bound_ms);

  auto opt = fx::optim::adamw(fx::optim::cosine_decay(1e-3, 10000), 1e-4);
  auto state = opt.init(params);
  auto step = fx::jit([&](const std::vector<fx::Array>& p, const fx::optim::State& s, const std::vector<fx::Array>& g) {
    auto [u, next] = opt.update(g, s, p);
    return std::pair{fx::optim::apply_updates(p, u), next};
  });
  auto fused = fx::jit([&](const std::vector<fx::Array>& p, const fx::optim::State& s, const std::vector<fx::Array>& g) {
    return opt.step(g, s, p);
  });
  // The same step with the parameters and the state donated (jax.jit's donate_argnums): p, m and v
  // are updated in place, as the hand loop updates them.
  auto donated = fx::jit([&](const std::vector<fx::Array>& p, const fx::optim::State& s, const std::vector<fx::Array>& g) {
    return opt.step(g, s, p);
  }, fx::donate_argnums(0, 1));
  double jit_ms = best_ms([&] { std::tie(params, state) = step(params, state, grads); });
  double fused_ms = best_ms([&] { std::tie(params, state) = fused(params, state, grads); });
  double donated_ms = best_ms([&] { std::tie(params, state) = donated(params, state, grads); });
  // The same leaves as flat vectors: what the donated step costs when every loop is one-dimensional
  // (a conv weight [O, I, 3, 3] makes a 4-D loop whose innermost dim is 3, which vectorises poorly).
  std::vector<fx::Array> flat_p, flat_g;
  for (size_t i = 0; i < params.size(); ++i) {
    flat_p.push_back(fx::reshape(params[i], {params[i].size()}) + 0.f);
    flat_g.push_back(fx::reshape(grads[i], {grads[i].size()}) + 0.f);
  }
  auto flat_state = opt.init(flat_p);
  auto flat_step = fx::jit([&](const std::vector<fx::Array>& p, const fx::optim::State& s, const std::vector<fx::Array>& g) {
    return opt.step(g, s, p);
  }, fx::donate_argnums(0, 1));
  double flat_ms = best_ms([&] { std::tie(flat_p, flat_state) = flat_step(flat_p, flat_state, flat_g); });

  std::vector<std::vector<float>> hp, hg, hm, hv;
  for (size_t i = 0; i < params.size(); ++i) {
    hp.push_back(params[i].to_vector<float>());
    hg.push_back(grads[i].to_vector<float>());
    hm.push_back(std::vector<float>(hp.back().size(), 0.f));
    hv.push_back(std::vector<float>(hp.back().size(), 0.f));
  }
  int hand_step = 0;
  double hand_ms = best_ms([&] { hand_adamw(hp, hg, hm, hv, ++hand_step, 1e-3f); });

  // The hand loop moves the same bytes: when it beats the measured bandwidth, it is the bound.
  bound_ms = std::min(bound_ms, hand_ms);
  std::printf("%-34s %9s %12s\n", "", "ms/step", "x bound");
  std::printf("%-34s %9.2f %12.2f\n", "bound (28 B/param, fastest pass)", bound_ms, 1.0);
  std::printf("%-34s %9.2f %12.2f\n", "hand-fused C++ loop (1 thread)", hand_ms, bound_ms / hand_ms);
  std::printf("%-34s %9.2f %12.2f\n", "jit(update, then apply_updates)", jit_ms, bound_ms / jit_ms);
  std::printf("%-34s %9.2f %12.2f\n", "jit(step: fused update + apply)", fused_ms, bound_ms / fused_ms);
  std::printf("%-34s %9.2f %12.2f   target >= 0.80  %s\n", "jit(step), params + state donated", donated_ms,
              bound_ms / donated_ms, bound_ms / donated_ms >= 0.8 ? "MET" : "NOT MET");
  std::printf("%-34s %9s %12.2f\n", "  donated step vs the hand loop", "", hand_ms / donated_ms);
  std::printf("%-34s %9.2f %12.2f\n", "  the same, leaves flattened to 1-D", flat_ms, bound_ms / flat_ms);
  std::printf("compilations: %lld, %lld and %lld\n", (long long)step.compilations(), (long long)fused.compilations(),
              (long long)donated.compilations());
  return 0;
}
