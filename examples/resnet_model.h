// The ResNets of examples/resnet.cpp (He et al.'s BasicBlocks with batch norm, CIFAR-style 3x3
// stem) and their training step, shared with the ResNet-18 row of bench/bench_peers.cpp.
#pragma once
#include <fluxion.h>

#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace fx = fluxion;

namespace example {
namespace nn = fx::nn;
using BnState = nn::BatchNorm::State;

// conv3x3-bn-relu-conv3x3-bn, plus the input (through a strided 1x1 conv and bn when the shape changes).
struct Block {
  nn::Conv c1, c2;
  nn::BatchNorm b1, b2;
  std::optional<nn::Conv> proj;
  std::optional<nn::BatchNorm> proj_bn;
  int64_t stride = 1;  // static
};
FLUXION_TREE(Block, c1, c2, b1, b2, proj, proj_bn, stride);

struct BlockState {
  BnState s1, s2;
  std::optional<BnState> proj;
};
FLUXION_TREE(BlockState, s1, s2, proj);

struct ResNet {
  nn::Conv stem;
  nn::BatchNorm stem_bn;
  std::vector<Block> blocks;
  nn::Linear head;
};
FLUXION_TREE(ResNet, stem, stem_bn, blocks, head);

struct ResNetState {
  BnState stem;
  std::vector<BlockState> blocks;
};
FLUXION_TREE(ResNetState, stem, blocks);

struct Config {
  std::vector<int64_t> widths;
  int64_t blocks_per_stage;
};

inline Config config(int depth) { return depth == 18 ? Config{{64, 128, 256, 512}, 2} : Config{{16, 32, 64}, 1}; }

inline std::pair<ResNet, ResNetState> init(const fx::Array& key, int64_t in_ch, const Config& c) {
  auto he = nn::initializers::variance_scaling(2.0, nn::initializers::FanMode::fan_out,
                                                nn::initializers::Distribution::normal, 1, 0);  // torchvision's
  int64_t k = 0, features = c.widths[0];
  auto conv = [&](int64_t in, int64_t out, int64_t size) {
    return nn::Conv::init(fx::random::fold_in(key, ++k), in, out, {size, size}, 1, false, he);
  };
  ResNet m{conv(in_ch, features, 3), nn::BatchNorm::init(features), {}, {}};
  ResNetState s{nn::BatchNorm::init_state(features), {}};
  for (size_t stage = 0; stage < c.widths.size(); ++stage)
    for (int64_t i = 0; i < c.blocks_per_stage; ++i) {
      const int64_t out = c.widths[stage], stride = stage > 0 && i == 0 ? 2 : 1;
      Block b{conv(features, out, 3), conv(out, out, 3), nn::BatchNorm::init(out), nn::BatchNorm::init(out), {}, {},
              stride};
      BlockState bs{nn::BatchNorm::init_state(out), nn::BatchNorm::init_state(out), {}};
      if (stride != 1 || features != out) {
        b.proj = conv(features, out, 1);
        b.proj_bn = nn::BatchNorm::init(out);
        bs.proj = nn::BatchNorm::init_state(out);
      }
      m.blocks.push_back(b);
      s.blocks.push_back(bs);
      features = out;
    }
  m.head = nn::Linear::init(fx::random::fold_in(key, ++k), features, 10);
  return {m, s};
}

inline std::pair<fx::Array, BlockState> block(const Block& b, const BlockState& s, const fx::Array& x, bool training) {
  const fx::IntList strides{b.stride, b.stride};
  auto [h, s1] = nn::BatchNorm::apply(b.b1, s.s1, nn::Conv::apply(b.c1, x, strides, "SAME"), training);
  auto [h2, s2] = nn::BatchNorm::apply(b.b2, s.s2, nn::Conv::apply(b.c2, nn::relu(h), {1, 1}, "SAME"), training);
  BlockState next{s1, s2, {}};
  fx::Array shortcut = x;
  if (b.proj) {
    auto [p, sp] = nn::BatchNorm::apply(*b.proj_bn, *s.proj, nn::Conv::apply(*b.proj, x, strides, "VALID"), training);
    shortcut = p;
    next.proj = sp;
  }
  return {nn::relu(h2 + shortcut), next};
}

// images: float NCHW [B, C, 32, 32] in the compute dtype -> float32 logits and the next state.
inline std::pair<fx::Array, ResNetState> forward(const ResNet& m, const ResNetState& s, const fx::Array& images,
                                          bool training) {
  auto [h, stem] = nn::BatchNorm::apply(m.stem_bn, s.stem, nn::Conv::apply(m.stem, images, {1, 1}, "SAME"), training);
  ResNetState next{stem, {}};
  h = nn::relu(h);
  for (size_t i = 0; i < m.blocks.size(); ++i) {
    auto [out, bs] = block(m.blocks[i], s.blocks[i], h, training);
    h = out;
    next.blocks.push_back(bs);
  }
  fx::Array pooled = fx::mean(h, {2, 3});  // global average pooling
  return {fx::astype(nn::Linear::apply(m.head, pooled), fx::float32), next};
}


// The benchmarked step's optimizer (bench_peers' resnet rows, bench_compile's resnet section): SGD
// with momentum 0.9, learning rate 0.1 and weight decay 5e-4 on the conv and dense weights; and its
// precision policy: float32 master weights, computing in float32 or bfloat16.
inline fx::optim::GradientTransformation benchmark_optimizer() {
  return fx::optim::chain(fx::optim::add_decayed_weights(5e-4, fx::optim::matrices_only()), fx::optim::sgd(0.1, 0.9));
}
inline fx::mixed_precision::Policy benchmark_policy(bool bf16) {
  return fx::mixed_precision::policy(bf16 ? "params=float32,compute=bfloat16" : "params=float32,compute=float32");
}

// One training step of the classifier: the mean softmax cross-entropy of the logits in the policy's
// compute dtype (float32 master weights cast on the way in), its gradients and the optimizer's
// update. Returns the new parameters, batch statistics, optimizer state and the loss.
inline std::tuple<ResNet, ResNetState, fx::optim::State, fx::Array> train_step(
    const fx::optim::GradientTransformation& opt, const fx::mixed_precision::Policy& policy, const ResNet& m,
    const ResNetState& s, const fx::optim::State& os, const fx::Array& images, const fx::Array& labels) {
  const fx::Array x = policy.cast_to_compute(images);
  auto loss_fn = [&](const ResNet& p) {
    auto [logits, next] = forward(policy.cast_to_compute(p), s, x, true);
    return std::pair{fx::mean(nn::softmax_cross_entropy(logits, labels)), next};
  };
  auto [out, grads] = fx::value_and_grad(loss_fn, fx::has_aux)(m);
  auto [params, next_opt] = opt.step(grads, os, m);
  return {params, out.second, next_opt, out.first};
}

}  // namespace example
