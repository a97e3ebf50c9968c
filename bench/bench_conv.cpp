// The convolution benchmark of issue 14: a 3x3 convolution, 64 -> 64 features, 32x32 images, batch
// 128, NCHW x OIHW, SAME -- forward alone, and forward + both gradients (one jitted grad of
// sum(conv(x, w) * g) with respect to x and w) -- and, with the group "resnet", the same for the
// other convolutions of ResNet-18's CIFAR model (the deep stages' 16x16, 8x8 and 4x4 outputs, the
// stride-2 downsampling convolutions and their 1x1 shortcuts). The baseline, measured in the same run on the same
// threads: im2col + Eigen written by hand here (-O3 -march=native -ffast-math), the classic
// framework implementation -- per image, columns = im2col(x), y = W columns, dW += dy columns^T,
// dcolumns = W^T dy, dx = col2im(dcolumns) -- and, where Debian's libdnnl-dev is installed, oneDNN
// called directly from NCHW arrays as PyTorch's CPU convolution does (its blocked layouts chosen by
// oneDNN, the reorders from and to NCHW included). Ratios are speeds (baseline time / Fluxion time).
// PyTorch and JAX rows for the same workload: bench/peers (workload "conv3x3").
//
// Run: build/bench/fluxion_bench_conv [repeats [batch [resnet | C,O,HW,k,stride]]] [bf16] (one shape:
// C -> O features, HW x HW images, a k x k kernel). With "bf16" Fluxion's side convolves bfloat16
// arrays (bfloat16 results, float32 accumulation) and oneDNN's computes in bfloat16 too (from and to
// the same float32 NCHW arrays: its reorders convert as they change the layout, one pass as in the
// float32 runs); the hand baseline stays float32.
#include <fluxion.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <eigen3/Eigen/Core>

#include "kernels/conv.h"
#include "compile/target.h"

#ifdef FLUXION_BENCH_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "bench/timing.h"

namespace fx = fluxion;
using Clock = std::chrono::steady_clock;

namespace {

int g_repeats = 5;

double best_ms(const std::function<void()>& f) { return fluxion_bench::best_ms(f, g_repeats); }

fx::Array filled(const fx::Shape& s, float lo, float hi, int salt) {
  std::vector<float> v(size_t(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = lo + (hi - lo) * float((int64_t(i) * 7919 + salt * 104729) % 10007) / 10007.f;
  return fx::array(v, s);
}
const float* cptr(const fx::Array& a) { return static_cast<const float*>(a.data()); }

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<Mat>;
using CMap = Eigen::Map<const Mat>;

// One convolution of the benchmark: NCHW x OIHW, a square kernel of size k with padding k / 2.
struct ConvShape {
  int64_t c, o, h, w, k, stride;
  int64_t pad() const { return k / 2; }
  int64_t oh() const { return (h + 2 * pad() - k) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad() - k) / stride + 1; }
};

// The hand-written baseline: im2col + Eigen per image, NCHW x OIHW.
struct HandConv {
  int64_t n;
  ConvShape s;
  int threads;

  // Calls f(column row, input offset or -1) for every (feature, kernel offset, output position).
  template <class F>
  void each(F f) const {
    const int64_t k = s.k, p = s.oh() * s.ow();
    for (int64_t ci = 0; ci < s.c; ++ci)
      for (int64_t ky = 0; ky < k; ++ky)
        for (int64_t kx = 0; kx < k; ++kx) {
          const int64_t row = ((ci * k + ky) * k + kx) * p;
          for (int64_t y = 0; y < s.oh(); ++y) {
            const int64_t sy = y * s.stride + ky - s.pad();
            for (int64_t xx = 0; xx < s.ow(); ++xx) {
              const int64_t sx = xx * s.stride + kx - s.pad();
              f(row + y * s.ow() + xx, sy >= 0 && sy < s.h && sx >= 0 && sx < s.w ? (ci * s.h + sy) * s.w + sx : -1);
            }
          }
        }
  }
  void im2col(const float* x, float* cols) const { each([&](int64_t r, int64_t i) { cols[r] = i >= 0 ? x[i] : 0.f; }); }
  void col2im(const float* cols, float* x) const {
    std::fill(x, x + s.c * s.h * s.w, 0.f);
    each([&](int64_t r, int64_t i) {
      if (i >= 0) x[i] += cols[r];
    });
  }
  // Images [lo, hi) on one thread; dw accumulates this thread's share.
  void run(const float* x, const float* wt, const float* g, float* y, float* dx, float* dw, int64_t lo, int64_t hi,
           bool backward) const {
    const int64_t k = s.c * s.k * s.k, p = s.oh() * s.ow(), o = s.o;
    std::vector<float> cols(size_t(k * p)), dcols(size_t(k * p));
    CMap W(wt, o, k);
    Map dW(dw, o, k);
    for (int64_t i = lo; i < hi; ++i) {
      im2col(x + i * s.c * s.h * s.w, cols.data());
      CMap C(cols.data(), k, p);
      Map(y + i * o * p, o, p).noalias() = W * C;
      if (!backward) continue;
      CMap G(g + i * o * p, o, p);
      dW.noalias() += G * C.transpose();
      Map(dcols.data(), k, p).noalias() = W.transpose() * G;
      col2im(dcols.data(), dx + i * s.c * s.h * s.w);
    }
  }
  void step(const float* x, const float* wt, const float* g, float* y, float* dx, float* dw, bool backward) const {
    const int64_t wsize = s.o * s.c * s.k * s.k;
    std::vector<std::vector<float>> parts(size_t(threads), std::vector<float>(size_t(wsize), 0.f));
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] { run(x, wt, g, y, dx, parts[size_t(t)].data(), n * t / threads, n * (t + 1) / threads, backward); });
    for (auto& t : ts) t.join();
    if (!backward) return;
    std::fill(dw, dw + wsize, 0.f);
    for (const auto& part : parts)
      for (size_t i = 0; i < part.size(); ++i) dw[i] += part[i];
  }
};

