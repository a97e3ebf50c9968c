// Quantized inference against float32, in one run so the numbers share the machine's load
// (docs/quantization.md, docs/int8_gemm.md):
//  1. the Fashion-MNIST-sized MLP (784-512-10, batch 256) jitted in float32, and quantized
//     (fx::quant::quantize) then jitted -- its int8 products through the int8 GEMM -- and, for the
//     before/after of that path, the quantized model compiled with matmul = "generated" (the
//     integer loops every int8 product took before);
//  2. one int8 dot_general 1024^3 (int32 out), and the MLP's first layer's, jitted against the
//     direct kernels/gemm_int8 call on the same path: the overhead of the library call;
//  3. an int8 convolution jitted (im2col + the int8 GEMM) against float32 and the reference kernel;
//  4. the peer: the Fashion-MNIST convnet (examples/fashion_mnist_model.h, batch 256) quantized,
//     exported to ONNX in QDQ form and run by onnxruntime on as many threads -- the same model
//     file in both -- against the Quantized jitted here; the float32 model both ways for
//     reference. onnxruntime is optional: the python of FLUXION_TEST_PYTHON (scripts/onnxruntime.sh
//     installs it into build/onnxruntime-venv), else python3; the row is skipped without it.
// Usage: fluxion_bench_quant [threads] [repeats] [size]
#include <fluxion.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <source_location>
#include <vector>

#include <unistd.h>

#include "bench/timing.h"
#include "examples/fashion_mnist_model.h"
#include "kernels/gemm_int8.h"
#include "prims/isa_level.h"

namespace fx = fluxion;
namespace rt = fluxion::runtime;

struct BenchMlp {
  fx::nn::Linear l1, l2;
};
FLUXION_TREE(BenchMlp, l1, l2);

