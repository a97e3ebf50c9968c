// Jacobians over trees (jax.jacfwd, jax.jacrev, jax.hessian):
//
//   fx::jacfwd(f)(x)              f: Array -> Array gives f(x).shape + x.shape
//   fx::jacrev(f)(p, x)           w.r.t. argument 0, any tree: a tree like p, each leaf of shape
//                                 out.shape + leaf.shape
//   fx::jacrev<0, 1>(f)(p, x)     several arguments: a std::tuple {like p, like x}
//   fx::hessian(f)(p)             jacfwd(jacrev(f)): for a struct p, a "p of p" (below)
//
// As in JAX the result is the output's tree with each output leaf replaced by the argument's tree
// (or a tuple of the arguments' trees for several argnums), whose leaves are the blocks
// d out_leaf / d arg_leaf of shape out_leaf.shape + arg_leaf.shape. A registered struct cannot
// hold trees in its Array fields, so an output struct whose leaves become trees is a
// tree::StructOf<S, J>: its blocks are read by member, `H[&Params::w].b` (JAX: H['w']['b']), and
// it is itself a tree (jit, vmap and tree::leaves accept it).
//
// Forward mode vmaps the JVP over a basis of the differentiated leaves' tangents (one column per
// input element); reverse mode vmaps the pullback over a basis of the outputs' cotangents (one row
// per output element).
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "transforms/autodiff.h"

namespace fluxion {
namespace tree {

template <class S, class J>
struct StructOf;

namespace detail {
/// T with every Array leaf replaced by J (static leaves keep their type).
template <class T, class J>
struct leaves_as {
  using type = T;
};
template <class J>
struct leaves_as<Array, J> {
  using type = J;
};
template <class T, class A, class J>
struct leaves_as<std::vector<T, A>, J> {
  using type = std::vector<typename leaves_as<T, J>::type>;
};
template <class T, size_t N, class J>
struct leaves_as<std::array<T, N>, J> {
  using type = std::array<typename leaves_as<T, J>::type, N>;
};
template <class... T, class J>
struct leaves_as<std::tuple<T...>, J> {
  using type = std::tuple<typename leaves_as<T, J>::type...>;
};
template <class A, class B, class J>
struct leaves_as<std::pair<A, B>, J> {
  using type = std::pair<typename leaves_as<A, J>::type, typename leaves_as<B, J>::type>;
};
template <class V, class C, class A, class J>
struct leaves_as<std::map<std::string, V, C, A>, J> {
  using type = std::map<std::string, typename leaves_as<V, J>::type>;
};
template <class T, class J>
struct leaves_as<std::optional<T>, J> {
  using type = std::optional<typename leaves_as<T, J>::type>;
};
template <class S, class J>
  requires(registered<S> && !std::is_same_v<J, Array>)
struct leaves_as<S, J> {
  using type = StructOf<S, J>;
};

template <class T>
struct member_type;
template <class S, class F>
struct member_type<F S::*> {
  using type = F;
};
template <class S>
using members_of = decltype(fluxion_tree_members(static_cast<const S*>(nullptr)));
template <class Members, class J>
struct fields_as;
template <class... M, class J>
struct fields_as<std::tuple<M...>, J> {
  using type = std::tuple<typename leaves_as<typename member_type<M>::type, J>::type...>;
};
}  // namespace detail

template <class T, class J>
using leaves_as_t = typename detail::leaves_as<T, J>::type;

/// A registered struct S whose Array leaves became J (a tree): the fields in S's order, read by
/// member pointer. It is a tree itself (its one child is the tuple of fields).
template <class S, class J>
struct StructOf {
  using Fields = typename detail::fields_as<detail::members_of<S>, J>::type;
  Fields fields;

