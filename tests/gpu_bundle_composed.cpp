// Transforms composed, as the GPU check runs them (issue 30 item 1): jit of grad, jit of vmap and
// jit of vmap of grad of a small MLP written with the primitives the GPU lowers (a dense layer as a
// broadcast product summed over its inner axis, where dot_general is not lowered yet), and jit of
// value_and_grad of the GMM log-likelihood of the benchmarks. Each program is what fx::jit compiles
// (jit_passes); its reference is the same transformed function run eagerly on the CPU.
#include "bench/models.h"
#include "gpu_bundle.h"
#include "interpreters/jit_passes.h"

namespace gpu_bundle {

namespace {

using Arrays = std::vector<fx::Array>;

// x[..., i] . w[i, o] -> [..., o], without dot_general.
fx::Array dense(const fx::Array& x, const fx::Array& w) {
  return fx::sum(fx::expand_dims(x, -1) * fx::expand_dims(w, 0), {-2});
}

// The mean cross-entropy of a two-layer tanh MLP's logits against soft targets t: for one example
// (x[i], t[o]) or a batch (x[b, i], t[b, o]).
fx::Array mlp_loss(const fx::Array& w1, const fx::Array& b1, const fx::Array& w2, const fx::Array& x, const fx::Array& t) {
  const fx::Array logits = dense(fx::tanh(dense(x, w1) + b1), w2);
  return -fx::mean(fx::nn::log_softmax(logits, -1) * t);
}

fx::Array mlp_forward(const fx::Array& w1, const fx::Array& b1, const fx::Array& w2, const fx::Array& x) {
  return fx::nn::softmax(dense(fx::tanh(dense(x, w1) + b1), w2), -1);
}

fx::Array normal(uint32_t seed, fx::Shape shape, float scale) {
  return fx::random::normal(fx::random::key(seed), shape) * scale;
}

// A composed case: `f` over `args` traced as jit traces it, and run eagerly for the reference.
Composed make(std::string what, std::function<Arrays(const Arrays&)> f, Arrays args) {
  Composed c;
  c.what = "composed: " + what;
  c.program = fx::jit_passes(fx::make_ir(f)(args), "composed");
  c.args = args;
  c.eager = [f, args] { return f(args); };
  c.tol = {2e-4, 2e-5};  // float32: libdevice's tanh/exp/log against the CPU's, sums in another order
  return c;
}

}  // namespace

std::vector<Composed> composed_cases() {
  const Arrays mlp{normal(1, {12, 10}, 0.3f), normal(2, {10}, 0.1f), normal(3, {10, 4}, 0.3f), normal(4, {16, 12}, 1.f),
                   fx::nn::softmax(normal(5, {16, 4}, 1.f), -1)};
  std::vector<Composed> out;
  out.push_back(make("jit(grad(mlp loss)) w.r.t. w1, b1, w2; x f32[16,12], 12-10-4", [](const Arrays& a) {
    auto [g1, gb, g2] = fx::grad<0, 1, 2>(mlp_loss)(a[0], a[1], a[2], a[3], a[4]);
    return Arrays{g1, gb, g2};
  }, mlp));
  out.push_back(make("jit(vmap(mlp forward)) over x f32[16,12], 12-10-4", [](const Arrays& a) {
    return Arrays{fx::vmap(mlp_forward, fx::in_axes(fx::none, fx::none, fx::none, 0))(a[0], a[1], a[2], a[3])};
  }, {mlp[0], mlp[1], mlp[2], mlp[3]}));
  out.push_back(make("jit(vmap(grad(mlp loss))) per example w.r.t. w1; x f32[16,12], 12-10-4", [](const Arrays& a) {
    return Arrays{fx::vmap(fx::grad(mlp_loss), fx::in_axes(fx::none, fx::none, fx::none, 0, 0))(a[0], a[1], a[2], a[3], a[4])};
  }, mlp));
  const Arrays gmm{normal(6, {5}, 1.f), normal(7, {5, 3}, 1.f), normal(8, {5, 3}, 0.1f), normal(9, {64, 3}, 1.f)};
  out.push_back(make("jit(value_and_grad(gmm log-likelihood)) n=64 K=5 d=3", [](const Arrays& a) {
    auto f = [](const fx::Array& al, const fx::Array& m, const fx::Array& s, const fx::Array& x) {
      return bench::gmm_loglik(bench::Gmm{al, m, s}, x);
    };
    auto [v, g] = fx::value_and_grad<0, 1, 2>(f)(a[0], a[1], a[2], a[3]);
    auto [ga, gm, gs] = g;
    return Arrays{v, ga, gm, gs};
  }, gmm));
  return out;
}

}  // namespace gpu_bundle