namespace {

fx::Array forward(const BenchMlp& m, const fx::Array& x) {
  return fx::nn::Linear::apply(m.l2, fx::nn::relu(fx::nn::Linear::apply(m.l1, x)));
}

// A program compiled for `t` with the arguments its executable takes: the inputs, then the
// program's consts (the weights a closure captured), as fx::jit passes them.
struct Compiled {
  std::shared_ptr<const rt::Executable> exe;
  std::vector<fx::Array> args;
  std::vector<fx::Array> run() const { return exe->run(args); }
};
Compiled compiled(const fx::Program& p, const rt::CompileTarget& t, std::vector<fx::Array> inputs) {
  inputs.insert(inputs.end(), p.consts.begin(), p.consts.end());
  return {rt::compile(p, t), std::move(inputs)};
}

double run_ms(const Compiled& c, int repeats) {
  (void)c.run();  // warm: first-touch of buffers
  return fluxion_bench::best_ms([&] { (void)c.run(); }, repeats);
}

void mlp(const rt::CompileTarget& t, int repeats) {
  auto [k1, k2] = fx::random::split(fx::random::key(1));
  const BenchMlp p{fx::nn::Linear::init(k1, 784, 512), fx::nn::Linear::init(k2, 512, 10)};
  std::vector<fx::Array> calib;
  for (uint32_t i = 0; i < 4; ++i) calib.push_back(fx::random::normal(fx::random::key(100 + i), {256, 784}));
  const fx::quant::Quantized q = fx::quant::quantize(forward, p, fx::quant::calibrate(forward, p, calib));
  const fx::Array x = fx::random::normal(fx::random::key(7), {256, 784});
  const Compiled f32 = compiled(fx::make_ir([&p](const fx::Array& a) { return forward(p, a); })(x), t, {x});
  const fx::Program qp = fx::make_ir(q)(x);
  const Compiled int8 = compiled(qp, t, {x});
  rt::CompileTarget generated = t;
  generated.matmul = "generated";
  const Compiled int8_loops = compiled(qp, generated, {x});
  const double ms_f32 = run_ms(f32, repeats), ms_int8 = run_ms(int8, repeats);
  const double ms_loops = run_ms(int8_loops, std::max(1, repeats / 4));
  const fx::Array want = f32.run()[0], got = int8.run()[0];
  const float err = fx::max(fx::abs(got - want)).item<float>() / fx::max(fx::abs(want)).item<float>();
  std::printf("MLP 784-512-10, batch 256, jitted:\n");
  std::printf("  %-34s %8.3f ms\n", "float32", ms_f32);
  std::printf("  %-34s %8.3f ms  %.2fx float32  (max err %.4f of max|y|)\n", "int8 (int8 GEMM)", ms_int8,
              ms_f32 / ms_int8, double(err));
  std::printf("  %-34s %8.3f ms  %.2fx float32\n", "int8 (generated loops, before)", ms_loops, ms_f32 / ms_loops);
}

void product(const rt::CompileTarget& t, int repeats, int64_t m, int64_t k, int64_t n) {
  std::mt19937 rng(1);
  std::vector<int8_t> a8(size_t(m * k)), b8(size_t(k * n));
  std::vector<float> af(a8.size()), bf(b8.size());
  for (size_t i = 0; i < a8.size(); ++i) a8[i] = int8_t(rng()), af[i] = a8[i];
  for (size_t i = 0; i < b8.size(); ++i) b8[i] = int8_t(rng()), bf[i] = b8[i];
  const fx::Array a = fx::astype(fx::array(af, fx::Shape{m, k}), fx::int8), b = fx::astype(fx::array(bf, fx::Shape{k, n}), fx::int8);
  const fx::Params params{{"lhs_batch", fx::IntList{}}, {"rhs_batch", fx::IntList{}}, {"lhs_contracting", fx::IntList{1}},
                          {"rhs_contracting", fx::IntList{0}}, {"preferred_element_type", fx::int32}};
  auto dot = [&params](const fx::Array& x, const fx::Array& y) {
    return fx::bind1(fx::Prim::dot_general, {x, y}, params, std::source_location::current());
  };
  const Compiled jitted = compiled(fx::make_ir(dot)(a, b), t, {a, b});
  const rt::Int8Path path = rt::int8_gemm_path(fx::host_isa_level());
  const uint64_t before = rt::int8_gemm_calls(path);
  const double ms_jit = run_ms(jitted, repeats);
  const bool on_path = rt::int8_gemm_calls(path) > before;
  std::vector<int32_t> out(size_t(m * n));
  const rt::Int8Gemm g{m, n, k, a8.data(), false, b8.data(), out.data()};
  const double ms_direct = fluxion_bench::best_ms([&] { rt::int8_gemm_with(path, g, t.num_threads); }, repeats);
  const double ops = 2.0 * double(m) * double(n) * double(k);
  std::printf("int8 dot_general %lld x %lld x %lld (m k n) -> int32:\n", (long long)m, (long long)k, (long long)n);
  std::printf("  %-34s %8.3f ms  %6.1f G op/s\n", ("direct int8_gemm (" + rt::int8_path_name(path) + ")").c_str(),
              ms_direct, ops / ms_direct / 1e6);
  std::printf("  %-34s %8.3f ms  %6.1f G op/s  %.3fx direct%s\n", "jitted dot_general", ms_jit, ops / ms_jit / 1e6,
              ms_direct / ms_jit, on_path ? "" : "  (NOT on that path)");
}

// A 3x3 SAME convolution of a convnet's middle layer (batch 64, 32 -> 64 features, 14x14): float32
// jitted (im2col + Eigen) against int8 -> int32 jitted (im2col + the int8 GEMM) and int8 eager
// (the reference kernel: what the jit's call ran for integers before).
void convolution(const rt::CompileTarget& t, int repeats) {
  const fx::Array xf = fx::random::normal(fx::random::key(11), {64, 32, 14, 14}) * 40.f;
  const fx::Array wf = fx::random::normal(fx::random::key(12), {64, 32, 3, 3}) * 40.f;
  const fx::Array x8 = fx::astype(fx::clip(fx::round(xf), -128.f, 127.f), fx::int8);
  const fx::Array w8 = fx::astype(fx::clip(fx::round(wf), -128.f, 127.f), fx::int8);
  auto conv = [](std::optional<fx::DType> out) {
    return [out](const fx::Array& x, const fx::Array& w) {
      return fx::conv_general_dilated(x, w, {1, 1}, fx::Padding("SAME"), {}, {}, std::nullopt, 1, 1, out);
    };
  };
  const Compiled f32 = compiled(fx::make_ir(conv(std::nullopt))(xf, wf), t, {xf, wf});
  const Compiled int8 = compiled(fx::make_ir(conv(fx::int32))(x8, w8), t, {x8, w8});
  const double ms_f32 = run_ms(f32, repeats), ms_int8 = run_ms(int8, repeats);
  const double ms_ref = fluxion_bench::best_ms([&] { (void)conv(fx::int32)(x8, w8).to_vector<int32_t>(); }, 2);
  const bool same = int8.run()[0].to_vector<int32_t>() == conv(fx::int32)(x8, w8).to_vector<int32_t>();
  std::printf("conv 3x3 SAME, [64, 32, 14, 14] x [64, 32, 3, 3]:\n");
  std::printf("  %-34s %8.3f ms\n", "float32 jitted", ms_f32);
  std::printf("  %-34s %8.3f ms  %.2fx float32%s\n", "int8 -> int32 jitted", ms_int8, ms_f32 / ms_int8,
              same ? "" : "  (DIFFERS from eager)");
  std::printf("  %-34s %8.3f ms  %.2fx float32\n", "int8 -> int32 eager (reference, before)", ms_ref, ms_f32 / ms_ref);
}

std::string peer_python() {
  const char* p = std::getenv("FLUXION_TEST_PYTHON");
  return p && *p ? p : "python3";
}

// Runs bench/peers/ort_time.py: the best time in ms and the kernels onnxruntime chose (a line), or
// a negative time when it fails; its output y written to `out_file`.
std::pair<double, std::string> onnxruntime_ms(const std::string& model, const fx::Array& x, int threads, int repeats,
                                              const std::string& out_file) {
  const std::string in_file = model + ".in.bin";
  std::ofstream(in_file, std::ios::binary).write(static_cast<const char*>(x.data()), std::streamsize(x.aval().nbytes()));
  std::string shape;
  for (int64_t d : x.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(d);
  const std::string cmd = "cd " FLUXION_SOURCE_DIR "/bench/peers && " + peer_python() + " ort_time.py " + model + " " +
                          in_file + " " + shape + " " + std::to_string(threads) + " " + std::to_string(repeats) + " " +
                          out_file + " 2>" + model + ".log";
  std::string text;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, f)) text.append(buf, n);
    if (pclose(f) == 0) return {std::atof(text.c_str()), text.substr(text.find(';') + 2)};
  }
  return {-1, text};
}

