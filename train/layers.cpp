#include "train/layers.h"

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

Array Linear::apply(const Linear& p, const Array& x, SourceLoc loc) {
  const Shape& ws = p.weight.shape();
  if (x.ndim() < 1 || ws.rank() != 2 || x.shape()[size_t(x.ndim() - 1)] != ws[0])
    layer_error(ErrorKind::Shape, "Linear", {x.aval(), p.weight.aval(), p.bias.aval()}, loc,
                "the input's last axis must match the weight's first (in) axis");
  Array w = astype(p.weight, x.dtype(), loc), b = astype(p.bias, x.dtype(), loc);
  return add(matmul(x, w, loc), b, loc);
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
  Array y = standardize(x, -1, eps, loc);
  return add(multiply(y, astype(p.scale, y.dtype(), loc), loc), astype(p.bias, y.dtype(), loc), loc);
}

Array Dropout::apply(const Array& key, const Array& x, double rate, bool training, SourceLoc loc) {
  if (rate < 0 || rate > 1)
    layer_error(ErrorKind::Value, "Dropout", {x.aval()}, loc, "rate must be in [0, 1], got " + std::to_string(rate));
  if (!training || rate == 0) return x;
  if (rate == 1) return zeros_like(x, loc);
  Array keep = random::bernoulli(key, 1.0 - rate, x.shape(), loc);
  return where(keep, divide(x, 1.0 - rate, loc), zeros_like(x, loc), loc);
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

// [..., L, H*D] -> [..., H, L, D]
Array split_heads(const Array& x, int64_t heads, SourceLoc loc) {
  Shape s = x.shape();
  const int64_t r = s.rank(), dim = s[size_t(r - 1)];
  Shape split(s.begin(), s.end() - 1);
  split.push_back(heads);
  split.push_back(dim / heads);
  return swapaxes(reshape(x, split, loc), r - 2, r - 1, loc);
}

// [..., H, L, D] -> [..., L, H*D]
Array merge_heads(const Array& x, SourceLoc loc) {
  const int64_t r = x.ndim();
  Array t = swapaxes(x, r - 3, r - 2, loc);
  Shape s(t.shape().begin(), t.shape().end() - 2);
  s.push_back(t.shape()[size_t(r - 2)] * t.shape()[size_t(r - 1)]);
  return reshape(t, s, loc);
}

}  // namespace

Array MultiHeadAttention::apply(const MultiHeadAttention& p, const Array& q_in, const Array& kv_in,
                                const std::optional<Array>& mask, SourceLoc loc) {
  const int64_t dim = p.query.weight.shape()[0];
  if (q_in.ndim() < 2 || kv_in.ndim() != q_in.ndim() || q_in.shape()[size_t(q_in.ndim() - 1)] != dim ||
      kv_in.shape()[size_t(kv_in.ndim() - 1)] != dim)
    layer_error(ErrorKind::Shape, "MultiHeadAttention", {q_in.aval(), kv_in.aval(), p.query.weight.aval()}, loc,
                "inputs must be [..., length, " + std::to_string(dim) + "] of the same rank");
  const int64_t h = p.num_heads, r = q_in.ndim() + 1;
  Array q = split_heads(Linear::apply(p.query, q_in, loc), h, loc);
  Array k = split_heads(Linear::apply(p.key, kv_in, loc), h, loc);
  Array v = split_heads(Linear::apply(p.value, kv_in, loc), h, loc);
  const double scale = 1.0 / std::sqrt(double(dim / h));
  Array logits = multiply(matmul(q, swapaxes(k, r - 2, r - 1, loc), loc), scale, loc);  // [..., H, Lq, Lk]
  if (mask) logits = where(*mask, logits, full_like(logits, -1e30, loc), loc);
  Array attended = matmul(softmax(logits, -1, loc), v, loc);                           // [..., H, Lq, D]
  return Linear::apply(p.out, merge_heads(attended, loc), loc);
}

Array MultiHeadAttention::apply(const MultiHeadAttention& p, const Array& x, SourceLoc loc) {
  return apply(p, x, x, std::nullopt, loc);
}

}  // namespace fluxion::nn
