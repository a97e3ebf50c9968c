// Trees (JAX's pytrees): functions take and return nested containers of Arrays. Array leaves are
// traced; every other leaf is static. Containers: std::tuple, std::pair, std::vector, std::array,
// std::map<std::string, T>, std::optional, and structs registered with FLUXION_TREE.
#pragma once
#include <array>
#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/array.h"

// FLUXION_TREE(Params, w1, b1, w2, b2);  at namespace scope, next to the struct: its fields (in this
// order) are the struct's children.
// The field names, as written ("w1, b1, w2, b2"), name the leaves of saved checkpoints.
#define FLUXION_TREE(Type, ...)                                                                  \
  [[maybe_unused]] inline auto fluxion_tree_members(const Type*) {                              \
    return std::make_tuple(FLUXION_PP_FOR_EACH(FLUXION_PP_MEMBER_PTR, Type, __VA_ARGS__));      \
  }                                                                                              \
  [[maybe_unused]] inline const char* fluxion_tree_field_names(const Type*) { return #__VA_ARGS__; } \
  static_assert(true, "")
#define FLUXION_PP_MEMBER_PTR(T, field) &T::field
#define FLUXION_PP_EXPAND(x) x
#define FLUXION_PP_FE_1(m, T, x) m(T, x)
#define FLUXION_PP_FE_2(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_1(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_3(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_2(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_4(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_3(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_5(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_4(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_6(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_5(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_7(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_6(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_8(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_7(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_9(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_8(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_10(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_9(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_11(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_10(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_12(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_11(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_13(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_12(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_14(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_13(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_15(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_14(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_16(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_15(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_17(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_16(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_18(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_17(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_19(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_18(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_20(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_19(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_21(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_20(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_22(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_21(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_23(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_22(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_24(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_23(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_25(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_24(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_26(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_25(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_27(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_26(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_28(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_27(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_29(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_28(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_30(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_29(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_31(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_30(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_32(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_31(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_33(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_32(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_34(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_33(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_35(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_34(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_36(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_35(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_37(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_36(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_38(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_37(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_39(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_38(m, T, __VA_ARGS__))
#define FLUXION_PP_FE_40(m, T, x, ...) m(T, x), FLUXION_PP_EXPAND(FLUXION_PP_FE_39(m, T, __VA_ARGS__))
#define FLUXION_PP_GET(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, _33, _34, _35, _36, _37, _38, _39, _40, NAME, ...) NAME
#define FLUXION_PP_FOR_EACH(m, T, ...) FLUXION_PP_EXPAND(FLUXION_PP_GET(__VA_ARGS__, FLUXION_PP_FE_40, FLUXION_PP_FE_39, FLUXION_PP_FE_38, FLUXION_PP_FE_37, FLUXION_PP_FE_36, FLUXION_PP_FE_35, FLUXION_PP_FE_34, FLUXION_PP_FE_33, FLUXION_PP_FE_32, FLUXION_PP_FE_31, FLUXION_PP_FE_30, FLUXION_PP_FE_29, FLUXION_PP_FE_28, FLUXION_PP_FE_27, FLUXION_PP_FE_26, FLUXION_PP_FE_25, FLUXION_PP_FE_24, FLUXION_PP_FE_23, FLUXION_PP_FE_22, FLUXION_PP_FE_21, FLUXION_PP_FE_20, FLUXION_PP_FE_19, FLUXION_PP_FE_18, FLUXION_PP_FE_17, FLUXION_PP_FE_16, FLUXION_PP_FE_15, FLUXION_PP_FE_14, FLUXION_PP_FE_13, FLUXION_PP_FE_12, FLUXION_PP_FE_11, FLUXION_PP_FE_10, FLUXION_PP_FE_9, FLUXION_PP_FE_8, FLUXION_PP_FE_7, FLUXION_PP_FE_6, FLUXION_PP_FE_5, FLUXION_PP_FE_4, FLUXION_PP_FE_3, FLUXION_PP_FE_2, FLUXION_PP_FE_1)(m, T, __VA_ARGS__))
namespace fluxion::tree {

namespace detail {
template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_std_array : std::false_type {};
template <class T, size_t N> struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T> struct is_tuple : std::false_type {};
template <class... T> struct is_tuple<std::tuple<T...>> : std::true_type {};
template <class A, class B> struct is_tuple<std::pair<A, B>> : std::true_type {};
template <class T> struct is_string_map : std::false_type {};
template <class V, class C, class A> struct is_string_map<std::map<std::string, V, C, A>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
concept registered = requires { fluxion_tree_members(static_cast<const T*>(nullptr)); };
}  // namespace detail

/// Appends the Array leaves of `t` in order (depth first; map entries by key).
template <class T>
void flatten_into(const T& t, std::vector<Array>& out) {
  using namespace detail;
  if constexpr (std::is_same_v<T, Array>) {
    out.push_back(t);
  } else if constexpr (is_tuple<T>::value) {
    std::apply([&](const auto&... xs) { (flatten_into(xs, out), ...); }, t);
  } else if constexpr (is_vector<T>::value || is_std_array<T>::value) {
    for (const auto& x : t) flatten_into(x, out);
  } else if constexpr (is_string_map<T>::value) {
    for (const auto& kv : t) flatten_into(kv.second, out);
  } else if constexpr (is_optional<T>::value) {
    if (t) flatten_into(*t, out);
  } else if constexpr (registered<T>) {
    std::apply([&](auto... m) { (flatten_into(t.*m, out), ...); }, fluxion_tree_members(static_cast<const T*>(nullptr)));
  }
}

/// A copy of `like` with its Array leaves replaced, in order, by *it++.
template <class T>
T rebuild(const T& like, const Array*& it) {
  using namespace detail;
  if constexpr (std::is_same_v<T, Array>) {
    return *it++;
  } else if constexpr (is_tuple<T>::value) {
    return std::apply([&](const auto&... xs) { return T{rebuild(xs, it)...}; }, like);
  } else if constexpr (is_vector<T>::value) {
    T out;
    out.reserve(like.size());
    for (const auto& x : like) out.push_back(rebuild(x, it));
    return out;
  } else if constexpr (is_std_array<T>::value) {
    T out = like;
    for (size_t i = 0; i < like.size(); ++i) out[i] = rebuild(like[i], it);
    return out;
  } else if constexpr (is_string_map<T>::value) {
    T out;
    for (const auto& kv : like) out.emplace(kv.first, rebuild(kv.second, it));
    return out;
  } else if constexpr (is_optional<T>::value) {
    if (!like) return like;
    return T(rebuild(*like, it));
  } else if constexpr (registered<T>) {
    T out = like;
    std::apply([&](auto... m) { ((out.*m = rebuild(like.*m, it)), ...); }, fluxion_tree_members(static_cast<const T*>(nullptr)));
    return out;
  } else {
    // A static leaf. It must compare (jit keys on it); a struct of Arrays that fails here most
    // likely lacks FLUXION_TREE in its own namespace.
    static_assert(std::equality_comparable<T>,
                  "a non-Array tree leaf must be equality-comparable: is FLUXION_TREE(Type, fields...) missing "
                  "(it must be declared in the namespace of Type)?");
    return like;
  }
}

/// The Array leaves of a tree.
template <class T>
std::vector<Array> leaves(const T& t) {
  std::vector<Array> out;
  flatten_into(t, out);
  return out;
}

/// The structure of a tree: enough to rebuild it from its leaves.
template <class T>
struct TreeDef {
  T like;
  size_t num_leaves;
};

template <class T>
std::pair<std::vector<Array>, TreeDef<T>> flatten(const T& t) {
  std::vector<Array> l = leaves(t);
  size_t n = l.size();
  return {std::move(l), TreeDef<T>{t, n}};
}

template <class T>
T unflatten(const TreeDef<T>& def, const std::vector<Array>& leaves) {
  if (leaves.size() != def.num_leaves)
    throw ValueError("ValueError: tree::unflatten: the tree has " + std::to_string(def.num_leaves) + " leaves, got " +
                     std::to_string(leaves.size()));
  const Array* it = leaves.data();
  return rebuild(def.like, it);
}

namespace detail {
template <class F, size_t N, size_t... K>
Array call_leafwise(F& f, const Array& x, const std::array<std::vector<Array>, N>& others, [[maybe_unused]] size_t i,
                    std::index_sequence<K...>) {
  return f(x, others[K][i]...);
}
}  // namespace detail

/// Applies f to every Array leaf (of one tree, or leafwise over several trees of one structure).
template <class F, class T, class... Ts>
T map(F&& f, const T& t, const Ts&... rest) {
  std::vector<Array> a = leaves(t);
  std::array<std::vector<Array>, sizeof...(Ts)> others{leaves(rest)...};
  for (const auto& o : others)
    if (o.size() != a.size())
      throw ValueError("ValueError: tree::map: trees have different numbers of leaves (" + std::to_string(a.size()) +
                       " and " + std::to_string(o.size()) + ")");
  std::vector<Array> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back(detail::call_leafwise(f, a[i], others, i, std::index_sequence_for<Ts...>{}));
  const Array* it = out.data();
  return rebuild(t, it);
}

}  // namespace fluxion::tree