#ifdef FLUXION_BENCH_DNNL
// oneDNN's forward, backward-data and backward-weights convolutions of a ConvShape.
struct DnnlConv {
  using md = dnnl::memory::desc;
  using tag = dnnl::memory::format_tag;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights;
  md x_md, w_md, y_md;

  // Computes in `compute` (f32 or bf16) on float32 NCHW / OIHW arrays.
  DnnlConv(int64_t n, const ConvShape& s, dnnl::memory::data_type compute) {
    const auto f32 = dnnl::memory::data_type::f32;
    const dnnl::memory::dims xd{n, s.c, s.h, s.w}, wd{s.o, s.c, s.k, s.k}, yd{n, s.o, s.oh(), s.ow()};
    x_md = md(xd, f32, tag::nchw);
    w_md = md(wd, f32, tag::oihw);
    y_md = md(yd, f32, tag::nchw);
    const md xa(xd, compute, tag::any), wa(wd, compute, tag::any), ya(yd, compute, tag::any);
    const dnnl::memory::dims st{s.stride, s.stride}, pad{s.pad(), s.pad()};
    const auto algo = dnnl::algorithm::convolution_direct;
    fwd = {{dnnl::prop_kind::forward_training, algo, xa, wa, ya, st, pad, pad}, eng};
    bwd_data = {{algo, xa, wa, ya, st, pad, pad}, eng, fwd};
    bwd_weights = {{algo, xa, wa, ya, st, pad, pad}, eng, fwd};
  }
  // `user` (a plain layout) as a memory of layout `want`: itself, or a reordered copy.
  dnnl::memory in(const md& user_md, const float* p, const md& want) {
    dnnl::memory user(user_md, eng, const_cast<float*>(p));
    if (want == user_md) return user;
    dnnl::memory m(want, eng);
    dnnl::reorder(user, m).execute(strm, user, m);
    return m;
  }
  void out(const dnnl::memory& m, const md& user_md, float* p) {
    dnnl::memory user(user_md, eng, p);
    if (m.get_desc() == user_md) return;
    dnnl::reorder(m, user).execute(strm, const_cast<dnnl::memory&>(m), user);
  }
  dnnl::memory fresh(const md& want, const md& user_md, float* p) {
    return want == user_md ? dnnl::memory(user_md, eng, p) : dnnl::memory(want, eng);
  }
  void step(const float* x, const float* wt, const float* g, float* y, float* dx, float* dw, bool backward) {
    dnnl::memory src = in(x_md, x, fwd.src_desc()), wei = in(w_md, wt, fwd.weights_desc());
    dnnl::memory dst = fresh(fwd.dst_desc(), y_md, y);
    dnnl::convolution_forward(fwd).execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    out(dst, y_md, y);
    if (backward) {
      dnnl::memory dd = in(y_md, g, bwd_data.diff_dst_desc()), bw = in(w_md, wt, bwd_data.weights_desc());
      dnnl::memory ds = fresh(bwd_data.diff_src_desc(), x_md, dx);
      dnnl::convolution_backward_data(bwd_data).execute(
          strm, {{DNNL_ARG_DIFF_DST, dd}, {DNNL_ARG_WEIGHTS, bw}, {DNNL_ARG_DIFF_SRC, ds}});
      out(ds, x_md, dx);
      dnnl::memory ws = in(x_md, x, bwd_weights.src_desc()), wd = in(y_md, g, bwd_weights.diff_dst_desc());
      dnnl::memory dwm = fresh(bwd_weights.diff_weights_desc(), w_md, dw);
      dnnl::convolution_backward_weights(bwd_weights).execute(
          strm, {{DNNL_ARG_SRC, ws}, {DNNL_ARG_DIFF_DST, wd}, {DNNL_ARG_DIFF_WEIGHTS, dwm}});
      out(dwm, w_md, dw);
    }
    strm.wait();
  }
};
#endif

