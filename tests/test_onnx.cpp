// fx::onnx::export_: models run by onnxruntime (Python, from PyPI) against Fluxion's results. The
// test is skipped, not passed, where `$FLUXION_TEST_PYTHON -c "import onnxruntime"` fails (the
// interpreter scripts/onnxruntime.sh installs it into; python3 when the variable is not set).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/export_helpers.h"
#include "tests/quant_net.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {

using export_helpers::have_onnxruntime;
using export_helpers::python;

// Runs `model` with onnxruntime on float32 inputs; returns out0 as floats (empty on failure).
std::vector<float> run_onnxruntime(const std::string& model, const std::vector<fx::Array>& inputs) {
  const std::filesystem::path dir = std::filesystem::path(model).parent_path();
  std::string feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string file = (dir / ("in" + std::to_string(i) + ".bin")).string();
    std::ofstream(file, std::ios::binary)
        .write(static_cast<const char*>(inputs[i].data()), std::streamsize(inputs[i].aval().nbytes()));
    std::string shape;
    for (int64_t d : inputs[i].shape()) shape += std::to_string(d) + ",";
    feeds += "'in" + std::to_string(i) + "': np.fromfile('" + file + "', dtype=np.float32).reshape((" + shape + ")),";
  }
  const std::string out = (dir / "out0.bin").string();
  const std::string script = "import numpy as np, onnxruntime as ort\n"
                             "s = ort.InferenceSession('" + model + "', providers=['CPUExecutionProvider'])\n"
                             "y = s.run(['out0'], {" + feeds + "})[0]\n"
                             "np.asarray(y, dtype=np.float32).tofile('" + out + "')\n";
  std::ofstream((dir / "run.py").string()) << script;
  if (std::system((python() + " " + (dir / "run.py").string() + " >" + (dir / "log.txt").string() + " 2>&1").c_str()) != 0) {
    std::ifstream log((dir / "log.txt").string());
    MESSAGE(std::string(std::istreambuf_iterator<char>(log), {}));
    return {};
  }
  std::ifstream in(out, std::ios::binary | std::ios::ate);
  std::vector<float> y(size_t(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(y.data()), std::streamsize(y.size() * sizeof(float)));
  return y;
}

using test_helpers::ramp;

void check_same(const std::vector<float>& got, const fx::Array& want) {
  const std::vector<float> w = want.to_vector<float>();
  REQUIRE(got.size() == w.size());
  for (size_t i = 0; i < w.size(); ++i) CHECK(got[i] == doctest::Approx(w[i]).epsilon(1e-5));
}

