// fx::nn recurrent cells (Flax's LSTMCell and GRUCell): one step of the recurrence as a pure function
// of the parameters, the carry and the input; run them over a sequence with fx::scan.
//
//   auto cell  = fx::nn::LSTMCell::init(key, /*in=*/16, /*hidden=*/32);
//   auto carry = fx::nn::LSTMCell::initialize_carry({batch}, 32);
//   auto [last, hs] = fx::scan([&](fx::nn::LSTMState c, const fx::Array& x) {
//     return fx::nn::LSTMCell::apply(cell, c, x); }, carry, xs);          // xs: [time, batch, 16]
//
// The gates of each cell are computed with one product for the input and one for the carry (the
// gate kernels side by side, as Flax's OptimizedLSTMCell and PyTorch lay them out).
#pragma once
#include <cstdint>
#include <utility>

#include "ir/tree.h"
#include "train/initializers.h"

namespace fluxion::nn {

/// An LSTM's carry: the cell state c and the hidden state h, both [..., hidden].
struct LSTMState {
  Array c, h;
};
FLUXION_TREE(LSTMState, c, h);

/// i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of x @ input_kernel + h @ hidden_kernel + bias (four
/// blocks of `hidden` columns, in that order); c' = f c + i g; h' = o tanh(c').
struct LSTMCell {
  Array input_kernel;   // [in, 4 hidden]
  Array hidden_kernel;  // [hidden, 4 hidden]
  Array bias;           // [4 hidden]
  /// Kernels lecun_normal (Flax draws the hidden kernel orthogonal), bias zeros.
  static LSTMCell init(const Array& key, int64_t in, int64_t hidden, DType dtype = float32);
  /// Zeros of [batch_shape..., hidden].
  static LSTMState initialize_carry(const Shape& batch_shape, int64_t hidden, DType dtype = float32);
  /// x: [..., in] -> (the new carry, h') -- the (carry, output) pair fx::scan takes.
  static std::pair<LSTMState, Array> apply(const LSTMCell& p, const LSTMState& carry, const Array& x, FLUXION_LOC);
};
FLUXION_TREE(LSTMCell, input_kernel, hidden_kernel, bias);

/// r, z = sigmoid of x @ W_ir + b_ir + h @ W_hr + b_hr (and likewise z); n = tanh(x @ W_in + b_in +
/// r (h @ W_hn + b_hn)); h' = (1 - z) n + z h. Kernels and biases hold the r, z, n blocks in order.
/// (Flax's GRUCell is the case of zero hidden biases for r and z.)
struct GRUCell {
  Array input_kernel;   // [in, 3 hidden]
  Array hidden_kernel;  // [hidden, 3 hidden]
  Array input_bias;     // [3 hidden]
  Array hidden_bias;    // [3 hidden]
  static GRUCell init(const Array& key, int64_t in, int64_t hidden, DType dtype = float32);
  static Array initialize_carry(const Shape& batch_shape, int64_t hidden, DType dtype = float32);
  /// h: [..., hidden], x: [..., in] -> (h', h').
  static std::pair<Array, Array> apply(const GRUCell& p, const Array& h, const Array& x, FLUXION_LOC);
};
FLUXION_TREE(GRUCell, input_kernel, hidden_kernel, input_bias, hidden_bias);

}  // namespace fluxion::nn