void onnxruntime_peer(const rt::CompileTarget& t, int repeats) {
  if (std::system((peer_python() + " -c 'import onnxruntime, numpy' >/dev/null 2>&1").c_str()) != 0) {
    std::printf("onnxruntime peer: skipped (no onnxruntime for %s; scripts/onnxruntime.sh installs it)\n",
                peer_python().c_str());
    return;
  }
  using example::Cnn;
  const Cnn cnn = Cnn::init(fx::random::key(3));
  auto forward = [](const Cnn& m, const fx::Array& images) { return Cnn::logits(m, images); };
  // Images as float32 pixel values (0-255): ONNX's input is float32, as the tests feed it.
  auto images = [](uint32_t seed) { return fx::floor(fx::random::uniform(fx::random::key(seed), {256, 28, 28}) * 256.f); };
  std::vector<fx::Array> calib;
  for (uint32_t i = 0; i < 2; ++i) calib.push_back(images(200 + i));
  const fx::quant::Quantized q = fx::quant::quantize(forward, cnn, fx::quant::calibrate(forward, cnn, calib));
  const fx::Array x = images(7);
  const std::string dir = std::filesystem::temp_directory_path() / ("fluxion-bench-quant-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string qdq = dir + "/cnn_int8.onnx", f32_model = dir + "/cnn_f32.onnx";
  auto f32 = [&cnn](const fx::Array& a) { return Cnn::logits(cnn, a); };
  fx::onnx::export_(q, x, qdq);
  fx::onnx::export_(f32, x, f32_model);
  const Compiled ours_int8 = compiled(fx::make_ir(q)(x), t, {x});
  const Compiled ours_f32 = compiled(fx::make_ir(f32)(x), t, {x});
  const double ms_int8 = run_ms(ours_int8, repeats), ms_f32 = run_ms(ours_f32, repeats);
  const auto [ort_int8, kernels_int8] = onnxruntime_ms(qdq, x, t.num_threads, repeats, dir + "/y_int8.bin");
  const auto [ort_f32, kernels_f32] = onnxruntime_ms(f32_model, x, t.num_threads, repeats, dir + "/y_f32.bin");
  // The two int8 results agree up to float rounding (tests/test_onnx.cpp): check, so a fast wrong
  // row cannot pass for a fast right one.
  std::vector<float> y_ort(size_t(256 * 10));
  std::ifstream(dir + "/y_int8.bin", std::ios::binary).read(reinterpret_cast<char*>(y_ort.data()), std::streamsize(y_ort.size() * 4));
  const std::vector<float> y = ours_int8.run()[0].to_vector<float>();
  double diff = 0, top = 0;
  for (size_t i = 0; i < y.size(); ++i) diff = std::max(diff, double(std::abs(y[i] - y_ort[i]))), top = std::max(top, double(std::abs(y[i])));
  std::filesystem::remove_all(dir);
  std::printf("%s, batch 256, one ONNX file run by both:\n", Cnn::name);
  std::printf("  %-34s %8.3f ms\n", "Fluxion float32 jitted", ms_f32);
  std::printf("  %-34s %8.3f ms  %.2fx Fluxion float32\n", "Fluxion int8 (Quantized) jitted", ms_int8, ms_f32 / ms_int8);
  if (ort_f32 < 0 || ort_int8 < 0) {
    std::printf("  onnxruntime failed (its log: %s.log)\n%s%s\n", qdq.c_str(), kernels_f32.c_str(), kernels_int8.c_str());
    return;
  }
  std::printf("  %-34s %8.3f ms  Fluxion float32 is %.2fx it\n", "onnxruntime float32", ort_f32, ort_f32 / ms_f32);
  std::printf("  %-34s %8.3f ms  Fluxion int8 is %.2fx it  (max |diff| %.2g of max |y| %.3g)\n", "onnxruntime int8 (QDQ)",
              ort_int8, ort_int8 / ms_int8, diff, top);
  std::printf("  the QDQ model in %s", kernels_int8.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  const int64_t n = argc > 3 ? std::atoll(argv[3]) : 1024;
  rt::CompileTarget t = rt::default_target();
  t.num_threads = threads;
  std::printf("%d thread(s), best of %d\n", threads, repeats);
  mlp(t, repeats);
  product(t, std::max(3, repeats / 4), n, n, n);
  product(t, repeats, 256, 784, 512);  // the MLP's first layer
  convolution(t, repeats);
  onnxruntime_peer(t, repeats);
}
