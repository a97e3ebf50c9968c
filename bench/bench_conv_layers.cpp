// ResNet-18's convolutions one at a time (issue 14): where the training step's convolution time
// goes, per layer and per part -- the forward convolution, the input gradient and the kernel
// gradient -- in float32 and bfloat16 (bfloat16 operands and results, as the step's bfloat16
// compute policy has them), each jitted alone as the step's backward pass computes it (the
// pullback of the convolution applied to a cotangent, so no elementwise pass of a loss is timed
// with it). `bench/peers/peers_torch.py N layers` times the same parts in PyTorch
// (F.conv2d and aten.convolution_backward, 2 threads) and `bench/peers/layers_table.py` joins the
// two outputs into the table of docs/resnet_step.md, each row weighted by how often one step runs it.
//
// Run: build/bench/fluxion_bench_conv_layers [repeats] [f32] [bf16] [LAYER...] (both dtypes and all
// layers by default; naming layers, e.g. s3, times only those -- for a profiler).
// Output: one line per (layer, dtype, part): "layer NAME DTYPE PART MS COUNT" with COUNT the
// number of times one training step runs that part (the stem's input gradient is never needed).
#include <fluxion.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "compile/target.h"

namespace fx = fluxion;

namespace {

// One convolution of ResNet-18 (CIFAR stem, batch 128, NCHW x OIHW, k x k with padding k / 2):
// c -> o features on hw x hw inputs, and how many times one step runs it. peers_torch.py's LAYERS
// lists the same.
struct Layer {
  const char* name;
  int64_t c, o, hw, k, stride;
  int count;
  bool input_grad;  // false for the stem, whose input (the images) is not differentiated
  int64_t out_hw() const { return (hw + 2 * (k / 2) - k) / stride + 1; }
};
constexpr int64_t kBatch = 128;
constexpr Layer kLayers[] = {
    {"stem", 3, 64, 32, 3, 1, 1, false},        {"s1", 64, 64, 32, 3, 1, 4, true},
    {"s2_down", 64, 128, 32, 3, 2, 1, true},    {"s2_proj", 64, 128, 32, 1, 2, 1, true},
    {"s2", 128, 128, 16, 3, 1, 3, true},        {"s3_down", 128, 256, 16, 3, 2, 1, true},
    {"s3_proj", 128, 256, 16, 1, 2, 1, true},   {"s3", 256, 256, 8, 3, 1, 3, true},
    {"s4_down", 256, 512, 8, 3, 2, 1, true},    {"s4_proj", 256, 512, 8, 1, 2, 1, true},
    {"s4", 512, 512, 4, 3, 1, 3, true}};

fx::Array filled(const fx::Shape& s, float lo, float hi, int salt) {
  std::vector<float> v(size_t(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = lo + (hi - lo) * float((int64_t(i) * 7919 + salt * 104729) % 10007) / 10007.f;
  return fx::array(v, s);
}

// Times the three parts of one layer in `dt`, best of `repeats` after a compile call each.
void bench_layer(const Layer& l, fx::DType dt, int repeats) {
  const int64_t n = kBatch, oh = l.out_hw();
  const fx::Array x = fx::astype(filled({n, l.c, l.hw, l.hw}, -1, 1, 1), dt);
  const fx::Array w = fx::astype(filled({l.o, l.c, l.k, l.k}, -0.1f, 0.1f, 2), dt);
  const fx::Array ct = fx::astype(filled({n, l.o, oh, oh}, -1, 1, 3), dt);
  const int64_t s = l.stride, p = l.k / 2;
  auto conv = [s, p](const fx::Array& a, const fx::Array& k) {
    return fx::conv_general_dilated(a, k, {s, s}, std::vector<std::pair<int64_t, int64_t>>{{p, p}, {p, p}});
  };
  auto forward = fx::jit(conv);
  auto input_grad = fx::jit([&](const fx::Array& a, const fx::Array& k, const fx::Array& g) {
    return fx::vjp([&](const fx::Array& a2) { return conv(a2, k); }, a).second(g);
  });
  auto kernel_grad = fx::jit([&](const fx::Array& a, const fx::Array& k, const fx::Array& g) {
    return fx::vjp([&](const fx::Array& k2) { return conv(a, k2); }, k).second(g);
  });
  struct Part {
    const char* name;
    std::function<fx::Array()> run;
    int count;
  };
  const Part parts[] = {{"forward", [&] { return forward(x, w); }, l.count},
                        {"input_grad", [&] { return input_grad(x, w, ct); }, l.input_grad ? l.count : 0},
                        {"kernel_grad", [&] { return kernel_grad(x, w, ct); }, l.count}};
  for (const Part& part : parts) {
    fx::Array out = part.run();  // compile
    const double ms = fluxion_bench::best_ms([&] { out = part.run(); }, repeats);
    std::printf("layer %s %s %s %.3f %d\n", l.name, dt == fx::bfloat16 ? "bf16" : "f32", part.name, ms, part.count);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  std::vector<fx::DType> dtypes;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "f32") dtypes.push_back(fx::float32);
    else if (a == "bf16") dtypes.push_back(fx::bfloat16);
    else if (std::atoi(a.c_str()) > 0) repeats = std::atoi(a.c_str());
    else only.push_back(a);
  }
  if (dtypes.empty()) dtypes = {fx::bfloat16, fx::float32};
  std::printf("# fluxion, %d threads, best of %d\n", fx::runtime::default_target().num_threads, repeats);
  for (fx::DType dt : dtypes)
    for (const Layer& l : kLayers)
      if (only.empty() || std::find(only.begin(), only.end(), l.name) != only.end()) bench_layer(l, dt, repeats);
  return 0;
}
