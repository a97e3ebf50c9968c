// The closed set of primitives. Every table over primitives is indexed by `Prim`, and the registry
// test (tests/test_registry.cpp) checks that every primitive has registered a complete block
// (prims/registry.h), so adding a primitive here is the one place to start.
#pragma once
#include <cstdint>
#include <string_view>

namespace fluxion {

// X(enumerator, printed name)
#define FLUXION_PRIMITIVES(X)                                                                      \
  /* elementwise unary (prims/unary.cpp) */                                                        \
  X(neg, "neg") X(sign, "sign") X(floor, "floor") X(ceil, "ceil") X(round, "round")                \
  X(is_finite, "is_finite") X(exp, "exp") X(exp2, "exp2") X(log, "log") X(log1p, "log1p")          \
  X(expm1, "expm1") X(tanh, "tanh") X(logistic, "logistic") X(sin, "sin") X(cos, "cos")            \
  X(tan, "tan") X(asin, "asin") X(acos, "acos") X(atan, "atan") X(sinh, "sinh") X(cosh, "cosh")    \
  X(asinh, "asinh") X(acosh, "acosh") X(atanh, "atanh") X(sqrt, "sqrt") X(rsqrt, "rsqrt")          \
  X(cbrt, "cbrt") X(abs, "abs") X(not_, "not") X(erf, "erf") X(lgamma, "lgamma")                   \
  X(integer_pow, "integer_pow") X(stop_gradient, "stop_gradient") X(polygamma, "polygamma")                                  \
  /* elementwise binary (prims/binary.cpp) */                                                      \
  X(add, "add") X(sub, "sub") X(mul, "mul") X(div, "div") X(rem, "rem") X(pow, "pow")              \
  X(max, "max") X(min, "min") X(atan2, "atan2") X(and_, "and") X(or_, "or") X(xor_, "xor")         \
  X(add_any, "add_any") /* tangent accumulation: add, but only ever of tangents */                \
  /* comparison and selection (prims/compare.cpp) */                                               \
  X(eq, "eq") X(ne, "ne") X(lt, "lt") X(le, "le") X(gt, "gt") X(ge, "ge") X(select, "select")      \
  X(clamp, "clamp")                                                                                \
  /* conversion (prims/convert.cpp) */                                                             \
  X(convert_element_type, "convert_element_type")                                                  \
  /* shape (prims/shape.cpp, slicing.cpp) */                                                      \
  X(broadcast_in_dim, "broadcast_in_dim") X(reshape, "reshape") X(transpose, "transpose")          \
  X(squeeze, "squeeze") X(rev, "rev") X(concatenate, "concatenate") X(pad, "pad") X(iota, "iota")  \
  X(slice, "slice")                                                                                \
  /* indexing (prims/indexing.cpp) */                                                              \
  X(dynamic_slice, "dynamic_slice") X(dynamic_update_slice, "dynamic_update_slice")                \
  X(gather, "gather") X(scatter, "scatter") X(scatter_add, "scatter_add")                          \
  /* reductions (prims/reduce.cpp) */                                                                \
  X(reduce_sum, "reduce_sum") X(reduce_max, "reduce_max") X(reduce_min, "reduce_min")              \
  X(reduce_prod, "reduce_prod") X(argmax, "argmax") X(argmin, "argmin") X(reduce_and, "reduce_and") \
  X(reduce_or, "reduce_or")                                                                        \
  /* cumulative scans (prims/cumulative.cpp) */                                                    \
  X(cumsum, "cumsum") X(cumprod, "cumprod") X(cummax, "cummax") X(cummin, "cummin")                \
  /* sorting (prims/sort.cpp) */                                                                   \
  X(sort, "sort")                                                                                  \
  /* linear algebra (prims/dot_general.cpp) */                                                     \
  X(dot_general, "dot_general")                                                                    \
  /* matrix decompositions and solves, batched over leading dims (prims/linalg.cpp) */             \
  X(cholesky, "cholesky") X(triangular_solve, "triangular_solve") X(lu, "lu") X(qr, "qr")          \
  X(eigh, "eigh") X(svd, "svd") X(cholesky_linear, "cholesky_linear")                             \
  /* convolution (prims/conv.cpp) */                                                               \
  X(conv_general_dilated, "conv_general_dilated")                                                  \
  /* windowed reductions and the max-pool gradient (prims/reduce_window.cpp) */                     \
  X(reduce_window_sum, "reduce_window_sum") X(reduce_window_max, "reduce_window_max")              \
  X(reduce_window_min, "reduce_window_min") X(select_and_gather_add, "select_and_gather_add")      \
  X(select_and_scatter_add, "select_and_scatter_add")                                              \
  /* random bits (prims/random.cpp) */                                                             \
  X(threefry2x32, "threefry2x32")                                                                  \
  /* host callbacks with an effect: debug printing (prims/debug.cpp) */                           \
  X(debug_callback, "debug_callback")                                                              \
  /* user-defined derivatives and rematerialization (prims/custom.cpp) */                          \
  X(custom_jvp_call, "custom_jvp_call") X(custom_vjp_call, "custom_vjp_call")                      \
  X(custom_vjp_linear, "custom_vjp_linear") X(checkpoint, "checkpoint")                          \
  /* control flow (prims/cond.cpp, while_loop.cpp, scan.cpp) */                                   \
  X(cond, "cond") X(while_, "while") X(scan, "scan")                                             \
  /* collectives over a named axis (prims/collectives.cpp) */                                    \
  X(psum, "psum") X(pmean, "pmean") X(pmax, "pmax") X(pmin, "pmin") X(all_gather, "all_gather")    \
  X(psum_scatter, "psum_scatter") X(ppermute, "ppermute") X(all_to_all, "all_to_all")             \
  X(axis_index, "axis_index")                                                                      \
  /* per-device programs over a mesh, layout constraints (prims/shard_map.cpp) */                  \
  X(shard_map, "shard_map") X(sharding_constraint, "sharding_constraint")                          \
  /* complex numbers (prims/complex.cpp) and the FFT (prims/fft.cpp) */                          \
  X(real, "real") X(imag, "imag") X(conj, "conj") X(complex, "complex") X(fft, "fft")

enum class Prim : uint16_t {
#define FLUXION_X(id, name) id,
  FLUXION_PRIMITIVES(FLUXION_X)
#undef FLUXION_X
};

inline constexpr int kNumPrims = 0
#define FLUXION_X(id, name) +1
    FLUXION_PRIMITIVES(FLUXION_X)
#undef FLUXION_X
    ;

/// The printed name ("add", "reduce_sum", "not").
std::string_view prim_name(Prim p);
/// Looks a printed name up; returns false if there is no such primitive.
bool parse_prim(std::string_view name, Prim* out);

}  // namespace fluxion
