#include "api/fft.h"

#include <algorithm>
#include <cmath>

#include "api/complex.h"
#include "api/creation.h"
#include "api/operands.h"
#include "api/shape_ops.h"
#include "ir/trace.h"
#include "prims/fft_kernel.h"

namespace fluxion::fft {
namespace {
using fft_kernel::FftType;

[[noreturn]] void fft_error(ErrorKind kind, std::string_view op, const AbstractArray& x, SourceLoc loc,
                            const std::string& detail) {
  std::vector<AbstractArray> avals{x};
  op_error(kind, op, avals, loc, detail);
}

// The operand in the dtype the transform takes: complex for fft/ifft/irfft, a real float for rfft.
Array operand(std::string_view op, FftType type, const ArrayLike& x_like, SourceLoc loc) {
  DType d = x_like.dtype();
  if (!is_inexact(d)) d = default_float;
  if (type == FftType::rfft) {
    if (is_complex(d)) fft_error(ErrorKind::Type, op, x_like.aval(), loc, "expects a real operand, got a complex one");
    if (d != DType::float64) d = DType::float32;
  } else {
    d = complex_dtype_of(d);
  }
  return detail::as_array(x_like, d, false, loc);
}

// Pads with zeros or cuts axis `axis` of x to `size`.
Array resize_axis(const Array& x, int64_t axis, int64_t size, SourceLoc loc) {
  const int64_t have = x.shape()[size_t(axis)];
  if (have == size) return x;
  if (have > size) {
    IntList start(size_t(x.ndim()), 0), limit = x.shape().dims();
    limit[size_t(axis)] = size;
    return slice(x, start, limit, loc);
  }
  std::vector<std::pair<int64_t, int64_t>> widths(size_t(x.ndim()), {0, 0});
  widths[size_t(axis)].second = size - have;
  return pad(x, widths, 0, loc);
}

// jnp.fft's core: resize, move the axes last, one primitive, move them back, scale for `norm`.
Array transform(std::string_view op, FftType type, const ArrayLike& x_like, IntList s, IntList axes,
                std::string_view norm, SourceLoc loc) {
  Array x = operand(op, type, x_like, loc);
  const int rank = x.ndim();
  if (norm != "backward" && norm != "ortho" && norm != "forward")
    fft_error(ErrorKind::Value, op, x.aval(), loc,
              "norm must be \"backward\", \"ortho\" or \"forward\", got \"" + std::string(norm) + "\"");
  if (axes.empty()) {  // the last len(s) axes, or all of them
    const int k = s.empty() ? rank : int(s.size());
    for (int i = rank - k; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) a = detail::normalize_axis(op, a, rank, x.aval(), loc);
  IntList sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fft_error(ErrorKind::Value, op, x.aval(), loc, "the axes " + Shape(axes).str() + " repeat an axis");
  if (axes.empty() || axes.size() > 3)
    fft_error(ErrorKind::Value, op, x.aval(), loc, "transforms 1 to 3 axes, got " + std::to_string(axes.size()));
  if (!s.empty() && s.size() != axes.size())
    fft_error(ErrorKind::Value, op, x.aval(), loc,
              "the lengths s " + Shape(s).str() + " and the axes " + Shape(axes).str() + " differ in number");
  const size_t k = axes.size();
  if (s.empty()) {
    for (int64_t a : axes) s.push_back(x.shape()[size_t(a)]);
    if (type == FftType::irfft) s.back() = 2 * (s.back() - 1);
  }
  for (int64_t n : s)
    if (n < 1) fft_error(ErrorKind::Value, op, x.aval(), loc, "the transform lengths must be positive, got " + Shape(s).str());
  for (size_t i = 0; i < k; ++i)
    x = resize_axis(x, axes[i], type == FftType::irfft && i + 1 == k ? s[i] / 2 + 1 : s[i], loc);
  // The untouched axes in order, then the transformed ones.
  IntList perm;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) perm.push_back(d);
  perm.insert(perm.end(), axes.begin(), axes.end());
  IntList back(static_cast<size_t>(rank), 0);
  for (int i = 0; i < rank; ++i) back[size_t(perm[size_t(i)])] = i;
  const Params params{{"fft_type", std::string(fft_kernel::fft_type_name(type))}, {"fft_lengths", s}};
  Array y = transpose(bind1(Prim::fft, {transpose(x, perm, loc)}, params, loc), back, loc);
  if (norm == "backward") return y;
  double n = 1;
  for (int64_t l : s) n *= double(l);
  const bool inverse = type == FftType::ifft || type == FftType::irfft;
  const double scale = norm == "ortho" ? (inverse ? std::sqrt(n) : 1 / std::sqrt(n)) : (inverse ? n : 1 / n);
  return multiply(y, scale, loc);
}

IntList one_axis(int64_t n) { return n < 0 ? IntList{} : IntList{n}; }
}  // namespace

Array fft(const ArrayLike& x, int64_t n, int64_t axis, std::string_view norm, SourceLoc loc) {
  return transform("fft", FftType::fft, x, one_axis(n), {axis}, norm, loc);
}
Array ifft(const ArrayLike& x, int64_t n, int64_t axis, std::string_view norm, SourceLoc loc) {
  return transform("ifft", FftType::ifft, x, one_axis(n), {axis}, norm, loc);
}
Array rfft(const ArrayLike& x, int64_t n, int64_t axis, std::string_view norm, SourceLoc loc) {
  return transform("rfft", FftType::rfft, x, one_axis(n), {axis}, norm, loc);
}
Array irfft(const ArrayLike& x, int64_t n, int64_t axis, std::string_view norm, SourceLoc loc) {
  return transform("irfft", FftType::irfft, x, one_axis(n), {axis}, norm, loc);
}

#define FLUXION_FFT_N(name, type)                                                                      \
  Array name##2(const ArrayLike& x, const IntList& s, const IntList& axes, std::string_view norm, SourceLoc loc) { \
    return transform(#name "2", type, x, s, axes, norm, loc);                                         \
  }                                                                                                    \
  Array name##n(const ArrayLike& x, const IntList& s, const IntList& axes, std::string_view norm, SourceLoc loc) { \
    return transform(#name "n", type, x, s, axes, norm, loc);                                         \
  }
FLUXION_FFT_N(fft, FftType::fft)
FLUXION_FFT_N(ifft, FftType::ifft)
FLUXION_FFT_N(rfft, FftType::rfft)
FLUXION_FFT_N(irfft, FftType::irfft)
#undef FLUXION_FFT_N

Array fftfreq(int64_t n, double d, DType dtype, SourceLoc loc) {
  // [0, 1, ..., (n-1)/2, -(n/2), ..., -1]: i - n where i > (n - 1) / 2.
  Array i = arange(n, DType::int32, loc);
  Array k = where(greater(i, (n - 1) / 2, loc), subtract(i, n, loc), i, loc);
  return divide(astype(k, dtype, loc), d * double(n), loc);
}
Array rfftfreq(int64_t n, double d, DType dtype, SourceLoc loc) {
  return divide(astype(arange(n / 2 + 1, DType::int32, loc), dtype, loc), d * double(n), loc);
}

}  // namespace fluxion::fft
