// Deployment of the Fashion-MNIST convnet (issue 33): train it (examples/fashion_mnist_model.h),
// quantize it to int8 after training (calibration over a few training batches), prune 90% of its
// weights by magnitude on a schedule while fine-tuning, quantize the pruned model, and export that
// as an object file and a C header that a plain C program (examples/deploy_classify.c) links with
// libfluxion_aot_rt.a alone to classify images. Prints the test accuracy of each stage and the sizes.
//
//   build/examples/deploy [--epochs N] [--finetune-epochs N] [--limit N] [--test-limit N]
//                         [--sparsity S] [--calibration-batches N] [--out DIR] [--export-images N]
//
// --limit trains on the first N training images and --test-limit measures on the first N test
// images (the short run of examples/check_deploy.sh); --out writes the export there:
//   fmnist_int8.o, fmnist_int8.h   void fmnist_int8(const uint8_t* image, float* logits): one 28x28
//                                  image (raw bytes) -> 10 logits
//   test_images.u8, test_labels.u8 the first --export-images test images and labels, raw
//   expected.txt                   the class the exported function gives each, computed in process
#include <fluxion.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <sys/stat.h>

#include "fashion_mnist_model.h"
#include "train_loop.h"

namespace fx = fluxion;
using example::Cnn;

namespace {

struct Args {
  int epochs = 5, finetune_epochs = 3;
  int64_t limit = 0, test_limit = 0, batch = 128, export_images = 1000, calibration_batches = 8;
  double sparsity = 0.9;
  std::string out;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--epochs") a.epochs = std::stoi(v);
    else if (k == "--finetune-epochs") a.finetune_epochs = std::stoi(v);
    else if (k == "--limit") a.limit = std::stoll(v);
    else if (k == "--test-limit") a.test_limit = std::stoll(v);
    else if (k == "--sparsity") a.sparsity = std::stod(v);
    else if (k == "--out") a.out = v;
    else if (k == "--export-images") a.export_images = std::stoll(v);
    else if (k == "--calibration-batches") a.calibration_batches = std::stoll(v);
    else std::fprintf(stderr, "unknown option %s\n", k.c_str()), std::exit(2);
  }
  return a;
}

/// Trains `model` for `epochs` over `loader` with a fresh optimizer (peak learning rate `peak`).
/// With `sparsity` > 0 the weights are pruned by magnitude as training goes: every 20 steps the
/// masks are recomputed at the polynomial schedule's sparsity (reaching `sparsity` at two thirds of
/// the steps), and the parameters are multiplied by them after every step.
template <class Loader>
Cnn train(Cnn model, Loader& loader, const fx::data::Dataset& test, int epochs, double peak, float sparsity) {
  const int64_t steps = loader.num_batches() * epochs, prune_end = std::max<int64_t>(1, steps * 2 / 3);
  auto opt = example::optimizer(steps, peak);
  fx::optim::State state = opt.init(model);
  auto plain = example::step_fn<Cnn>(opt);
  auto step = fx::jit(
      [plain](const Cnn& m, const fx::optim::State& s, const Cnn& masks, const fx::Array& images, const fx::Array& labels) {
        auto [params, next, loss] = plain(m, s, images, labels);
        return std::tuple{fx::prune::apply(params, masks), next, loss};
      },
      fx::donate_argnums(1));  // the state in place; the model stays, the caller keeps the dense one
  auto logits = fx::jit([](const Cnn& m, const fx::Array& images) { return Cnn::logits(m, images); });
  Cnn masks = fx::prune::magnitude_masks(model, 0.f);
  int64_t n = 0;
  example::train_epochs(
      epochs, loader,
      [&](const fx::data::Batch& batch) {
        if (sparsity > 0 && n % 20 == 0)
          masks = fx::prune::magnitude_masks(model, fx::prune::polynomial_sparsity(n, 0, prune_end, sparsity));
        ++n;
        fx::Array loss;
        std::tie(model, state, loss) = step(model, state, masks, batch.at("image"), batch.at("label"));
        return double(loss.item<float>());
      },
      [&] { return example::accuracy([&](const fx::Array& images) { return logits(model, images); }, test); });
  if (sparsity > 0) model = fx::prune::apply(model, fx::prune::magnitude_masks(model, sparsity));
  return model;
}

/// int8 post-training quantization, calibrated on the first `batches` batches of the training set.
fx::quant::Quantized quantize(const Cnn& model, const fx::data::Dataset& train, int64_t batches, int64_t batch) {
  std::vector<fx::Array> calibration;
  for (int64_t b = 0; b < batches && (b + 1) * batch <= train.size(); ++b)
    calibration.push_back(train.slice(b * batch, (b + 1) * batch).at("image"));
  return fx::quant::quantize(Cnn::logits, model, fx::quant::calibrate(Cnn::logits, model, calibration));
}

double accuracy_of(const fx::quant::Quantized& q, const fx::data::Dataset& test) {
  auto jitted = fx::jit(q);
  return example::accuracy([&](const fx::Array& images) { return jitted(images); }, test);
}
double accuracy_of(const Cnn& model, const fx::data::Dataset& test) {
  auto logits = fx::jit([](const Cnn& m, const fx::Array& images) { return Cnn::logits(m, images); });
  return example::accuracy([&](const fx::Array& images) { return logits(model, images); }, test);
}

