// A ResNet (He et al.'s BasicBlocks with batch norm, CIFAR-style 3x3 stem) trained under fx::jit with
// SGD + Nesterov momentum, weight decay and a cosine schedule, in float32 or with a bfloat16
// compute policy (float32 master weights and batch-norm statistics).
//
//   build/examples/resnet [--depth 8|18] [--precision f32|bf16] [--epochs N] [--limit N] [--batch N]
//                         [--cifar DIR] [--min-accuracy A] [--checkpoint FILE.safetensors [--stop-after N]]
//
// --checkpoint saves the parameters, batch statistics, optimizer state and epoch count after every
// epoch (atomically), and a run started with the same options and an existing FILE resumes from it:
// a ResNet-18 run to full accuracy takes hours on a 2-core machine and may span several sessions.
// --stop-after N ends the process after epoch N's checkpoint, as an interruption would (the resume
// test, examples/check_resume.sh, compares such a run resumed against an uninterrupted one).
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
#include <tuple>
#include <vector>

#include "resnet_model.h"
#include "train_loop.h"

namespace {

const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

struct Args {
  int depth = 8, epochs = 5, stop_after = 0;
  std::string precision = "f32", cifar, checkpoint;
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
    else if (k == "--checkpoint") a.checkpoint = v;
    else if (k == "--stop-after") a.stop_after = std::stoi(v);
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
    return example::train_step(opt, policy, m, s, os, preprocess(images), labels);
  }, fx::donate_argnums(0, 1, 2));  // parameters, batch statistics and optimizer state updated in place
  auto correct = fx::jit([&](const ResNet& m, const ResNetState& s, const fx::Array& images, const fx::Array& labels) {
    auto [logits, unused] = forward(policy.cast_to_compute(m), s, policy.cast_to_compute(preprocess(images)), false);
    return fx::sum(fx::astype(fx::equal(fx::argmax(logits, 1), labels), fx::int32));
  });

  // The checkpoint: every leaf of the run's state, and the number of epochs done.
  example::Resume resume;
  auto saved = [&](int32_t epochs_done) { return std::make_tuple(model, bn, state, fx::array({epochs_done})); };
  if (!args.checkpoint.empty()) {
    if (exists(args.checkpoint)) {
      fx::Array done;
      std::tie(model, bn, state, done) = fx::load(args.checkpoint, saved(0));
      resume.first_epoch = done.item<int32_t>() + 1;
      std::printf("resumed from %s after epoch %d\n", args.checkpoint.c_str(), resume.first_epoch - 1);
    }
    resume.after_epoch = [&](int epoch) {
      fx::save(args.checkpoint, saved(epoch));
      if (epoch == args.stop_after) std::printf("stopped after epoch %d (--stop-after)\n", epoch), std::exit(0);
    };
  }

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
      },
      resume);
  return check_accuracy("resnet", accuracy, args.min_accuracy);
}
