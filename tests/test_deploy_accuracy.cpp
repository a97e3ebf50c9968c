// int8 post-training quantization of the Fashion-MNIST convnet (examples/fashion_mnist_model.h) on
// the real data (issue 33), at a test's size: trained for one epoch on 4096 images, quantized with
// calibration over two training batches, measured on the first 1000 test images against its float32
// self. Skipped where the data is not installed (scripts/data.sh).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <sys/stat.h>

#include <cmath>

#include "examples/fashion_mnist_model.h"

namespace fx = fluxion;
using example::Cnn;

TEST_CASE("deploy: the int8 convnet's Fashion-MNIST accuracy stays within 1.5 points of float32's") {
  struct stat st {};
  if (::stat(example::kFashionMnistDir, &st) != 0) {
    MESSAGE("skipped: no Fashion-MNIST at " << example::kFashionMnistDir << " (scripts/data.sh)");
    return;
  }
  const fx::data::Dataset train = fx::data::mnist_idx(example::kFashionMnistDir, "train").slice(0, 4096);
  const fx::data::Dataset test = fx::data::mnist_idx(example::kFashionMnistDir, "test").slice(0, 1000);
  const fx::Array key = fx::random::key(0);
  auto loader = fx::data::loader(train, 128, fx::data::shuffle(fx::random::fold_in(key, 100)), fx::data::drop_remainder());
  const auto opt = example::optimizer(loader.num_batches());
  auto step = fx::jit(example::step_fn<Cnn>(opt), fx::donate_argnums(0, 1));
  Cnn model = Cnn::init(key);
  fx::optim::State state = opt.init(model);
  for (const auto& batch : loader) std::tie(model, state, std::ignore) = step(model, state, batch.at("image"), batch.at("label"));

  const fx::quant::Quantized q = fx::quant::quantize(
      Cnn::logits, model,
      fx::quant::calibrate(Cnn::logits, model, {train.slice(0, 128).at("image"), train.slice(128, 256).at("image")}));
  auto float_logits = fx::jit([](const Cnn& m, const fx::Array& images) { return Cnn::logits(m, images); });
  auto int8_logits = fx::jit(q);
  const fx::Array images = test.at("image");
  const fx::Array f32 = fx::argmax(float_logits(model, images), 1), i8 = fx::argmax(int8_logits(images), 1);
  auto accuracy = [&](const fx::Array& predicted) {
    return fx::mean(fx::astype(fx::equal(predicted, test.at("label")), fx::float32)).item<float>();
  };
  const double a_f32 = accuracy(f32), a_int8 = accuracy(i8);
  const double agree = fx::mean(fx::astype(fx::equal(f32, i8), fx::float32)).item<float>();
  INFO("float32 " << a_f32 << ", int8 " << a_int8 << ", the same class for " << agree);
  CHECK(a_f32 > 0.6);  // trained: one short epoch reaches about 0.7
  CHECK(std::abs(a_int8 - a_f32) <= 0.015);
  CHECK(agree >= 0.97);
}
