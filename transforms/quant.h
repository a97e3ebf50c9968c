// int8 quantization (issue 33; shared/api.md "Quantization and pruning"; docs/quantization.md).
//
// Three levels, as in JAX's AQT and PyTorch's ao.quantization:
//   - arrays: quantize_array / dequantize_array (scale and zero point, per tensor or per channel,
//     round half to even, saturating) and fake_quant (the same round trip in float, with the
//     straight-through gradient of quantization-aware training: 1 inside the range, 0 outside);
//   - post-training quantization of a function: calibrate(forward, params, batches) runs `forward`
//     on calibration batches and observes the activations entering each matrix product and
//     convolution whose weight is a parameter; quantize(forward, params, stats) gives a Quantized
//     function whose products take int8 activations (per tensor, affine) and int8 weights (per
//     output channel, symmetric) and accumulate in int32 (dot_general / conv_general_dilated with
//     preferred_element_type int32), everything else in float as before; fold_batch_norm merges a
//     batch norm into the convolution before it first;
//   - a Quantized function is an ordinary Fluxion function of its input: jit, vmap and grad (with
//     respect to the input) trace through it, fx::export_ compiles it.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/creation.h"
#include "api/elementwise.h"
#include "api/operands.h"
#include "ir/program.h"
#include "ir/tree.h"
#include "train/layers.h"
#include "transforms/make_ir.h"

namespace fluxion::quant {

/// The integer range of a quantized dtype: int8 [-128, 127], uint8 [0, 255], int32.
std::pair<double, double> dtype_range(DType dtype);

/// clamp(round_half_even(x / scale) + zero_point) as `dtype` (int8 or uint8). With `axis`, scale and
/// zero_point are vectors along that axis of x (per channel); else scalars (per tensor). A
/// value beyond the range saturates at its end (never wraps).
Array quantize_array(const ArrayLike& x, const ArrayLike& scale, const ArrayLike& zero_point, DType dtype = int8,
                     std::optional<int64_t> axis = std::nullopt, FLUXION_LOC);
/// (q - zero_point) * scale in `dtype` (float32 by default); axis as quantize_array's.
Array dequantize_array(const ArrayLike& q, const ArrayLike& scale, const ArrayLike& zero_point,
                       std::optional<int64_t> axis = std::nullopt, DType dtype = float32, FLUXION_LOC);
/// dequantize(quantize(x)) in x's dtype, differentiable with the straight-through estimator: the
/// gradient is 1 where x is inside the representable range and 0 where it saturates.
Array fake_quant(const ArrayLike& x, const ArrayLike& scale, const ArrayLike& zero_point, DType dtype = int8,
                 std::optional<int64_t> axis = std::nullopt, FLUXION_LOC);

/// Per-tensor affine int8 parameters covering [lo, hi] (widened to include 0, so zero is exact).
struct Affine {
  float scale = 1.f;
  int32_t zero_point = 0;
};
Affine affine_for_range(double lo, double hi, DType dtype = int8);

/// How calibration turns observed activations into a range: their min and max, or the
/// `percentile`-th and (100 - percentile)-th percentiles of each batch averaged over the batches
/// (clips rare outliers).
struct Observer {
  enum Kind { minmax, percentile } kind = minmax;
  double percent = 99.99;
};

/// What calibrate observed: the traced forward program (parameters' leaves first, then the
/// input's), and per quantizable equation (by index) the activation range.
struct Stats {
  Program program;
  size_t param_leaves = 0;
  std::map<size_t, std::pair<double, double>> ranges;  // eqn index -> (lo, hi)
  int64_t batches = 0;
};

/// A quantized function of one input array.
class Quantized {
 public:
  Array operator()(const Array& x) const;
  /// Bytes of the parameters it holds (int8 weights, their scales, the float parameters not quantized).
  int64_t parameter_bytes() const;
  /// One line per matrix product and convolution: quantized (with its scales) or why not.
  std::string report() const;

