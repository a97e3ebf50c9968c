// fx::nn::Sequential: layers applied one after the other (Flax's nn.Sequential), itself a parameter
// tree -- differentiate it, update it with fx::optim, save it ("layers.0.weight", ...).
//
//   auto mlp = fx::nn::sequential(fx::nn::Linear::init(k1, 784, 128), fx::nn::relu,
//                                 fx::nn::Linear::init(k2, 128, 10));
//   fx::Array logits = mlp.apply(mlp, x);      // or decltype(mlp)::apply(mlp, x)
//   auto g = fx::grad([&](const decltype(mlp)& m) { return fx::sum(m.apply(m, x)); })(mlp);
//
// Each element is a layer with a static apply(params, x) (Linear, Conv, ConvTranspose, LayerNorm,
// RMSNorm, Embedding, self-attention, or a struct of your own), a unary function of the API
// (fx::nn::relu, fx::tanh, ...: a static leaf, part of the jit signature, not saved), or a callable
// object x -> y of your own, registered with FLUXION_TREE (its non-Array fields are static leaves,
// which fx::jit keys on). Layers that need more than x (BatchNorm's
// state, Dropout's key) are applied by hand around a Sequential.
#pragma once
#include <tuple>
#include <type_traits>
#include <utility>

#include "api/elementwise.h"
#include "ir/tree.h"

namespace fluxion::nn {

template <class... Layers>
struct Sequential {
  std::tuple<Layers...> layers;

  static Array apply(const Sequential& s, const Array& x, FLUXION_LOC) {
    Array y = x;
    std::apply([&](const auto&... layer) { ((y = step(layer, y, loc)), ...); }, s.layers);
    return y;
  }

 private:
  template <class L>
  static Array step(const L& layer, const Array& x, SourceLoc loc) {
    if constexpr (std::is_invocable_r_v<Array, const L&, const ArrayLike&, SourceLoc>)
      return layer(x, loc);  // a function of the API: fx::nn::relu, fx::tanh, ...
    else if constexpr (requires { L::apply(layer, x, loc); })
      return L::apply(layer, x, loc);
    else if constexpr (requires { L::apply(layer, x); })
      return L::apply(layer, x);
    else {
      static_assert(std::is_invocable_r_v<Array, const L&, const Array&>,
                    "a Sequential element must be a layer with a static apply(params, x), a function of the API "
                    "(fx::nn::relu, fx::tanh, ...) or a callable x -> Array");
      return layer(x);
    }
  }
};

/// Sequential of the given layers and functions, in order: fx::nn::sequential(lin1, fx::nn::relu, lin2).
template <class... Layers>
Sequential<std::decay_t<Layers>...> sequential(Layers&&... layers) {
  return Sequential<std::decay_t<Layers>...>{std::tuple<std::decay_t<Layers>...>(std::forward<Layers>(layers)...)};
}

// The tree registration (FLUXION_TREE for a template): one child, the tuple of layers.
template <class... Layers>
auto fluxion_tree_members(const Sequential<Layers...>*) {
  return std::make_tuple(&Sequential<Layers...>::layers);
}
template <class... Layers>
const char* fluxion_tree_field_names(const Sequential<Layers...>*) {
  return "layers";
}

}  // namespace fluxion::nn
