// Printing and host callbacks that work inside every transformation (jax.debug.print/callback):
//
//   fx::debug::print("x = {}, sum = {}", x, fx::sum(x));
//   fx::debug::callback([](const fx::Array& v) { log(v); }, x);
//
// Eagerly they run at once. Traced (jit, grad, vmap, scan, cond) they record a debug_callback eqn
// (prims/debug.h) that runs when the program does: under jit when the compiled code reaches it,
// in program order; under vmap once per example, in batch order (print prefixes the line with
// "[batch i] ", or "[batch i,j] " under two vmaps); under grad with the primal values, once (in
// the forward pass); inside loops once per iteration; inside cond only on the branch taken.
#pragma once
#include <ostream>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/array.h"
#include "prims/debug.h"

namespace fluxion::debug {

/// A format string that remembers the caller's line (print's arguments are a pack, so it cannot
/// take a defaulted source_location parameter of its own).
struct Format {
  std::string_view text;
  SourceLoc loc;
  Format(const char* t, std::source_location l = std::source_location::current()) : text(t), loc(l) {}  // NOLINT
  Format(std::string_view t, std::source_location l = std::source_location::current()) : text(t), loc(l) {}  // NOLINT
  Format(const std::string& t, std::source_location l = std::source_location::current()) : text(t), loc(l) {}  // NOLINT
};

/// print's stream (std::cout unless set; nullptr restores std::cout). Lines are written whole.
void set_output(std::ostream* os);

/// "{}" in `format` replaced by each array in turn ("{{" and "}}" are braces); a ValueError names
/// the line if the counts differ.
std::string format_arrays(std::string_view format, std::span<const Array> args, SourceLoc loc);

/// print's implementation over a list of arrays.
void print_arrays(std::string_view format, std::span<const Array> args, SourceLoc loc);

/// check_bounds (ir/debug_checks.h): raises a ValueError when the program runs if an entry of
/// `indices` lies outside [0, limit) -- instead of the clamping `op` would do -- naming `op`, its
/// operand types and the user's line.
void check_index_bounds(std::string_view op, std::span<const AbstractArray> operands, const Array& indices,
                        int64_t limit, const std::string& what, SourceLoc loc);

/// Prints `format` with each "{}" replaced by the next array, and a newline.
template <class... A>
void print(Format format, const A&... args) {
  static_assert((std::is_same_v<A, Array> && ...), "fx::debug::print: the values are fx::Arrays");
  const Array arrays[] = {Array(), args...};
  print_arrays(format.text, std::span<const Array>(arrays + 1, sizeof...(A)), format.loc);
}

/// Calls fn(args...) on the host with the values (one example under vmap) when the program runs.
template <class F, class... A>
void callback(F fn, const A&... args) {
  static_assert((std::is_same_v<A, Array> && ...), "fx::debug::callback: the values are fx::Arrays");
  const Array arrays[] = {Array(), args...};
  DebugCallbackFn call = [fn = std::move(fn)](std::span<const Array> xs, std::span<const int64_t>) {
    [&]<size_t... I>(std::index_sequence<I...>) { fn(xs[I]...); }(std::index_sequence_for<A...>{});
  };
  bind_debug_callback(std::move(call), std::span<const Array>(arrays + 1, sizeof...(A)), SourceLoc{});
}

}  // namespace fluxion::debug
