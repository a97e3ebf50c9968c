#include "train/layers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "api/creation.h"
#include "api/indexing.h"
#include "api/linalg.h"
#include "api/nn.h"
#include "api/operands.h"
#include "api/random.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "ir/error.h"

namespace fluxion::nn {

namespace {

// The layer's shape errors name the layer and the user's line, like any op's.
[[noreturn]] void layer_error(ErrorKind kind, std::string_view layer, std::vector<AbstractArray> operands,
                              SourceLoc loc, const std::string& detail) {
  op_error(kind, layer, operands, loc, detail);
}

}  // namespace

Linear Linear::init(const Array& key, int64_t in, int64_t out, const initializers::Initializer& weight_init,
                    const initializers::Initializer& bias_init, DType dtype) {
  auto [kw, kb] = random::split(key);
  return Linear{weight_init(kw, {in, out}, dtype), bias_init(kb, {out}, dtype)};
}

Array Linear::apply(const Linear& p, const Array& x, std::optional<DType> preferred_element_type, SourceLoc loc) {
  const Shape& ws = p.weight.shape();
  if (x.ndim() < 1 || ws.rank() != 2 || x.shape()[size_t(x.ndim() - 1)] != ws[0])
    layer_error(ErrorKind::Shape, "Linear", {x.aval(), p.weight.aval(), p.bias.aval()}, loc,
                "the input's last axis must match the weight's first (in) axis");
  Array w = astype(p.weight, x.dtype(), loc), b = astype(p.bias, preferred_element_type.value_or(x.dtype()), loc);
  return add(preferred_element_type ? matmul(x, w, *preferred_element_type, loc) : matmul(x, w, loc), b, loc);
}

namespace {

// The conv layer's dimension numbers for a rank-r operand: NC... x OI... -> NC..., or channels last
// N...C x ...IO -> N...C.
ConvDimensionNumbers conv_layout(int64_t rank, bool channels_last) {
  IntList first(size_t(rank), 0), lhs, rhs;
  for (int64_t d = 0; d < rank; ++d) first[size_t(d)] = d;
  if (!channels_last) return ConvDimensionNumbers{first, first, first};
  lhs = {0, rank - 1};
  rhs = {rank - 1, rank - 2};
  for (int64_t d = 1; d < rank - 1; ++d) lhs.push_back(d);
  for (int64_t d = 0; d < rank - 2; ++d) rhs.push_back(d);
  return ConvDimensionNumbers{lhs, rhs, lhs};
}

}  // namespace

Conv Conv::init(const Array& key, int64_t in_ch, int64_t out_ch, const IntList& kernel_size, int64_t groups,
                bool channels_last, const std::optional<initializers::Initializer>& weight_init,
                const initializers::Initializer& bias_init, DType dtype) {
  if (kernel_size.empty() || groups < 1 || in_ch % groups != 0 || out_ch % groups != 0)
    throw ShapeError("ShapeError: Conv::init: in_ch " + std::to_string(in_ch) + " and out_ch " +
                     std::to_string(out_ch) + " must be multiples of groups " + std::to_string(groups) +
                     ", with at least one kernel dim");
  Shape w;
  if (!channels_last) w = Shape{out_ch, in_ch / groups};
  for (int64_t k : kernel_size) w.push_back(k);
  if (channels_last) {
    w.push_back(in_ch / groups);
    w.push_back(out_ch);
  }
  // Fans: OI... names its feature axes explicitly; ...IO is the dense layout's default.
  auto init = weight_init.value_or(channels_last ? initializers::lecun_normal() : initializers::lecun_normal(1, 0));
  auto [kw, kb] = random::split(key);
  return Conv{init(kw, w, dtype), bias_init(kb, {out_ch}, dtype), channels_last};
}

Array Conv::apply(const Conv& p, const Array& x, const IntList& strides, const Padding& padding,
                  const IntList& dilation, std::optional<DType> preferred_element_type, SourceLoc loc) {
  const int64_t rank = p.weight.ndim();
  const Shape& ws = p.weight.shape();
  const bool ranked = rank >= 3 && x.ndim() == rank;  // a weight of rank < 3 is no conv weight
  const int64_t w_in = !ranked ? 0 : p.channels_last ? ws[size_t(rank - 2)] : ws[1];
  const int64_t w_out = !ranked ? 0 : p.channels_last ? ws[size_t(rank - 1)] : ws[0];
  const int64_t in = !ranked ? 0 : x.shape()[size_t(p.channels_last ? rank - 1 : 1)];
  if (!ranked || w_in < 1 || in < 1 || in % w_in != 0 || p.bias.shape() != Shape{w_out})
    layer_error(ErrorKind::Shape, "Conv", {x.aval(), p.weight.aval(), p.bias.aval()}, loc,
                std::string("the input must be ") + (p.channels_last ? "[N, spatial..., C]" : "[N, C, spatial...]") +
                    " of the weight's rank, with C a multiple of the weight's in features");
  const IntList ones(size_t(rank - 2), 1);
  Array w = astype(p.weight, x.dtype(), loc), b = astype(p.bias, preferred_element_type.value_or(x.dtype()), loc);
  Array y = conv_general_dilated(x, w, strides.empty() ? ones : strides, padding, ones,
                                 dilation.empty() ? ones : dilation, conv_layout(rank, p.channels_last), in / w_in, 1,
                                 preferred_element_type, loc);
  if (p.channels_last) return add(y, b, loc);
  Shape bs(std::vector<int64_t>(size_t(rank - 1), 1));
  bs[0] = w_out;
  return add(y, reshape(b, bs, loc), loc);
}

ConvTranspose ConvTranspose::init(const Array& key, int64_t in_ch, int64_t out_ch, const IntList& kernel_size,
                                  bool channels_last, const std::optional<initializers::Initializer>& weight_init,
                                  const initializers::Initializer& bias_init, DType dtype) {
  Conv c = Conv::init(key, in_ch, out_ch, kernel_size, 1, channels_last, weight_init, bias_init, dtype);
  return ConvTranspose{c.weight, c.bias, c.channels_last};
}

namespace {
// The padding of the dilated input for one spatial dim of a transposed convolution, by name: SAME
// makes the output input * stride, VALID input * stride + max(k - stride, 0); k is the dilated
// kernel's size.
std::pair<int64_t, int64_t> transposed_padding(const std::string& name, int64_t k, int64_t s) {
  if (name == "SAME") {
    const int64_t total = k + s - 2, lo = s > k - 1 ? k - 1 : (total + 1) / 2;
    return {lo, total - lo};
  }
  const int64_t total = k + s - 2 + std::max<int64_t>(k - s, 0);
  return {k - 1, total - (k - 1)};
}
}  // namespace

Array ConvTranspose::apply(const ConvTranspose& p, const Array& x, const IntList& strides, const Padding& padding,
                           const IntList& dilation, SourceLoc loc) {
  const int64_t rank = p.weight.ndim();
  const Shape& ws = p.weight.shape();
  const bool ranked = rank >= 3 && x.ndim() == rank;
  const int64_t w_in = !ranked ? 0 : p.channels_last ? ws[size_t(rank - 2)] : ws[1];
  const int64_t w_out = !ranked ? 0 : p.channels_last ? ws[size_t(rank - 1)] : ws[0];
  const int64_t in = !ranked ? 0 : x.shape()[size_t(p.channels_last ? rank - 1 : 1)];
  const size_t spatial = size_t(std::max<int64_t>(rank - 2, 0));
  if (!ranked || in != w_in || p.bias.shape() != Shape{w_out} || (!strides.empty() && strides.size() != spatial) ||
      (!dilation.empty() && dilation.size() != spatial))
    layer_error(ErrorKind::Shape, "ConvTranspose", {x.aval(), p.weight.aval(), p.bias.aval()}, loc,
                std::string("the input must be ") + (p.channels_last ? "[N, spatial..., C]" : "[N, C, spatial...]") +
                    " of the weight's rank with C its in features, and strides and dilation one per spatial dim");
  const IntList ones(spatial, 1), s = strides.empty() ? ones : strides, d = dilation.empty() ? ones : dilation;
  std::vector<std::pair<int64_t, int64_t>> pads = padding.pairs();
  if (pads.empty()) {
    std::string name = padding.name();
    for (char& c : name) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (name != "SAME" && name != "VALID")
      layer_error(ErrorKind::Value, "ConvTranspose", {x.aval(), p.weight.aval()}, loc,
                  "padding must be \"SAME\", \"VALID\" or (low, high) pairs, got \"" + padding.name() + "\"");
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t k = ws[p.channels_last ? i : i + 2];
      pads.push_back(transposed_padding(name, (k - 1) * d[i] + 1, s[i]));
    }
  }
  Array w = astype(p.weight, x.dtype(), loc), b = astype(p.bias, x.dtype(), loc);
  Array y = conv_general_dilated(x, w, ones, pads, s, d, conv_layout(rank, p.channels_last), 1, 1, std::nullopt, loc);
  if (p.channels_last) return add(y, b, loc);
  Shape bs(std::vector<int64_t>(size_t(rank - 1), 1));
  bs[0] = w_out;
  return add(y, reshape(b, bs, loc), loc);
}

