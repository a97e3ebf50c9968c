// Fashion-MNIST with Fluxion: a classifier trained under fx::jit with AdamW and a warmup + cosine
// learning-rate schedule, on the real data (Debian's dataset-fashion-mnist; scripts/data.sh installs
// it), printing the loss and the test accuracy per epoch with a progress bar.
//
//   build/examples/fashion_mnist [--model cnn|mlp] [--epochs N] [--limit N] [--batch N] [--min-accuracy A]
//                                [--save FILE] [--logdir DIR]
//
// --model picks the convnet (the default: conv-relu-pool twice, then two dense layers) or a multilayer
// perceptron; --limit trains on the first N training images (the short runs in the test suite),
// --min-accuracy makes the exit status fail below a test accuracy. --logdir writes a TensorBoard run
// there (fx::summary::writer; docs/tensorboard.md): the training loss of every step, the test
// accuracy of every epoch, histograms of the parameters, eight test images and the train step's
// program; `tensorboard --logdir DIR` shows them.
#include <fluxion.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <sys/stat.h>

#include "fashion_mnist_model.h"
#include "train_loop.h"

namespace fx = fluxion;

namespace {

struct Args {
  std::string model = "cnn";
  int epochs = 10;
  int64_t limit = 0, batch = 128;
  double min_accuracy = 0;
  std::string save;
  std::string logdir;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") a.model = v;
    else if (k == "--epochs") a.epochs = std::stoi(v);
    else if (k == "--limit") a.limit = std::stoll(v);
    else if (k == "--batch") a.batch = std::stoll(v);
    else if (k == "--min-accuracy") a.min_accuracy = std::stod(v);
    else if (k == "--save") a.save = v;
    else if (k == "--logdir") a.logdir = v;
    else std::fprintf(stderr, "unknown option %s\n", k.c_str()), std::exit(2);
  }
  return a;
}

/// The run's first records: eight test images side by side, and the train step's program.
fx::summary::writer log_start(const std::string& dir, const fx::data::Dataset& test, const fx::Program& step) {
  fx::summary::writer tb(dir, /*flush_seconds=*/5);
  const fx::Array images = test.slice(0, 8).at("image");  // u8[8,28,28]
  tb.image("test/images", fx::reshape(fx::transpose(images, {1, 0, 2}), {28, 8 * 28}), 0);
  tb.graph(step);
  std::printf("TensorBoard: %s (tensorboard --logdir %s)\n", tb.path().c_str(), dir.c_str());
  return tb;
}

/// After each epoch: the test accuracy at the step reached, and each parameter's histogram.
template <class Model>
void log_epoch(fx::summary::writer& tb, int epoch, int64_t step, double accuracy, const Model& model) {
  tb.scalar("test/accuracy", accuracy, step);
  tb.scalar("epoch", epoch, step);
  std::vector<fx::Array> leaves = fx::tree::leaves(model);
  for (size_t i = 0; i < leaves.size(); ++i) tb.histogram("params/" + std::to_string(i), leaves[i], step);
}

template <class Model>
int run(const Args& args) {
  auto train = fx::data::mnist_idx(example::kFashionMnistDir, "train");
  auto test = fx::data::mnist_idx(example::kFashionMnistDir, "test");
  if (args.limit > 0) train = train.slice(0, args.limit);
  auto key = fx::random::key(0);
  auto loader = fx::data::loader(train, args.batch, fx::data::shuffle(fx::random::fold_in(key, 100)),
                                 fx::data::drop_remainder(), fx::data::prefetch(2));
  const int64_t steps = loader.num_batches() * args.epochs;
  auto opt = example::optimizer(steps);
  Model model = Model::init(key);
  fx::optim::State state = opt.init(model);
  std::printf("Fashion-MNIST: %lld training images, %lld test; %s, %d epochs, batch %lld\n", (long long)train.size(),
              (long long)test.size(), Model::name, args.epochs, (long long)args.batch);

  auto step_fn = example::step_fn<Model>(opt);
  // the model and the optimizer state are updated in their own buffers
  auto train_step = fx::jit(step_fn, fx::donate_argnums(0, 1));
  auto logits = fx::jit([](const Model& m, const fx::Array& images) { return Model::logits(m, images); });

  // TensorBoard (--logdir): records are buffered and written every 5 s, and when the run ends.
  std::optional<fx::summary::writer> tb;
  if (!args.logdir.empty()) {
    const fx::data::Dataset first = test.slice(0, args.batch);  // a batch's shapes, for tracing the step
    tb = log_start(args.logdir, test, fx::make_ir(step_fn)(model, state, first.at("image"), first.at("label")));
  }
  int64_t step = 0;
  int epoch = 0;
  double accuracy = example::train_epochs(
      args.epochs, loader,
      [&](const fx::data::Batch& batch) {
        fx::Array loss;
        std::tie(model, state, loss) = train_step(model, state, batch.at("image"), batch.at("label"));
        if (tb) tb->scalar("train/loss", loss, step);
        ++step;
        return double(loss.item<float>());
      },
      [&] {
        const double acc = example::accuracy([&](const fx::Array& images) { return logits(model, images); }, test);
        if (tb) log_epoch(*tb, ++epoch, step, acc, model);
        return acc;
      });
  std::printf("%d compilation(s) of the train step\n", int(train_step.compilations()));
  if (!args.save.empty()) fx::save(args.save, model);
  return example::check_accuracy("fashion_mnist", accuracy, args.min_accuracy);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  struct stat st {};
  if (::stat(example::kFashionMnistDir, &st) != 0) {
    std::fprintf(stderr, "fashion_mnist: %s is missing: run scripts/data.sh\n", example::kFashionMnistDir);
    return 77;  // meson's "skipped"
  }
  if (args.model == "cnn") return run<example::Cnn>(args);
  if (args.model == "mlp") return run<example::Mlp>(args);
  std::fprintf(stderr, "fashion_mnist: --model must be cnn or mlp, not %s\n", args.model.c_str());
  return 2;
}
