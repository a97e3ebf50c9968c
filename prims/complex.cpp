// Complex numbers: real, imag, conj and complex(re, im), one block per primitive (the pattern of
// prims/unary.cpp). All four are linear over the reals.
//
// Transposes follow JAX: a cotangent pairs with a tangent through Re(ct * t) -- a bilinear pairing,
// no conjugation -- so the transpose of z -> Re z is ct -> ct + 0i, of z -> Im z is ct -> -i ct, of
// conj is conj, and of (x, y) -> x + iy is ct -> (Re ct, -Im ct). With it grad(f)(z) of a real f
// is df/dx - i df/dy (docs/linalg.md "Complex numbers").
#include "lax/lax.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace elementwise;
using namespace lax;
using Arrays = std::span<const Array>;
using Args = std::span<const LinearArg>;

void expect_complex(DType d) {
  if (!is_complex(d)) rule_error(ErrorKind::Type, "expects a complex dtype, got " + std::string(dtype_name(d)));
}

// The operand of real, imag or conj, and the dtype of its result.
template <bool ToReal>
std::vector<AbstractArray> part_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  expect_complex(in[0].dtype);
  AbstractArray out = in[0];
  if (ToReal) out.dtype = real_dtype_of(out.dtype);
  return {out};
}

// Maps f over the complex elements of in[0] into out[0] (whose element type f returns).
template <class F>
void map_complex(std::span<const View> in, std::span<const View> out, F f) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (is_complex_type<T>) {
      using Out = decltype(f(T{}));
      map1<T, Out>(in[0], out[0], f);
    }
  });
}

// ---- real ---------------------------------------------------------------------------------------
void real_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  map_complex(in, out, [](auto x) { return x.real(); });
}
std::vector<Array> real_jvp(Arrays, Arrays t, Arrays, const Params&, SourceLoc) { return {real(t[0])}; }
std::vector<Array> real_transpose(Arrays ct, Args a, const Params&, SourceLoc) {
  return {convert(ct[0], a[0].aval.dtype, a[0].aval.weak_type)};
}
const Registration real_registration = PrimitiveRules{
    .prim = Prim::real,
    .shape = &part_shape<true>,
    .kernel = &real_kernel,
    .jvp = &real_jvp,
    .transpose = &real_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::real>,
    .shard = &shard_elementwise,
};

// ---- imag ---------------------------------------------------------------------------------------
void imag_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  map_complex(in, out, [](auto x) { return x.imag(); });
}
std::vector<Array> imag_jvp(Arrays, Arrays t, Arrays, const Params&, SourceLoc) { return {imag(t[0])}; }
std::vector<Array> imag_transpose(Arrays ct, Args, const Params&, SourceLoc) {
  return {complex(zeros_like(ct[0]), -ct[0])};
}
const Registration imag_registration = PrimitiveRules{
    .prim = Prim::imag,
    .shape = &part_shape<true>,
    .kernel = &imag_kernel,
    .jvp = &imag_jvp,
    .transpose = &imag_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::imag>,
    .shard = &shard_elementwise,
};

// ---- conj ---------------------------------------------------------------------------------------
void conj_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  map_complex(in, out, [](auto x) { return std::conj(x); });
}
std::vector<Array> conj_jvp(Arrays, Arrays t, Arrays, const Params&, SourceLoc) { return {conj(t[0])}; }
std::vector<Array> conj_transpose(Arrays ct, Args, const Params&, SourceLoc) { return {conj(ct[0])}; }
const Registration conj_registration = PrimitiveRules{
    .prim = Prim::conj,
    .shape = &part_shape<false>,
    .kernel = &conj_kernel,
    .jvp = &conj_jvp,
    .transpose = &conj_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::conj>,
    .shard = &shard_elementwise,
};

// ---- complex(re, im): both f32 (-> c64) or both f64 (-> c128); a rank-0 operand broadcasts -----------
std::vector<AbstractArray> complex_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 2) rule_error(ErrorKind::Type, "expects 2 operands (re, im), got " + std::to_string(in.size()));
  Shape s = nary_shape(in);
  const DType d = same_dtype(in);
  if (d != DType::float32 && d != DType::float64)
    rule_error(ErrorKind::Type, "expects f32 or f64 parts, got " + std::string(dtype_name(d)));
  return {AbstractArray{std::move(s), complex_dtype_of(d), all_weak(in)}};
}
void complex_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype(in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_floating_point_v<T>)
      map2<T, std::complex<T>>(in[0], in[1], out[0], [](T re, T im) { return std::complex<T>(re, im); });
  });
}
std::vector<Array> complex_jvp(Arrays x, Arrays t, Arrays y, const Params&, SourceLoc) {
  // Zero tangents stay symbolic only when both are; otherwise the missing part is a zero array.
  if (is_zero(t[0]) && is_zero(t[1])) return {Array()};
  Array re = is_zero(t[0]) ? zeros_like(x[0]) : t[0], im = is_zero(t[1]) ? zeros_like(x[1]) : t[1];
  return {complex(lift(re, y[0]), lift(im, y[0]))};
}
std::vector<Array> complex_transpose(Arrays ct, Args a, const Params&, SourceLoc) {
  return {a[0].linear ? unbroadcast(real(ct[0]), a[0].aval) : Array(),
          a[1].linear ? unbroadcast(-imag(ct[0]), a[1].aval) : Array()};
}
const Registration complex_registration = PrimitiveRules{
    .prim = Prim::complex,
    .shape = &complex_shape,
    .kernel = &complex_kernel,
    .jvp = &complex_jvp,
    .transpose = &complex_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::complex>,
    .shard = &shard_elementwise,
};

}  // namespace
}  // namespace fluxion
