// The models the benchmarks share: a 2-layer MLP classification loss (batched, and for one example),
// a GMM log-likelihood (diagonal covariances) and an RNN scan, with the standard problem sizes of
// the issues (MLP batch 256, 784-512-10; GMM d=10, K=25, n=1000).
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

/// The loss of one example (x[784], one-hot y[10]): what per-example gradients differentiate.
inline fx::Array mlp_example_loss(const Mlp& p, const fx::Array& x, const fx::Array& y) {
  fx::Array h = fx::nn::relu(fx::matmul(x, p.w1) + p.b1);
  return -fx::sum(fx::nn::log_softmax(fx::matmul(h, p.w2) + p.b2) * y);
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

/// An RNN cell h = tanh(W h + U x_t + b) scanned over xs; the loss is sum(h_T) + mean(h_1..h_T).
struct RnnCell {
  fx::Array w, u, b;
};
FLUXION_TREE(RnnCell, w, u, b);

inline fx::Array rnn_loss(const RnnCell& p, const fx::Array& h0, const fx::Array& xs) {
  auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
    fx::Array n = fx::tanh(fx::matmul(p.w, c) + fx::matmul(p.u, x) + p.b);
    return std::pair{n, n};
  }, h0, xs);
  return fx::sum(h) + fx::mean(ys);
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