  /// The field that S's `member` became.
  template <class F>
  const leaves_as_t<F, J>& operator[](F S::*member) const {
    using Members = detail::members_of<S>;
    const leaves_as_t<F, J>* found = nullptr;
    const Members members = fluxion_tree_members(static_cast<const S*>(nullptr));
    [&]<size_t... I>(std::index_sequence<I...>) {
      auto visit = [&]<size_t K>(std::integral_constant<size_t, K>) {
        if constexpr (std::is_same_v<std::tuple_element_t<K, Members>, F S::*>)
          if (std::get<K>(members) == member) found = &std::get<K>(fields);
      };
      (visit(std::integral_constant<size_t, I>{}), ...);
    }(std::make_index_sequence<std::tuple_size_v<Fields>>{});
    return *found;  // every member pointer of S is one of its registered members
  }
};
template <class S, class J>
auto fluxion_tree_members(const StructOf<S, J>*) {
  return std::make_tuple(&StructOf<S, J>::fields);
}

/// A tree shaped like `like` with each Array leaf replaced, in leaf order, by next() (a J).
template <class J, class T, class Next>
leaves_as_t<T, J> map_leaves(const T& like, Next& next) {
  using R = leaves_as_t<T, J>;
  if constexpr (std::is_same_v<T, Array>) {
    return next();
  } else if constexpr (detail::is_vector<T>::value) {
    R r;
    for (const auto& x : like) r.push_back(map_leaves<J>(x, next));
    return r;
  } else if constexpr (detail::is_std_array<T>::value) {
    R r;
    for (size_t i = 0; i < like.size(); ++i) r[i] = map_leaves<J>(like[i], next);
    return r;
  } else if constexpr (detail::is_tuple<T>::value) {
    // Braced initialisation evaluates left to right: leaves stay in order.
    return std::apply([&](const auto&... xs) { return R{map_leaves<J>(xs, next)...}; }, like);
  } else if constexpr (detail::is_string_map<T>::value) {
    R r;
    for (const auto& [k, v] : like) r.emplace(k, map_leaves<J>(v, next));
    return r;
  } else if constexpr (detail::is_optional<T>::value) {
    return like ? R(map_leaves<J>(*like, next)) : R();
  } else if constexpr (detail::registered<T> && std::is_same_v<J, Array>) {
    R r = like;
    std::apply([&](auto... m) { ((r.*m = map_leaves<J>(like.*m, next)), ...); }, fluxion_tree_members(&like));
    return r;
  } else if constexpr (detail::registered<T>) {
    return std::apply([&](auto... m) { return R{typename R::Fields{map_leaves<J>(like.*m, next)...}}; },
                      fluxion_tree_members(&like));
  } else {
    return like;  // a static leaf
  }
}

}  // namespace tree

namespace detail {
/// blocks[i][k]: d out_i / d x_k for the k-th differentiated leaf, of shape out_i.shape + x_k.shape.
/// Forward mode (jvp over the inputs' basis) or reverse mode (the pullback over the outputs').
std::vector<std::vector<Array>> jacobian_blocks(const Program& p, std::span<const Array> leaves,
                                                const std::vector<bool>& wrt, bool forward, SourceLoc loc);

template <bool Forward, int... argnums, class F, class... Args>
auto jacobian_impl(const F& f, SourceLoc loc, const Args&... args) {
  constexpr auto which = [] {
    if constexpr (sizeof...(argnums) == 0)
      return std::array<int, 1>{0};
    else
      return std::array<int, sizeof...(argnums)>{argnums...};
  }();
  static_assert(((argnums >= 0 && argnums < int(sizeof...(Args))) && ...),
                "jacfwd/jacrev: an argnum is out of range for the arguments given");
  const char* api = Forward ? "jacfwd" : "jacrev";
  ArgLeaves flat = flatten_args(args...);
  std::vector<bool> wrt(flat.leaves.size(), false);
  for (int a : which) {
    check_float_argument(api, flat.leaves, flat.start[size_t(a)], flat.start[size_t(a) + 1], a, loc);
    for (size_t i = flat.start[size_t(a)]; i < flat.start[size_t(a) + 1]; ++i) wrt[i] = true;
  }
  auto [program, out] = trace_to_program(f, args...);
  std::vector<std::vector<Array>> blocks = jacobian_blocks(program, flat.leaves, wrt, Forward, loc);

  // Output leaf i becomes argument a's tree (or a tuple of them) rebuilt from blocks[i].
  auto tuple_args = std::forward_as_tuple(args...);
  size_t i = 0;
  auto next = [&] {
    const std::vector<Array>& row = blocks[i++];
    auto rebuild_arg = [&]<size_t A>(std::integral_constant<size_t, A>) {
      size_t offset = 0;
      for (size_t k = 0; k < flat.start[A]; ++k) offset += wrt[k];
      const Array* it = row.data() + offset;
      return tree::rebuild(std::get<A>(tuple_args), it);
    };
    if constexpr (sizeof...(argnums) > 1)
      return std::tuple{rebuild_arg(std::integral_constant<size_t, size_t(argnums)>{})...};
    else
      return rebuild_arg(std::integral_constant<size_t, size_t(which[0])>{});
  };
  using J = decltype(next());
  return tree::map_leaves<J>(out, next);
}
}  // namespace detail

/// The Jacobian by forward mode, w.r.t. arguments `argnums` (default 0), over trees.
template <int... argnums, class F>
auto jacfwd(F f, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) { return detail::jacobian_impl<true, argnums...>(f, loc, args...); };
}
/// The Jacobian by reverse mode, w.r.t. arguments `argnums` (default 0), over trees.
template <int... argnums, class F>
auto jacrev(F f, SourceLoc loc = std::source_location::current()) {
  return [f, loc](const auto&... args) { return detail::jacobian_impl<false, argnums...>(f, loc, args...); };
}
/// The Hessian of a scalar function: jacfwd(jacrev(f)) w.r.t. `argnums` (default 0). For a tree
/// argument p: a p-shaped tree of p-shaped trees (for a struct, tree::StructOf).
template <int... argnums, class F>
auto hessian(F f, SourceLoc loc = std::source_location::current()) {
  return jacfwd<argnums...>(jacrev<argnums...>(f, loc), loc);
}

}  // namespace fluxion