BatchNorm BatchNorm::init(int64_t features, DType dtype) {
  return BatchNorm{ones({features}, dtype), zeros({features}, dtype)};
}

BatchNormState BatchNorm::init_state(int64_t features, DType dtype) {
  return BatchNormState{zeros({features}, dtype), ones({features}, dtype)};
}

std::pair<Array, BatchNormState> BatchNorm::apply(const BatchNorm& p, const State& state, const Array& x, bool training,
                                                  double momentum, double eps, int64_t axis, SourceLoc loc) {
  const int64_t r = x.ndim(), ax = axis < 0 ? axis + r : axis;
  if (ax < 0 || ax >= r || p.scale.shape() != Shape{x.shape()[size_t(ax)]} ||
      state.mean.shape() != p.scale.shape() || state.var.shape() != p.scale.shape())
    layer_error(ErrorKind::Shape, "BatchNorm", {x.aval(), p.scale.aval(), state.mean.aval(), state.var.aval()}, loc,
                "scale, bias and the running statistics need one entry per feature of axis " + std::to_string(axis));
  BatchNormResult res = batch_norm(x, p.scale, p.bias, state.mean, state.var, training, momentum, eps, ax, loc);
  // The statistics keep their own dtype (float32 under a bfloat16 policy), the output x's.
  return {astype(res.out, x.dtype(), loc),
          BatchNormState{astype(res.running_mean, state.mean.dtype(), loc), astype(res.running_var, state.var.dtype(), loc)}};
}

