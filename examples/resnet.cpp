// A ResNet (He et al.'s BasicBlocks with batch norm, CIFAR-style 3x3 stem) trained under fx::jit with
// SGD + Nesterov momentum, weight decay and a cosine schedule, in float32 or with a bfloat16
// compute policy (float32 master weights and batch-norm statistics).
//
//   build/examples/resnet [--depth 8|18] [--precision f32|bf16] [--epochs N] [--limit N] [--batch N]
//                         [--cifar DIR] [--min-accuracy A]
//
// Data: CIFAR-10's binary version when --cifar names a directory holding it (nothing is downloaded
// here); otherwise the real Fashion-MNIST (scripts/data.sh installs it) padded to 32x32, one channel.
// --depth 18 is ResNet-18 (64-128-256-512 features, two blocks per stage); the default, 8, is a small
// ResNet (16-32-64 features, one block per stage) that trains in minutes on a laptop-class CPU.
#include <fluxion.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "train_loop.h"

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

Config config(int depth) { return depth == 18 ? Config{{64, 128, 256, 512}, 2} : Config{{16, 32, 64}, 1}; }

std::pair<ResNet, ResNetState> init(const fx::Array& key, int64_t in_ch, const Config& c) {
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

std::pair<fx::Array, BlockState> block(const Block& b, const BlockState& s, const fx::Array& x, bool training) {
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
std::pair<fx::Array, ResNetState> forward(const ResNet& m, const ResNetState& s, const fx::Array& images,
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

}  // namespace example

namespace {

const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

struct Args {
  int depth = 8, epochs = 5;
  std::string precision = "f32", cifar;
  int64_t limit = 0, batch = 128;
  double min_accuracy = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--depth") a.depth = std::stoi(v);
    else if (k == "--precision") a.precision = v;
    else if (k == "--epochs") a.epochs = std::stoi(v);
    else if (k == "--limit") a.limit = std::stoll(v);
    else if (k == "--batch") a.batch = std::stoll(v);
    else if (k == "--cifar") a.cifar = v;
    else if (k == "--min-accuracy") a.min_accuracy = std::stod(v);
    else std::fprintf(stderr, "unknown option %s\n", k.c_str()), std::exit(2);
  }
  if ((a.depth != 8 && a.depth != 18) || (a.precision != "f32" && a.precision != "bf16"))
    std::fprintf(stderr, "resnet: --depth is 8 or 18, --precision f32 or bf16\n"), std::exit(2);
  return a;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// u8 images, [B, 28, 28] (Fashion-MNIST: padded by 2 on each side) or [B, 3, 32, 32] (CIFAR-10)
// -> standardised float NCHW [B, C, 32, 32].
fx::Array preprocess(const fx::Array& images) {
  fx::Array x = fx::astype(images, fx::float32) / 255.f;
  if (images.ndim() == 3) {
    x = (x - 0.2860f) / 0.3530f;
    return fx::pad(fx::reshape(x, {images.shape()[0], 1, 28, 28}), {{0, 0}, {0, 0}, {2, 2}, {2, 2}});
  }
  return (x - 0.4734f) / 0.2516f;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace example;
  Args args = parse(argc, argv);
  const bool cifar = !args.cifar.empty() && exists(args.cifar + "/test_batch.bin");
  if (!cifar && !exists(kFashionDir)) {
    std::fprintf(stderr, "resnet: neither CIFAR-10 (--cifar DIR) nor %s (scripts/data.sh) is here\n", kFashionDir);
    return 77;  // meson's "skipped"
  }
  auto train = cifar ? fx::data::cifar10_binary(args.cifar, "train") : fx::data::mnist_idx(kFashionDir, "train");
  auto test = cifar ? fx::data::cifar10_binary(args.cifar, "test") : fx::data::mnist_idx(kFashionDir, "test");
  if (args.limit > 0) train = train.slice(0, args.limit);
  const int64_t channels = cifar ? 3 : 1;
  auto key = fx::random::key(0);
  auto loader = fx::data::loader(train, args.batch, fx::data::shuffle(fx::random::fold_in(key, 100)),
                                 fx::data::drop_remainder(), fx::data::prefetch(2));
  const int64_t steps = loader.num_batches() * args.epochs;
  // SGD with Nesterov momentum and weight decay on the conv and dense weights (not on biases or
  // batch-norm parameters), learning rate 0.1 decayed by a cosine.
  auto opt = fx::optim::chain(fx::optim::add_decayed_weights(5e-4, fx::optim::matrices_only()),
                              fx::optim::sgd(fx::optim::cosine_decay(0.1, steps), 0.9, true));
  auto policy = fx::mixed_precision::policy(args.precision == "bf16" ? "params=float32,compute=bfloat16" : "params=float32,compute=float32");
  auto [model, bn] = init(key, channels, config(args.depth));
  fx::optim::State state = opt.init(model);
  std::printf("ResNet-%d on %s (%lld training images, %lld test, 32x32x%lld), %s compute, %d epochs, batch %lld\n",
              args.depth, cifar ? "CIFAR-10" : "Fashion-MNIST padded to 32x32", (long long)train.size(),
              (long long)test.size(), (long long)channels, args.precision.c_str(), args.epochs, (long long)args.batch);

  auto train_step = fx::jit([&](const ResNet& m, const ResNetState& s, const fx::optim::State& os,
                                const fx::Array& images, const fx::Array& labels) {
    fx::Array x = policy.cast_to_compute(preprocess(images));
    auto loss_fn = [&](const ResNet& p) {
      auto [logits, next] = forward(policy.cast_to_compute(p), s, x, true);
      return std::pair{fx::mean(nn::softmax_cross_entropy(logits, labels)), next};
    };
    auto [out, grads] = fx::value_and_grad(loss_fn, fx::has_aux)(m);
    auto [params, next_opt] = opt.step(grads, os, m);
    return std::tuple{params, out.second, next_opt, out.first};
  }, fx::donate_argnums(0, 1, 2));  // parameters, batch statistics and optimizer state updated in place
  auto correct = fx::jit([&](const ResNet& m, const ResNetState& s, const fx::Array& images, const fx::Array& labels) {
    auto [logits, unused] = forward(policy.cast_to_compute(m), s, policy.cast_to_compute(preprocess(images)), false);
    return fx::sum(fx::astype(fx::equal(fx::argmax(logits, 1), labels), fx::int32));
  });

  double accuracy = train_epochs(
      args.epochs, loader,
      [&](const fx::data::Batch& batch) {
        fx::Array loss;
        std::tie(model, bn, state, loss) = train_step(model, bn, state, batch.at("image"), batch.at("label"));
        return double(loss.item<float>());
      },
      [&] {
        int64_t right = 0;
        for (const auto& batch : fx::data::loader(test, 500))
          right += correct(model, bn, batch.at("image"), batch.at("label")).item<int32_t>();
        return double(right) / double(test.size());
      });
  return check_accuracy("resnet", accuracy, args.min_accuracy);
}
