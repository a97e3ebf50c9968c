// The Fashion-MNIST models and their training pieces, shared by examples/fashion_mnist.cpp (train and
// log) and examples/deploy.cpp (train, quantize, prune, export): the input standardisation, the
// MLP and the convnet, the optimizer, the train step and the test accuracy.
#pragma once
#include <fluxion.h>

#include <cstdint>
#include <tuple>

namespace example {
namespace fx = fluxion;
namespace nn = fx::nn;

/// Where scripts/data.sh installs the data (Debian's dataset-fashion-mnist).
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// u8 images [B, 28, 28] -> standardised float32 (the training set's mean and std).
inline fx::Array standardise(const fx::Array& images) {
  return (fx::astype(images, fx::float32) / 255.f - 0.2860f) / 0.3530f;
}

struct Mlp {
  nn::Linear l1, l2, l3;
  static constexpr const char* name = "MLP 784-512-256-10";
  static Mlp init(const fx::Array& key) {
    return Mlp{nn::Linear::init(fx::random::fold_in(key, 1), 784, 512),
               nn::Linear::init(fx::random::fold_in(key, 2), 512, 256),
               nn::Linear::init(fx::random::fold_in(key, 3), 256, 10)};
  }
  static fx::Array logits(const Mlp& m, const fx::Array& images) {
    fx::Array h = nn::relu(nn::Linear::apply(m.l1, fx::reshape(standardise(images), {images.shape()[0], 784})));
    h = nn::relu(nn::Linear::apply(m.l2, h));
    return nn::Linear::apply(m.l3, h);
  }
};
FLUXION_TREE(Mlp, l1, l2, l3);

// NCHW throughout: [B, 1, 28, 28] -> conv 3x3 32, relu, max pool 2 -> [B, 32, 14, 14] -> conv 3x3 64,
// relu, max pool 2 -> [B, 64, 7, 7] -> dense 128, relu -> dense 10.
struct Cnn {
  nn::Conv c1, c2;
  nn::Linear l1, l2;
  static constexpr const char* name = "convnet conv32-pool-conv64-pool-128-10";
  static Cnn init(const fx::Array& key) {
    auto he = nn::initializers::he_normal(1, 0);  // relu layers: He's variance over the OIHW fans
    return Cnn{nn::Conv::init(fx::random::fold_in(key, 1), 1, 32, {3, 3}, 1, false, he),
               nn::Conv::init(fx::random::fold_in(key, 2), 32, 64, {3, 3}, 1, false, he),
               nn::Linear::init(fx::random::fold_in(key, 3), 64 * 7 * 7, 128, nn::initializers::he_normal()),
               nn::Linear::init(fx::random::fold_in(key, 4), 128, 10)};
  }
  static fx::Array logits(const Cnn& m, const fx::Array& images) {
    const int64_t b = images.shape()[0];
    fx::Array h = fx::reshape(standardise(images), {b, 1, 28, 28});
    h = nn::max_pool(nn::relu(nn::Conv::apply(m.c1, h, {1, 1}, "SAME")), {2, 2});
    h = nn::max_pool(nn::relu(nn::Conv::apply(m.c2, h, {1, 1}, "SAME")), {2, 2});
    h = nn::relu(nn::Linear::apply(m.l1, fx::reshape(h, {b, 64 * 7 * 7})));
    return nn::Linear::apply(m.l2, h);
  }
};
FLUXION_TREE(Cnn, c1, c2, l1, l2);

/// AdamW (weight decay on the matrices) with a linear warmup over the first 5% of `steps` to `peak`,
/// then a cosine decay to 1e-5.
inline fx::optim::GradientTransformation optimizer(int64_t steps, double peak = 2e-3) {
  return fx::optim::adamw(fx::optim::warmup_cosine_decay(0.0, peak, steps / 20, steps, 1e-5), 1e-4, 0.9, 0.999, 1e-8,
                          fx::optim::matrices_only());
}

/// One step of softmax cross-entropy training: (model, optimizer state, images, labels) -> (model,
/// state, loss). Jit it (fx::jit(step_fn, fx::donate_argnums(0, 1)) updates both in place).
template <class Model>
auto step_fn(fx::optim::GradientTransformation opt) {
  return [opt](const Model& m, const fx::optim::State& s, const fx::Array& images, const fx::Array& labels) {
    auto loss_fn = [&](const Model& p) { return fx::mean(fx::nn::softmax_cross_entropy(Model::logits(p, images), labels)); };
    auto [loss, grads] = fx::value_and_grad(loss_fn)(m);
    auto [params, next] = opt.step(grads, s, m);  // update + apply_updates, fused per parameter
    return std::tuple{params, next, loss};
  };
}

/// The fraction of `test` that `logits(images)` classifies right, in batches of `batch`.
template <class Logits>
double accuracy(Logits&& logits, const fx::data::Dataset& test, int64_t batch = 1000) {
  int64_t right = 0;
  for (const auto& b : fx::data::loader(test, batch)) {
    const fx::Array predicted = fx::argmax(logits(b.at("image")), 1);
    right += fx::sum(fx::astype(fx::equal(predicted, b.at("label")), fx::int32)).template item<int32_t>();
  }
  return double(right) / double(test.size());
}

}  // namespace example