Embedding Embedding::init(const Array& key, int64_t num, int64_t dim,
                          const std::optional<initializers::Initializer>& table_init, DType dtype) {
  auto init = table_init.value_or(initializers::variance_scaling(1.0, initializers::FanMode::fan_in,
                                                                  initializers::Distribution::normal, 1, 0));
  return Embedding{init(key, {num, dim}, dtype)};
}

Array Embedding::apply(const Embedding& p, const Array& ids, SourceLoc loc) {
  if (!is_integer(ids.dtype()))
    layer_error(ErrorKind::Type, "Embedding", {p.table.aval(), ids.aval()}, loc, "ids must be integers");
  if (!ids.is_tracer()) {
    const int64_t num = p.table.shape()[0];
    for (int64_t id : ids.to_vector<int64_t>())
      if (id < 0 || id >= num)
        layer_error(ErrorKind::Value, "Embedding", {p.table.aval(), ids.aval()}, loc,
                    "id " + std::to_string(id) + " is outside the table's " + std::to_string(num) + " rows");
  }
  return take(p.table, ids, 0, loc);
}

LayerNorm LayerNorm::init(int64_t dim, DType dtype) { return LayerNorm{ones({dim}, dtype), zeros({dim}, dtype)}; }

Array LayerNorm::apply(const LayerNorm& p, const Array& x, double eps, SourceLoc loc) {
  if (x.ndim() < 1 || p.scale.shape() != Shape{x.shape()[size_t(x.ndim() - 1)]})
    layer_error(ErrorKind::Shape, "LayerNorm", {x.aval(), p.scale.aval()}, loc,
                "the input's last axis must match the scale's length");
  // Computes in x's (float) dtype, as the other layers: the parameters are cast to it.
  const DType dt = is_float(x.dtype()) ? x.dtype() : float32;
  return layer_norm(x, astype(p.scale, dt, loc), astype(p.bias, dt, loc), -1, eps, loc);
}