double max_rel_diff(const float* a, const float* b, int64_t n) {
  double m = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, double(std::abs(b[i])));
  for (int64_t i = 0; i < n; ++i) m = std::max(m, double(std::abs(a[i] - b[i])));
  return m / std::max(scale, 1e-30);
}

// One timed workload: its label and, per side, the call (absent sides are skipped).
struct Row {
  const char* label;
  std::vector<std::function<void()>> sides;
  std::vector<double> best;
};

// Times one shape: forward alone and forward + both gradients, Fluxion against the baselines;
// Fluxion's side in bfloat16 when `bf16`.
void bench_shape(int64_t batch, const ConvShape& s, int threads, bool bf16) {
  const int64_t C = s.c, O = s.o, H = s.h, W = s.w, P = s.oh() * s.ow();
  std::printf("conv %lldx%lld %lld->%lld, %lldx%lld stride %lld, batch %lld, %s NCHW/OIHW pad %lld; %d threads; best of %d "
              "rounds, the sides interleaved in each\n",
              (long long)s.k, (long long)s.k, (long long)C, (long long)O, (long long)H, (long long)W, (long long)s.stride,
              (long long)batch, bf16 ? "bf16 (hand: f32)" : "f32", (long long)s.pad(), threads, g_repeats);
  // The float32 data every side reads; Fluxion's side its bfloat16 rounding when `bf16`.
  const fx::Array x = filled({batch, C, H, W}, -1, 1, 1), w = filled({O, C, s.k, s.k}, -0.1f, 0.1f, 2);
  const fx::Array g = filled({batch, O, s.oh(), s.ow()}, -1, 1, 3);
  const fx::DType dt = bf16 ? fx::bfloat16 : fx::float32;
  const fx::Array xs = fx::astype(x, dt), ws = fx::astype(w, dt), gs = fx::astype(g, dt);
  auto f32 = [](const fx::Array& a) { return fx::astype(a, fx::float32); };
  const double gflop = 2.0 * double(batch * O * P) * double(C * s.k * s.k) * 1e-9;

  const int64_t st = s.stride, pd = s.pad();
  auto conv = [st, pd](const fx::Array& a, const fx::Array& k) {
    return fx::conv_general_dilated(a, k, {st, st}, std::vector<std::pair<int64_t, int64_t>>{{pd, pd}, {pd, pd}});
  };
  // The output is returned too (as aux): without it the forward convolution is dead code, since the
  // gradients of sum(conv(x, w) * g) do not need it.
  auto loss = [&](const fx::Array& a, const fx::Array& k, const fx::Array& ct) {
    fx::Array out = conv(a, k);
    return std::pair{fx::sum(fx::multiply(out, ct)), out};
  };
  auto forward = fx::jit(conv);
  auto both = fx::jit(fx::grad<0, 1>(loss, fx::has_aux));

  HandConv hand{batch, s, threads};
  std::vector<float> y(size_t(batch * O * P)), dx(size_t(batch * C * H * W)), dw(size_t(O * C * s.k * s.k));
  fx::Array fy = forward(xs, ws);
  auto [grads, y_aux] = both(xs, ws, gs);
  auto [gx, gw] = grads;
  // Fluxion's results as float32, for the checks.
  const fx::Array cy = f32(fy), cx = f32(gx), cw = f32(gw);
  hand.step(cptr(x), cptr(w), cptr(g), y.data(), dx.data(), dw.data(), true);
  std::printf("  hand check (max |diff| / max |value|): y %.1e, dx %.1e, dw %.1e\n",
              max_rel_diff(cptr(cy), y.data(), cy.size()), max_rel_diff(cptr(cx), dx.data(), cx.size()),
              max_rel_diff(cptr(cw), dw.data(), cw.size()));
  auto hand_fwd = [&] { hand.step(cptr(x), cptr(w), cptr(g), y.data(), dx.data(), dw.data(), false); };
  auto hand_both = [&] { hand.step(cptr(x), cptr(w), cptr(g), y.data(), dx.data(), dw.data(), true); };
  std::vector<const char*> names{"fluxion", "hand"};
  Row rows[] = {{"forward", {[&] { fy = forward(xs, ws); }, hand_fwd}, {}},
                {"forward + both gradients",
                 {[&] {
                    std::tie(grads, y_aux) = both(xs, ws, gs);
                    std::tie(gx, gw) = grads;
                  },
                  hand_both},
                 {}}};
#ifdef FLUXION_BENCH_DNNL
  DnnlConv dn(batch, s, bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32);
  dn.step(cptr(x), cptr(w), cptr(g), y.data(), dx.data(), dw.data(), true);
  std::printf("  oneDNN %s%s check: y %.1e, dx %.1e, dw %.1e\n", bf16 ? "bf16 " : "",
              dnnl::version()->cpu_runtime == DNNL_RUNTIME_OMP ? "(OpenMP)" : "", max_rel_diff(cptr(cy), y.data(), cy.size()),
              max_rel_diff(cptr(cx), dx.data(), cx.size()), max_rel_diff(cptr(cw), dw.data(), cw.size()));
  names.push_back("oneDNN");
  rows[0].sides.push_back([&] { dn.step(cptr(x), cptr(w), cptr(g), y.data(), dx.data(), dw.data(), false); });
  rows[1].sides.push_back([&] { dn.step(cptr(x), cptr(w), cptr(g), y.data(), dx.data(), dw.data(), true); });
#else
  std::printf("  (no oneDNN column: install libdnnl-dev and reconfigure)\n");
#endif
  using fx::runtime::ConvAlgorithm;
  const ConvAlgorithm forms[] = {ConvAlgorithm::im2col, ConvAlgorithm::im2col_by_feature, ConvAlgorithm::col2im};
  uint64_t runs0[3];
  for (int i = 0; i < 3; ++i) runs0[i] = fx::runtime::conv_runs(forms[i]);
  const uint64_t from_input0 = fx::runtime::conv_products_from_input();
  for (Row& r : rows) r.best.assign(r.sides.size(), 1e300);
  const int rounds = g_repeats;
  g_repeats = 1;
  for (int round = 0; round < rounds; ++round)
    for (Row& r : rows)
      for (size_t i = 0; i < r.sides.size(); ++i) r.best[i] = std::min(r.best[i], best_ms(r.sides[i]));
  std::printf("  library calls per round (forward, then the step): im2col %.1f, im2col by feature %.1f, col2im %.1f\n",
              double(fx::runtime::conv_runs(forms[0]) - runs0[0]) / rounds,
              double(fx::runtime::conv_runs(forms[1]) - runs0[1]) / rounds,
              double(fx::runtime::conv_runs(forms[2]) - runs0[2]) / rounds);
  std::printf("  im2col products packed straight from the input per round: %.1f\n",
              double(fx::runtime::conv_products_from_input() - from_input0) / rounds);
  std::printf("  %-26s", "ms (speed: baseline / fluxion)");
  for (const char* n : names) std::printf(" %16s", n);
  std::printf(" %9s\n", "GFLOP/s");
  for (const Row& r : rows) {
    std::printf("  %-26s %16.1f", r.label, r.best[0]);
    for (size_t i = 1; i < r.best.size(); ++i) std::printf(" %8.1f (%4.2fx)", r.best[i], r.best[i] / r.best[0]);
    std::printf(" %9.1f\n", (&r == &rows[0] ? 1 : 3) * gflop / r.best[0] * 1e3);
  }
  // Where the step's time goes: each gradient alone (no baseline splits the same way).
  g_repeats = rounds;
  auto input_grad = fx::jit(fx::grad<0>([&](const fx::Array& a, const fx::Array& k, const fx::Array& ct) {
    return fx::sum(fx::multiply(conv(a, k), ct));
  }));
  auto kernel_grad = fx::jit(fx::grad<1>([&](const fx::Array& a, const fx::Array& k, const fx::Array& ct) {
    return fx::sum(fx::multiply(conv(a, k), ct));
  }));
  fx::Array part = input_grad(xs, ws, gs);
  part = kernel_grad(xs, ws, gs);
  const double t_input = best_ms([&] { part = input_grad(xs, ws, gs); });
  const double t_kernel = best_ms([&] { part = kernel_grad(xs, ws, gs); });
  std::printf("  of which alone: input gradient %.1f ms, kernel gradient %.1f ms (best of %d)\n", t_input, t_kernel,
              g_repeats);
}

}  // namespace