std::filesystem::path fresh_dir() {
  auto d = std::filesystem::temp_directory_path() / ("fluxion-onnx-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

double max_abs_diff(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double m = 0;
  for (size_t i = 0; i < got.size(); ++i) m = std::max(m, double(std::abs(got[i] - want[i])));
  return m;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float f : v) m = std::max(m, double(std::abs(f)));
  return m;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("onnx: a quantized convnet is written in QDQ form and runs in onnxruntime" * doctest::skip(!have_onnxruntime())) {
  const ExportNet net = quant_net::net_init();
  std::vector<fx::Array> calib;
  for (uint32_t i = 0; i < 3; ++i) calib.push_back(fx::random::normal(fx::random::key(60 + i), quant_net::kInput));
  const fx::quant::Quantized q = fx::quant::quantize(quant_net::net_forward, net, fx::quant::calibrate(quant_net::net_forward, net, calib));
  REQUIRE(q.layer_count() == 3);
  const auto dir = fresh_dir();
  const fx::Array x = fx::random::normal(fx::random::key(70), quant_net::kInput);
  const std::string model = (dir / "qdq.onnx").string(), dense = (dir / "f32.onnx").string();
  fx::onnx::export_(q, x, model);
  fx::onnx::export_([&](const fx::Array& a) { return quant_net::net_forward(net, a); }, x, dense);
  const std::string bytes = file_bytes(model);
  CHECK(bytes.find("QuantizeLinear") != std::string::npos);
  CHECK(bytes.find("DequantizeLinear") != std::string::npos);
  // The weights are int8 initializers (a quarter of the float bytes; the scales, zero points and
  // the nodes around them take the rest of this small model's file).
  CHECK(double(bytes.size()) < 0.5 * double(file_bytes(dense).size()));

  const std::vector<float> got = run_onnxruntime(model, {x});
  const std::vector<float> want = q(x).to_vector<float>(), f32 = quant_net::net_forward(net, x).to_vector<float>();
  MESSAGE("QDQ in onnxruntime vs the Quantized: max |diff| " << max_abs_diff(got, want) << " of max |y| " << max_abs(want)
                                                             << "; vs float32 " << max_abs_diff(got, f32));
  // The same integers times the same scales, summed in float where the Quantized sums in int32: equal
  // to float rounding, except where that rounding moves a later layer's activation across a
  // rounding boundary (one int8 step of it): 1% of the largest output bounds that.
  CHECK(max_abs_diff(got, want) <= 0.01 * max_abs(want));
  size_t close = 0;
  for (size_t i = 0; i < got.size(); ++i) close += std::abs(got[i] - want[i]) <= 1e-4 * max_abs(want);
  CHECK(close >= got.size() * 9 / 10);
  // And int8 is near float32.
  CHECK(max_abs_diff(got, f32) <= 0.05 * max_abs(f32));

  std::filesystem::remove_all(dir);
}

TEST_CASE("onnx: a quantized MLP exported with polymorphic_shapes runs in onnxruntime at any batch" *
          doctest::skip(!have_onnxruntime())) {
  // (Convolutions have no symbolic shape rule yet, docs/shape_polymorphism.md: a convnet exports
  // for one batch size.)
  const fx::Array key = fx::random::key(6);
  const std::vector<fx::nn::Linear> mlp{fx::nn::Linear::init(fx::random::fold_in(key, 1), 16, 32),
                                        fx::nn::Linear::init(fx::random::fold_in(key, 2), 32, 4)};
  auto forward = [](const std::vector<fx::nn::Linear>& m, const fx::Array& x) {
    return fx::nn::Linear::apply(m[1], fx::nn::relu(fx::nn::Linear::apply(m[0], x)));
  };
  const fx::quant::Quantized q =
      fx::quant::quantize(forward, mlp, fx::quant::calibrate(forward, mlp, {fx::random::normal(key, fx::Shape{32, 16})}));
  REQUIRE(q.layer_count() == 2);
  const auto dir = fresh_dir();
  const std::string model = (dir / "qdq_poly.onnx").string();
  fx::onnx::export_(q, fx::polymorphic_shapes("b, 16"), model);
  CHECK(file_bytes(model).find("\x12\x01" "b") != std::string::npos);  // Dimension.dim_param = "b"
  for (int64_t b : {1, 5, 40}) {
    const fx::Array x = fx::random::normal(fx::random::key(90 + uint32_t(b)), fx::Shape{b, 16});
    const std::vector<float> want = q(x).to_vector<float>();
    CHECK(max_abs_diff(run_onnxruntime(model, {x}), want) <= 1e-4 * max_abs(want));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("onnx: an MLP with softmax runs in onnxruntime" * doctest::skip(!have_onnxruntime())) {
  const auto dir = fresh_dir();
  fx::Array w1 = fx::array(ramp(16 * 32, -0.5f, 0.5f), fx::Shape{16, 32}), b1 = fx::array(ramp(32, -0.1f, 0.1f));
  fx::Array w2 = fx::array(ramp(32 * 5, 0.3f, -0.3f), fx::Shape{32, 5});
  auto mlp = [&](const fx::Array& x) { return fx::nn::softmax(fx::matmul(fx::nn::relu(fx::matmul(x, w1) + b1), w2)); };
  fx::Array x = fx::array(ramp(8 * 16, -1.f, 1.f), fx::Shape{8, 16});
  const std::string model = (dir / "mlp.onnx").string();
  fx::onnx::export_(mlp, x, model);
  check_same(run_onnxruntime(model, {x}), mlp(x));
  std::filesystem::remove_all(dir);
}

TEST_CASE("onnx: shape ops, reductions, indexing, comparisons, batched products" * doctest::skip(!have_onnxruntime())) {
  const auto dir = fresh_dir();
  auto f = [](const fx::Array& a, const fx::Array& b) {
    fx::Array t = fx::transpose(fx::reshape(a, {4, 6}));                                  // [6, 4]
    fx::Array c = fx::concatenate({t, fx::sqrt(fx::abs(t)) * 2.f}, 1);                     // [6, 8]
    fx::Array s = fx::slice(c, {1, 0}, {5, 8});                                            // [4, 8]
    fx::Array g = fx::take(s, fx::array(std::vector<int32_t>{3, 0, 2}), 0);                // [3, 8]
    fx::Array m = fx::where(g > 0.f, fx::exp(-g), fx::tanh(g)) + fx::max(g, {1}, true);    // [3, 8]
    fx::Array batched = fx::matmul(fx::reshape(b, {2, 3, 4}), fx::reshape(b, {2, 4, 3}));  // [2, 3, 3]
    return fx::concatenate({fx::sum(fx::square(m), {0}), fx::ravel(batched * fx::arange(3, fx::float32)),
                            fx::prod(fx::cos(g), {0}) - fx::mean(m)}, 0);
  };
  fx::Array a = fx::array(ramp(24, -2.f, 3.f)), b = fx::array(ramp(24, 1.f, -1.f));
  const std::string model = (dir / "ops.onnx").string();
  fx::onnx::export_(f, a, b, model);
  check_same(run_onnxruntime(model, {a, b}), f(a, b));
  std::filesystem::remove_all(dir);
}

TEST_CASE("onnx: convolutions (layouts, strides, padding, dilation, groups) and pooling" * doctest::skip(!have_onnxruntime())) {
  const auto dir = fresh_dir();
  fx::Array k1 = fx::array(ramp(4 * 2 * 3 * 3, -0.4f, 0.5f), fx::Shape{4, 2, 3, 3});  // OIHW
  fx::Array k2 = fx::array(ramp(3 * 3 * 2 * 4, 0.3f, -0.2f), fx::Shape{3, 3, 2, 4});  // HWIO, 2 groups of 2
  fx::Array w = fx::array(ramp(4 * 6, -0.2f, 0.2f), fx::Shape{4, 6});
  auto net = [&](const fx::Array& x) {  // x: NCHW [2, 2, 9, 9]
    fx::Array a = fx::nn::relu(fx::conv_general_dilated(x, k1, {1, 1}, "SAME"));                   // [2, 4, 9, 9]
    a = fx::nn::max_pool(a, {2, 2}, {2, 2}, {{0, 1}, {0, 1}});                                   // [2, 4, 5, 5]
    fx::Array h = fx::transpose(a, {0, 2, 3, 1});                                               // NHWC
    fx::Array b = fx::conv_general_dilated(h, k2, {2, 2}, {{1, 0}, {0, 1}}, {}, {1, 2},
                                           fx::conv_dimension_numbers("NHWC", "HWIO", "NHWC"), 2);  // [2, 2, 1, 4]
    b = fx::nn::avg_pool(fx::transpose(b, {0, 3, 1, 2}), {2, 1}, {1, 1});                      // [2, 4, 1, 1]
    return fx::matmul(fx::reshape(fx::tanh(b), {2, 4}), w);
  };
  fx::Array x = fx::array(ramp(2 * 2 * 9 * 9, -1.f, 1.5f), fx::Shape{2, 2, 9, 9});
  const std::string model = (dir / "convnet.onnx").string();
  fx::onnx::export_(net, x, model);
  check_same(run_onnxruntime(model, {x}), net(x));
  std::filesystem::remove_all(dir);
}

TEST_CASE("onnx: a polymorphic export has dim_param b and runs in onnxruntime at any batch" * doctest::skip(!have_onnxruntime())) {
  const fx::Array w1 = fx::array(ramp(16 * 32, -0.5f, 0.5f), fx::Shape{16, 32}), b1 = fx::array(ramp(32, -0.1f, 0.1f));
  const fx::Array w2 = fx::array(ramp(32 * 4, 0.3f, -0.3f), fx::Shape{32, 4}), b2 = fx::array(ramp(4, 0.f, 1.f));
  auto mlp = [&](const fx::Array& x) {
    fx::Array h = fx::nn::relu(fx::matmul(x, w1) + b1);
    fx::Array y = fx::nn::softmax(fx::matmul(h, w2) + b2, -1);
    return fx::reshape(y - fx::mean(y, 0), {x.shape()[0], 2, 2});  // mean over the batch, a reshape keeping b
  };
  const auto dir = fresh_dir();
  const std::string model = (dir / "poly.onnx").string();
  fx::onnx::export_(mlp, fx::polymorphic_shapes("b, 16"), model);
  std::ifstream in(model, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(bytes.find("\x12\x01" "b") != std::string::npos);  // Dimension.dim_param = "b"
  for (int64_t b : {1, 3, 9}) {
    const fx::Array x = fx::array(ramp(b * 16, -1.f, 1.f), fx::Shape{b, 16});
    check_same(run_onnxruntime(model, {x}), mlp(x));
  }
  std::filesystem::remove_all(dir);
}

// ONNX's operators that Fluxion writes are real-only: a model with complex values would not load.
TEST_CASE("onnx: complex arguments and values are a CompileError naming the argument or the user's line") {
  export_helpers::check_complex_refused(
      [](const std::function<fx::Array(const fx::Array&)>& f, const fx::Array& x) {
        fx::onnx::export_(f, x, "/tmp/never.onnx");
      },
      "export_helpers.h");
}

TEST_CASE("onnx: a primitive without an ONNX form is a CompileError naming it") {
  auto sorts = [](const fx::Array& a) { return fx::sort(a); };
  try {
    fx::onnx::export_(sorts, fx::zeros({4}), "/tmp/never.onnx");
    FAIL("no error");
  } catch (const fx::CompileError& e) {
    CHECK(std::string(e.what()).find("sort(f32[4])") != std::string::npos);
    CHECK(std::string(e.what()).find("test_onnx.cpp") != std::string::npos);
  }
  auto dilated_input = [](const fx::Array& a, const fx::Array& k) {  // a transposed convolution's form
    return fx::conv_general_dilated(a, k, {1, 1}, "VALID", {2, 2});
  };
  CHECK_THROWS_AS(fx::onnx::export_(dilated_input, fx::zeros({1, 1, 4, 4}), fx::zeros({1, 1, 2, 2}), "/tmp/never.onnx"),
                  fx::CompileError);
}