int64_t weight_bytes(const Cnn& model) {
  int64_t n = 0;
  for (const fx::Array& a : fx::tree::leaves(model)) n += a.ndim() >= 2 ? int64_t(a.aval().nbytes()) : 0;
  return n;
}
int64_t parameter_bytes(const Cnn& model) {
  int64_t n = 0;
  for (const fx::Array& a : fx::tree::leaves(model)) n += int64_t(a.aval().nbytes());
  return n;
}

/// The seconds since the previous call (the stages' times).
double lap() {
  static auto last = std::chrono::steady_clock::now();
  const auto now = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(now - std::exchange(last, now)).count();
}

void write_bytes(const std::string& path, const fx::Array& a) {
  const std::vector<uint8_t> v = fx::astype(a, fx::uint8).to_vector<uint8_t>();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size()));
}

/// The export of `q` for one image, the first `n` test images and labels, and the classes the
/// exported function gives them (computed here by the same function, batch 1).
void export_model(const fx::quant::Quantized& q, const fx::data::Dataset& test, int64_t n, const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  fx::Exported e = fx::export_(q, fx::AbstractArray{fx::Shape{1, 28, 28}, fx::uint8, false});
  e.write_object(dir + "/fmnist_int8.o");
  e.write_header(dir + "/fmnist_int8.h", "fmnist_int8");
  int64_t const_bytes = 0;
  for (const fx::Array& c : e.program().consts) const_bytes += int64_t(c.aval().nbytes());
  const fx::data::Dataset part = test.slice(0, std::min(n, test.size()));
  write_bytes(dir + "/test_images.u8", part.at("image"));
  write_bytes(dir + "/test_labels.u8", part.at("label"));
  auto one = fx::jit(q);
  std::ofstream expected(dir + "/expected.txt");
  for (int64_t i = 0; i < part.size(); ++i)
    expected << fx::argmax(one(part.slice(i, i + 1).at("image")), 1).to_vector<int32_t>()[0] << "\n";
  std::printf("exported to %s: fmnist_int8.o, fmnist_int8.h (%lld bytes of constants), %lld test images\n", dir.c_str(),
              (long long)const_bytes, (long long)part.size());
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  struct stat st {};
  if (::stat(example::kFashionMnistDir, &st) != 0) {
    std::fprintf(stderr, "deploy: %s is missing: run scripts/data.sh\n", example::kFashionMnistDir);
    return 77;  // meson's "skipped"
  }
  auto train_set = fx::data::mnist_idx(example::kFashionMnistDir, "train");
  auto test = fx::data::mnist_idx(example::kFashionMnistDir, "test");
  if (args.limit > 0) train_set = train_set.slice(0, args.limit);
  if (args.test_limit > 0) test = test.slice(0, args.test_limit);
  const fx::Array key = fx::random::key(0);
  auto loader = fx::data::loader(train_set, args.batch, fx::data::shuffle(fx::random::fold_in(key, 100)),
                                 fx::data::drop_remainder(), fx::data::prefetch(2));
  std::printf("Fashion-MNIST deployment: %s, %lld training images, %lld test images\n", Cnn::name,
              (long long)train_set.size(), (long long)test.size());

  lap();
  const Cnn dense = train(Cnn::init(key), loader, test, args.epochs, 2e-3, 0.f);
  const double a_f32 = accuracy_of(dense, test);
  std::printf("[training: %.1fs]\n", lap());
  const fx::quant::Quantized q = quantize(dense, train_set, args.calibration_batches, args.batch);
  const double a_int8 = accuracy_of(q, test);
  std::printf("[quantization (%lld calibration batches) and its test: %.1fs]\n", (long long)args.calibration_batches,
              lap());
  std::printf("pruning to %.0f%% while fine-tuning for %d epoch(s)\n", 100 * args.sparsity, args.finetune_epochs);
  const Cnn pruned = train(dense, loader, test, args.finetune_epochs, 5e-4, float(args.sparsity));
  const double a_pruned = accuracy_of(pruned, test);
  const fx::quant::Quantized qp = quantize(pruned, train_set, args.calibration_batches, args.batch);
  const double a_pruned_int8 = accuracy_of(qp, test);
  std::printf("[pruning, fine-tuning, quantization: %.1fs]\n", lap());
  std::printf("\n%-28s %9s %12s\n", "model", "accuracy", "parameters");
  std::printf("%-28s %8.2f%% %12lld bytes (weights %lld)\n", "float32", 100 * a_f32, (long long)parameter_bytes(dense),
              (long long)weight_bytes(dense));
  std::printf("%-28s %8.2f%% %12lld bytes\n", "int8 (post-training)", 100 * a_int8, (long long)q.parameter_bytes());
  std::printf("%-28s %8.2f%% %12s (sparsity %.3f)\n", "float32, pruned + fine-tuned", 100 * a_pruned, "",
              fx::prune::weight_sparsity(pruned));
  std::printf("%-28s %8.2f%% %12lld bytes\n", "int8, pruned", 100 * a_pruned_int8, (long long)qp.parameter_bytes());
  std::printf("int8 - float32: %+.2f points; pruned - dense: %+.2f points; weights %.2fx smaller as int8\n",
              100 * (a_int8 - a_f32), 100 * (a_pruned - a_f32),
              double(parameter_bytes(dense)) / double(q.parameter_bytes()));
  if (!args.out.empty()) export_model(qp, test, args.export_images, args.out);
  std::printf("[export: %.1fs]\n", lap());
  return 0;
}
