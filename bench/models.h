// The models the benchmarks share: a 2-layer MLP classification loss and a GMM log-likelihood
// (diagonal covariances), with the standard problem sizes of the issues (MLP batch 256,
// 784-512-10; GMM d=10, K=25, n=1000).
#pragma once
#include <fluxion.h>

namespace bench {

namespace fx = fluxion;

struct Mlp {
  fx::Array w1, b1, w2, b2;
};
FLUXION_TREE(Mlp, w1, b1, w2, b2);

inline fx::Array mlp_loss(const Mlp& p, const fx::Array& x, const fx::Array& y) {
  fx::Array h = fx::nn::relu(fx::matmul(x, p.w1) + p.b1);
  return -fx::mean(fx::sum(fx::nn::log_softmax(fx::matmul(h, p.w2) + p.b2) * y, -1));
}

struct Gmm {
  fx::Array alphas, means, log_sigmas;
};
FLUXION_TREE(Gmm, alphas, means, log_sigmas);

inline fx::Array gmm_loglik(const Gmm& g, const fx::Array& x) {
  fx::Array diff = fx::expand_dims(x, 1) - fx::expand_dims(g.means, 0);
  fx::Array z = diff * fx::exp(-g.log_sigmas);
  fx::Array comp = fx::nn::log_softmax(g.alphas) - fx::sum(g.log_sigmas, -1) - 0.5 * fx::sum(z * z, -1);
  return fx::sum(fx::logsumexp(comp, -1));
}

/// MLP parameters and a batch of 256 inputs with one-hot labels (deterministic).
struct MlpData {
  Mlp p;
  fx::Array x, y;
  MlpData() {
    auto k = fx::random::key(0);
    p = {fx::random::normal(fx::random::fold_in(k, 1), {784, 512}) * 0.05f, fx::zeros({512}),
         fx::random::normal(fx::random::fold_in(k, 2), {512, 10}) * 0.05f, fx::zeros({10})};
    x = fx::random::normal(fx::random::fold_in(k, 3), {256, 784});
    y = fx::nn::one_hot(fx::random::randint(fx::random::fold_in(k, 4), {256}, 0, 10), 10);
  }
};

/// GMM parameters and 1000 points (deterministic).
struct GmmData {
  Gmm g;
  fx::Array x;
  GmmData() {
    auto k = fx::random::key(1);
    g = {fx::random::normal(fx::random::fold_in(k, 1), {25}), fx::random::normal(fx::random::fold_in(k, 2), {25, 10}),
         fx::random::normal(fx::random::fold_in(k, 3), {25, 10}) * 0.1f};
    x = fx::random::normal(fx::random::fold_in(k, 4), {1000, 10});
  }
};

}  // namespace bench