RMSNorm RMSNorm::init(int64_t dim, DType dtype) { return RMSNorm{ones({dim}, dtype)}; }

Array RMSNorm::apply(const RMSNorm& p, const Array& x, double eps, SourceLoc loc) {
  if (x.ndim() < 1 || p.scale.shape() != Shape{x.shape()[size_t(x.ndim() - 1)]})
    layer_error(ErrorKind::Shape, "RMSNorm", {x.aval(), p.scale.aval()}, loc,
                "the input's last axis must match the scale's length");
  const DType dt = is_float(x.dtype()) ? x.dtype() : float32;
  Array xf = astype(x, dt, loc);
  Array inv_rms = rsqrt(add(mean(square(xf, loc), {-1}, true, loc), eps, loc), loc);
  return multiply(multiply(xf, inv_rms, loc), astype(p.scale, dt, loc), loc);
}

Array Dropout::apply(const Array& key, const Array& x, double rate, bool training, SourceLoc loc) {
  if (rate < 0 || rate > 1)
    layer_error(ErrorKind::Value, "Dropout", {x.aval()}, loc, "rate must be in [0, 1], got " + std::to_string(rate));
  if (!training || rate == 0) return x;
  return dropout(key, x, rate, training, loc);
}

MultiHeadAttention MultiHeadAttention::init(const Array& key, int64_t dim, int64_t num_heads, DType dtype) {
  if (num_heads < 1 || dim % num_heads != 0)
    throw ShapeError("ShapeError: MultiHeadAttention::init: dim " + std::to_string(dim) +
                     " must be a positive multiple of num_heads " + std::to_string(num_heads));
  auto proj = [&](int64_t i) {
    return Linear::init(random::fold_in(key, i), dim, dim, initializers::lecun_normal(), initializers::zeros(), dtype);
  };
  return MultiHeadAttention{proj(0), proj(1), proj(2), proj(3),
                            num_heads};
}

namespace {

// [..., L, H*D] -> [..., L, H, D]: the (..., T, N, H) layout of fx::nn::dot_product_attention.
Array split_heads(const Array& x, int64_t heads, SourceLoc loc) {
  const Shape& s = x.shape();
  Shape split(s.begin(), s.end() - 1);
  split.push_back(heads);
  split.push_back(s[size_t(s.rank() - 1)] / heads);
  return reshape(x, split, loc);
}

// [..., L, H, D] -> [..., L, H*D]
Array merge_heads(const Array& x, SourceLoc loc) {
  const Shape& s = x.shape();
  Shape merged(s.begin(), s.end() - 2);
  merged.push_back(s[size_t(s.rank() - 2)] * s[size_t(s.rank() - 1)]);
  return reshape(x, merged, loc);
}

}  // namespace

Array MultiHeadAttention::apply(const MultiHeadAttention& p, const Array& q_in, const Array& kv_in,
                                const std::optional<Array>& mask, SourceLoc loc) {
  const int64_t dim = p.query.weight.shape()[0];
  if (q_in.ndim() < 2 || kv_in.ndim() != q_in.ndim() || q_in.shape()[size_t(q_in.ndim() - 1)] != dim ||
      kv_in.shape()[size_t(kv_in.ndim() - 1)] != dim)
    layer_error(ErrorKind::Shape, "MultiHeadAttention", {q_in.aval(), kv_in.aval(), p.query.weight.aval()}, loc,
                "inputs must be [..., length, " + std::to_string(dim) + "] of the same rank");
  const int64_t h = p.num_heads;
  Array q = split_heads(Linear::apply(p.query, q_in, std::nullopt, loc), h, loc);
  Array k = split_heads(Linear::apply(p.key, kv_in, std::nullopt, loc), h, loc);
  Array v = split_heads(Linear::apply(p.value, kv_in, std::nullopt, loc), h, loc);
  // Scaled by 1/sqrt(dim / heads), dot_product_attention's default.
  Array attended = dot_product_attention(q, k, v, mask, std::nullopt, false, loc);  // [..., Lq, H, D]
  return Linear::apply(p.out, merge_heads(attended, loc), std::nullopt, loc);
}

Array MultiHeadAttention::apply(const MultiHeadAttention& p, const Array& x, SourceLoc loc) {
  return apply(p, x, x, std::nullopt, loc);
}

}  // namespace fluxion::nn
