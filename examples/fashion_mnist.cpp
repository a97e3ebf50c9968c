// Fashion-MNIST with Fluxion: a classifier trained under fx::jit with AdamW and a warmup + cosine
// learning-rate schedule, on the real data (Debian's dataset-fashion-mnist; scripts/data.sh installs
// it), printing the loss and the test accuracy per epoch with a progress bar.
//
//   build/examples/fashion_mnist [--epochs N] [--limit N] [--batch N] [--min-accuracy A] [--save FILE]
//
// --limit trains on the first N training images (the short run in the test suite), --min-accuracy
// makes the exit status fail below a test accuracy. The model is a multilayer perceptron for now:
// the convnet replaces it once the convolution primitive lands (docs/training.md).
#include <fluxion.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>

namespace fx = fluxion;

namespace example {
struct Model {
  fx::nn::Linear l1, l2, l3;
};
FLUXION_TREE(Model, l1, l2, l3);
}  // namespace example
using example::Model;

namespace {

const char* kDataDir = "/usr/share/datasets/fashion-mnist";

struct Args {
  int epochs = 10;
  int64_t limit = 0, batch = 128;
  double min_accuracy = 0;
  std::string save;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--epochs") a.epochs = std::stoi(v);
    else if (k == "--limit") a.limit = std::stoll(v);
    else if (k == "--batch") a.batch = std::stoll(v);
    else if (k == "--min-accuracy") a.min_accuracy = std::stod(v);
    else if (k == "--save") a.save = v;
    else std::fprintf(stderr, "unknown option %s\n", k.c_str()), std::exit(2);
  }
  return a;
}

Model init_model(const fx::Array& key) {
  return Model{fx::nn::Linear::init(fx::random::fold_in(key, 1), 784, 512),
               fx::nn::Linear::init(fx::random::fold_in(key, 2), 512, 256),
               fx::nn::Linear::init(fx::random::fold_in(key, 3), 256, 10)};
}

// u8 images [B, 28, 28] -> standardised float32 rows [B, 784] (the training set's mean and std).
fx::Array preprocess(const fx::Array& images) {
  fx::Array x = fx::reshape(fx::astype(images, fx::float32), {images.shape()[0], 784});
  return (x / 255.f - 0.2860f) / 0.3530f;
}

fx::Array logits(const Model& m, const fx::Array& images) {
  fx::Array h = fx::nn::relu(fx::nn::Linear::apply(m.l1, preprocess(images)));
  h = fx::nn::relu(fx::nn::Linear::apply(m.l2, h));
  return fx::nn::Linear::apply(m.l3, h);
}

void progress(int64_t done, int64_t total, double loss, double seconds) {
  const int width = 30;
  int filled = int(width * done / total);
  std::printf("\r  [%.*s%s%*s] %4lld/%lld  loss %.4f  %.1fs", filled, "==============================",
              filled < width ? ">" : "", width - filled - (filled < width), "", (long long)done, (long long)total, loss,
              seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  struct stat st {};
  if (::stat(kDataDir, &st) != 0) {
    std::fprintf(stderr, "fashion_mnist: %s is missing: run scripts/data.sh\n", kDataDir);
    return 77;  // meson's "skipped"
  }
  auto train = fx::data::mnist_idx(kDataDir, "train");
  auto test = fx::data::mnist_idx(kDataDir, "test");
  if (args.limit > 0) train = train.slice(0, args.limit);
  auto key = fx::random::key(0);
  auto loader = fx::data::loader(train, args.batch, fx::data::shuffle(fx::random::fold_in(key, 100)),
                                 fx::data::drop_remainder(), fx::data::prefetch(2));
  const int64_t steps = loader.num_batches() * args.epochs;
  auto opt = fx::optim::adamw(fx::optim::warmup_cosine_decay(0.0, 2e-3, steps / 20, steps, 1e-5), 1e-4, 0.9, 0.999,
                              1e-8, fx::optim::matrices_only());
  Model model = init_model(key);
  fx::optim::State state = opt.init(model);
  std::printf("Fashion-MNIST: %lld training images, %lld test; MLP 784-512-256-10, %d epochs, batch %lld\n",
              (long long)train.size(), (long long)test.size(), args.epochs, (long long)args.batch);

  auto train_step = fx::jit([&](const Model& m, const fx::optim::State& s, const fx::Array& images,
                                const fx::Array& labels) {
    auto loss_fn = [&](const Model& p) { return fx::mean(fx::nn::softmax_cross_entropy(logits(p, images), labels)); };
    auto [loss, grads] = fx::value_and_grad(loss_fn)(m);
    auto [params, next] = opt.step(grads, s, m);  // update + apply_updates, fused per parameter
    return std::tuple{params, next, loss};
  });
  auto correct = fx::jit([](const Model& m, const fx::Array& images, const fx::Array& labels) {
    return fx::sum(fx::astype(fx::equal(fx::argmax(logits(m, images), 1), labels), fx::int32));
  });

  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double accuracy = 0;
  for (int epoch = 1; epoch <= args.epochs; ++epoch) {
    std::printf("epoch %d/%d\n", epoch, args.epochs);
    double loss_sum = 0;
    int64_t n = 0;
    for (const auto& batch : loader) {
      fx::Array loss;
      std::tie(model, state, loss) = train_step(model, state, batch.at("image"), batch.at("label"));
      loss_sum += loss.item<float>();
      if (++n % 20 == 0 || n == loader.num_batches()) progress(n, loader.num_batches(), loss_sum / double(n), seconds());
    }
    int64_t right = 0;
    for (const auto& batch : fx::data::loader(test, 1000))
      right += correct(model, batch.at("image"), batch.at("label")).item<int32_t>();
    accuracy = double(right) / double(test.size());
    std::printf("\n  epoch %d: train loss %.4f, test accuracy %.2f%%, %.1fs\n", epoch, loss_sum / double(n),
                100 * accuracy, seconds());
  }
  std::printf("final test accuracy %.2f%% after %.1fs (%d compilation(s) of the train step)\n", 100 * accuracy,
              seconds(), int(train_step.compilations()));
  if (!args.save.empty()) fx::save(args.save, model);
  if (accuracy < args.min_accuracy) {
    std::fprintf(stderr, "fashion_mnist: accuracy %.4f is below --min-accuracy %.4f\n", accuracy, args.min_accuracy);
    return 1;
  }
  return 0;
}