int main(int argc, char** argv) {
  // Threads that spin after a parallel region would steal the cores of the next side's run (the
  // jit's libomp and oneDNN's libgomp are two pools): every pool sleeps as soon as it is idle.
  setenv("KMP_BLOCKTIME", "0", 0);
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  std::vector<std::string> args(argv + 1, argv + argc);
  const auto bf16_arg = std::find(args.begin(), args.end(), "bf16");
  const bool bf16 = bf16_arg != args.end();
  if (bf16) args.erase(bf16_arg);
  if (args.size() > 0) g_repeats = std::max(1, std::atoi(args[0].c_str()));
  const int64_t batch = args.size() > 1 ? std::atoll(args[1].c_str()) : 128;
  const std::string group = args.size() > 2 ? args[2] : "";
  const bool resnet = group == "resnet";
  const int threads = fx::runtime::default_target().num_threads;
  std::vector<ConvShape> shapes{{64, 64, 32, 32, 3, 1}};
  long long c, o, hw, k, st;
  if (std::sscanf(group.c_str(), "%lld,%lld,%lld,%lld,%lld", &c, &o, &hw, &k, &st) == 5) shapes = {{c, o, hw, hw, k, st}};
  // ResNet-18 (CIFAR): per stage, the 3x3 convolution at the stage's width, the stride-2 one that
  // enters it and the 1x1 stride-2 shortcut.
  if (resnet)
    for (int64_t c : {64, 128, 256}) {
      const int64_t hw = 32 * 64 / c;
      shapes.push_back({c, 2 * c, hw, hw, 3, 2});
      shapes.push_back({c, 2 * c, hw, hw, 1, 2});
      shapes.push_back({2 * c, 2 * c, hw / 2, hw / 2, 3, 1});
    }
  for (const ConvShape& s : shapes) bench_shape(batch, s, threads, bf16);
  return 0;
}
