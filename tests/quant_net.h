// The small convnet the quantization tests export (tests/test_export_quant.cpp as a C program,
// tests/test_onnx.cpp as an ONNX QDQ model): conv 3x3 (1 -> 8) relu, max pool 2, conv 3x3 (8 -> 16)
// relu, dense 16*4*4 -> 10 on [6, 1, 8, 8] -- the Fashion-MNIST convnet's layers at a small size.
#pragma once
#include <fluxion.h>

struct ExportNet {
  fluxion::nn::Conv c1, c2;
  fluxion::nn::Linear head;
};
FLUXION_TREE(ExportNet, c1, c2, head);

namespace quant_net {

inline fluxion::Array net_forward(const ExportNet& n, const fluxion::Array& x) {
  namespace fx = fluxion;
  fx::Array h = fx::nn::max_pool(fx::nn::relu(fx::nn::Conv::apply(n.c1, x, {1, 1}, "SAME")), {2, 2});
  h = fx::nn::relu(fx::nn::Conv::apply(n.c2, h, {1, 1}, "SAME"));
  return fx::nn::Linear::apply(n.head, fx::reshape(h, {x.shape()[0], 16 * 4 * 4}));
}

inline ExportNet net_init() {
  namespace fx = fluxion;
  const fx::Array key = fx::random::key(11);
  return {fx::nn::Conv::init(fx::random::fold_in(key, 1), 1, 8, {3, 3}),
          fx::nn::Conv::init(fx::random::fold_in(key, 2), 8, 16, {3, 3}),
          fx::nn::Linear::init(fx::random::fold_in(key, 3), 16 * 4 * 4, 10)};
}

inline const fluxion::Shape kInput{6, 1, 8, 8};

}  // namespace quant_net
