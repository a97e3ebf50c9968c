#include "train/recurrent.h"

#include <string>

#include "api/creation.h"
#include "api/linalg.h"
#include "api/operands.h"
#include "api/random.h"
#include "api/shape_ops.h"

namespace fluxion::nn {
namespace {

// The input and the carry must end in the kernels' in and hidden sizes; otherwise a ShapeError
// naming the cell and the user's line.
void check_step(std::string_view cell, const Array& in_kernel, const Array& hidden_kernel, const Array& h,
                const Array& x, int64_t gates, SourceLoc loc) {
  const int64_t hidden = hidden_kernel.ndim() == 2 ? hidden_kernel.shape()[0] : -1;
  const bool ok = in_kernel.ndim() == 2 && hidden > 0 && hidden_kernel.shape()[1] == gates * hidden &&
                  in_kernel.shape()[1] == gates * hidden && x.ndim() >= 1 && h.ndim() >= 1 &&
                  x.shape()[size_t(x.ndim() - 1)] == in_kernel.shape()[0] && h.shape()[size_t(h.ndim() - 1)] == hidden;
  if (!ok) {
    std::vector<AbstractArray> avals{x.aval(), h.aval(), in_kernel.aval(), hidden_kernel.aval()};
    op_error(ErrorKind::Shape, cell, avals, loc,
             "x must be [..., in] and the carry [..., hidden] for kernels [in, " + std::to_string(gates) +
                 " hidden] and [hidden, " + std::to_string(gates) + " hidden]");
  }
}

// Block k of `gates` equal blocks along the last axis.
Array block(const Array& a, int64_t k, int64_t gates, SourceLoc loc) {
  const int64_t width = a.shape()[size_t(a.ndim() - 1)] / gates;
  IntList start(size_t(a.ndim()), 0), limit = a.shape().dims();
  start.back() = k * width;
  limit.back() = (k + 1) * width;
  return slice(a, start, limit, loc);
}

}  // namespace

LSTMCell LSTMCell::init(const Array& key, int64_t in, int64_t hidden, DType dtype) {
  auto [ki, kh] = random::split(key);
  auto init = initializers::lecun_normal();
  return LSTMCell{init(ki, {in, 4 * hidden}, dtype), init(kh, {hidden, 4 * hidden}, dtype), zeros({4 * hidden}, dtype)};
}

LSTMState LSTMCell::initialize_carry(const Shape& batch_shape, int64_t hidden, DType dtype) {
  Shape s = batch_shape;
  s.push_back(hidden);
  return LSTMState{zeros(s, dtype), zeros(s, dtype)};
}

std::pair<LSTMState, Array> LSTMCell::apply(const LSTMCell& p, const LSTMState& carry, const Array& x, SourceLoc loc) {
  check_step("LSTMCell", p.input_kernel, p.hidden_kernel, carry.h, x, 4, loc);
  const DType dt = x.dtype();
  Array z = add(add(matmul(x, astype(p.input_kernel, dt, loc), loc), matmul(carry.h, astype(p.hidden_kernel, dt, loc), loc), loc),
                astype(p.bias, dt, loc), loc);
  Array i = sigmoid(block(z, 0, 4, loc), loc), f = sigmoid(block(z, 1, 4, loc), loc);
  Array g = tanh(block(z, 2, 4, loc), loc), o = sigmoid(block(z, 3, 4, loc), loc);
  Array c = add(multiply(f, carry.c, loc), multiply(i, g, loc), loc);
  Array h = multiply(o, tanh(c, loc), loc);
  return {LSTMState{c, h}, h};
}

GRUCell GRUCell::init(const Array& key, int64_t in, int64_t hidden, DType dtype) {
  auto [ki, kh] = random::split(key);
  auto init = initializers::lecun_normal();
  return GRUCell{init(ki, {in, 3 * hidden}, dtype), init(kh, {hidden, 3 * hidden}, dtype), zeros({3 * hidden}, dtype),
                 zeros({3 * hidden}, dtype)};
}

Array GRUCell::initialize_carry(const Shape& batch_shape, int64_t hidden, DType dtype) {
  Shape s = batch_shape;
  s.push_back(hidden);
  return zeros(s, dtype);
}

std::pair<Array, Array> GRUCell::apply(const GRUCell& p, const Array& h, const Array& x, SourceLoc loc) {
  check_step("GRUCell", p.input_kernel, p.hidden_kernel, h, x, 3, loc);
  const DType dt = x.dtype();
  Array xi = add(matmul(x, astype(p.input_kernel, dt, loc), loc), astype(p.input_bias, dt, loc), loc);
  Array hh = add(matmul(h, astype(p.hidden_kernel, dt, loc), loc), astype(p.hidden_bias, dt, loc), loc);
  Array r = sigmoid(add(block(xi, 0, 3, loc), block(hh, 0, 3, loc), loc), loc);
  Array z = sigmoid(add(block(xi, 1, 3, loc), block(hh, 1, 3, loc), loc), loc);
  Array n = tanh(add(block(xi, 2, 3, loc), multiply(r, block(hh, 2, 3, loc), loc), loc), loc);
  Array next = add(multiply(subtract(1.0, z, loc), n, loc), multiply(z, h, loc), loc);
  return {next, next};
}

}  // namespace fluxion::nn