  struct Layer {  // one quantized equation
    Prim prim = Prim::dot_general;
    Array weight;          // int8, as the equation's rhs
    Array weight_scale;    // float32, one per output channel
    Array correction;      // float32: zero_point x the products of a ones input with the weight
    Affine activation;     // the input's per-tensor parameters
    int64_t weight_channel_axis = 0;  // of the weight: its output channels (the scales' axis)
    int64_t out_channel_axis = 0;     // of the equation's output
    // A convolution whose int8 input is padded with the zero point before it (its own padding then
    // 0): the correction is one value per output channel, not one per output position.
    bool pads_zero_point = false;
  };
  struct State {
    /// forward(params, x) traced for an input of x's type: the program a call interprets (one per
    /// input type, kept in `programs`); quantized layers are matched by their order in it.
    std::function<Program(const AbstractArray&)> trace;
    size_t param_leaves = 0;
    std::vector<Array> params;  // the float leaves (empty where only quantized layers read them)
    std::map<size_t, Layer> layers;  // by ordinal among the quantizable equations
    std::vector<std::string> notes;
    mutable std::mutex mu;
    mutable std::map<std::string, std::shared_ptr<const Program>> programs;
  };
  explicit Quantized(std::shared_ptr<const State> s) : s_(std::move(s)) {}

  /// forward's float program for an input of type x: the parameters' leaves are its first invars,
  /// then x's. What a call interprets, and what fx::onnx::export_ writes in QDQ form.
  Program program(const AbstractArray& x) const { return *traced(x); }
  /// The quantized layers of such a program (or of it after the jit's passes), by equation index:
  /// the k-th quantizable equation is calibration's k-th. ValueError where a weight's shape is not
  /// the one calibrated.
  std::map<size_t, const Layer*> layers_in(const Program& p) const;
  size_t layer_count() const { return s_->layers.size(); }
  size_t param_leaves() const { return s_->param_leaves; }
  /// The parameters' leaves that stay float (an empty Array where only quantized layers read one).
  const std::vector<Array>& float_params() const { return s_->params; }

 private:
  std::shared_ptr<const Program> traced(const AbstractArray& x) const;
  std::shared_ptr<const State> s_;
};

namespace detail {
Stats calibrate(Program program, size_t param_leaves, const std::vector<Array>& param_values,
                const std::vector<Array>& batches, const Observer& observer);
Quantized quantize(const Stats& stats, const std::vector<Array>& param_values,
                   std::function<Program(const AbstractArray&)> trace);
}  // namespace detail

/// A convolution followed by batch normalisation in inference mode (the running statistics `state`,
/// epsilon `eps`, as nn::BatchNorm::apply(bn, state, conv(x), false, ..., eps, channel axis)) as
/// one convolution: each output channel's weights times scale / sqrt(var + eps), its bias
/// (bias - mean) times that plus bn.bias. Fold before calibrating, so that what is quantized is
/// the product the model computes. ShapeError when bn's features are not conv's output channels.
nn::Conv fold_batch_norm(const nn::Conv& conv, const nn::BatchNorm& bn, const nn::BatchNorm::State& state,
                         double eps = 1e-5, FLUXION_LOC);

/// Runs forward(params, x) on every calibration batch (each a batch of inputs, as forward takes
/// them) and records the range of every activation entering a matrix product or convolution
/// with a parameter as its weight. ValueError: no batches, or a NaN/Inf in one (naming the batch).
template <class F, class P>
Stats calibrate(F forward, const P& params, const std::vector<Array>& batches, Observer observer = {}) {
  if (batches.empty()) throw ValueError("ValueError: quant::calibrate: no calibration batches");
  Program program = make_ir(forward)(params, batches.front());
  std::vector<Array> leaves = tree::leaves(params);
  return detail::calibrate(std::move(program), leaves.size(), leaves, batches, observer);
}

/// The int8 version of forward(params, .) with the activation ranges `stats` observed.
template <class F, class P>
Quantized quantize(F forward, const P& params, const Stats& stats) {
  // Traced on types, not example arrays: x may have symbolic dims (a polymorphic export).
  auto trace = [forward, params](const AbstractArray& x) {
    std::vector<AbstractArray> avals;
    for (const Array& leaf : tree::leaves(params)) avals.push_back(leaf.aval());
    avals.push_back(x);
    return fluxion::detail::trace_with_avals(forward, avals, params, Array()).first;
  };
  return detail::quantize(stats, tree::leaves(params), std::move(trace));
}

}  // namespace fluxion::quant
