// fft[fft_type fft_lengths] (jax.lax.fft): the discrete Fourier transform over the trailing
// len(fft_lengths) axes (1 to 3), batched over the leading ones. fft_type is "fft" and "ifft"
// (complex -> complex; ifft scaled by 1/n), "rfft" (f32/f64 -> c64/c128, the last axis keeps
// n/2 + 1 bins) or "irfft" (its inverse, complex -> real). The kernel is FFTW (prims/fft_kernel.h).
//
// It is linear. Transposes use JAX's pairing of a cotangent with a value, Re(sum ct * y) with no
// conjugation (prims/complex.cpp): the DFT matrix is symmetric, so fft and ifft transpose to
// themselves; rfft = slice(fft(x + 0i)) transposes to real(fft(pad(ct))); irfft transposes to
// conj(rfft(ct) * mask / n), where the mask counts the bins that irfft's Hermitian extension uses
// twice (all but the DC bin and, for even n, the Nyquist bin) -- JAX's _irfft_transpose.
// Under jit the kernel runs as a library call from the compiled code (kFftParams below).
#include "lax/lax.h"
#include "prims/elementwise.h"
#include "prims/fft_kernel.h"

namespace fluxion {
namespace {
using namespace lax;
using fft_kernel::FftType;
using Arrays = std::span<const Array>;

FftType fft_type_of(const Params& params) {
  FftType t;
  if (!fft_kernel::parse_fft_type(params.get<std::string>("fft_type"), &t))
    rule_error(ErrorKind::Value, "fft_type must be fft, ifft, rfft or irfft, got " + params.get<std::string>("fft_type"));
  return t;
}

std::vector<AbstractArray> fft_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  const FftType type = fft_type_of(params);
  const IntList& lengths = params.get_ints("fft_lengths");
  const AbstractArray& x = in[0];
  const int k = int(lengths.size());
  if (k < 1 || k > 3) rule_error(ErrorKind::Value, "fft_lengths must name 1 to 3 axes, got " + Shape(lengths).str());
  if (x.ndim() < k)
    rule_error(ErrorKind::Shape, "the operand has rank " + std::to_string(x.ndim()) + ", fewer axes than fft_lengths " +
                                     Shape(lengths).str());
  for (int64_t l : lengths)
    if (l < 1) rule_error(ErrorKind::Value, "fft_lengths must be positive, got " + Shape(lengths).str());
  const bool real_in = type == FftType::rfft;
  if (real_in ? (x.dtype != DType::float32 && x.dtype != DType::float64) : !is_complex(x.dtype))
    rule_error(ErrorKind::Type, std::string(fft_kernel::fft_type_name(type)) + " expects " +
                                    (real_in ? "an f32 or f64" : "a complex") + " operand, got " +
                                    std::string(dtype_name(x.dtype)));
  // The trailing axes the operand must have: the lengths, but n/2 + 1 bins last for irfft.
  IntList want = lengths;
  if (type == FftType::irfft) want.back() = lengths.back() / 2 + 1;
  const int off = x.ndim() - k;
  for (int i = 0; i < k; ++i)
    if (x.shape[size_t(off + i)] != want[size_t(i)])
      rule_error(ErrorKind::Shape, std::string(fft_kernel::fft_type_name(type)) + " of lengths " +
                                       Shape(lengths).str() + " needs trailing axes " + Shape(want).str() +
                                       ", got an operand of shape " + x.shape.str());
  AbstractArray out = x;
  if (type == FftType::rfft) {
    out.dtype = complex_dtype_of(x.dtype);
    out.shape[size_t(x.ndim() - 1)] = lengths.back() / 2 + 1;
  } else if (type == FftType::irfft) {
    out.dtype = real_dtype_of(x.dtype);
    out.shape[size_t(x.ndim() - 1)] = lengths.back();
  }
  return {out};
}

void fft_kernel_rule(std::span<const View> in, std::span<const View> out, const Params& params) {
  fft_kernel::run(fft_type_of(params), params.get_ints("fft_lengths"), in[0], out[0]);
}

Array fft_of(const Array& x, FftType type, const IntList& lengths) {
  return bind1(Prim::fft, {x}, Params{{"fft_type", std::string(fft_kernel::fft_type_name(type))}, {"fft_lengths", lengths}},
               {});
}

std::vector<Array> fft_jvp(Arrays, Arrays t, Arrays, const Params& params, SourceLoc) {
  return {fft_of(t[0], fft_type_of(params), params.get_ints("fft_lengths"))};
}

// rfft's transpose: the cotangent of n/2 + 1 bins zero-padded to n, fft, real part.
Array rfft_transpose(const Array& ct, const IntList& lengths) {
  IntList config;
  for (int d = 0; d < ct.ndim(); ++d) config.insert(config.end(), {0, 0, 0});
  config[size_t(3 * (ct.ndim() - 1) + 1)] = lengths.back() - ct.shape()[size_t(ct.ndim() - 1)];
  Array padded = pad(ct, literal_array(Literal::of_double(0, ct.dtype())), config);
  return real(fft_of(padded, FftType::fft, lengths));
}

// irfft's transpose: conj(rfft(ct) * mask / n), mask 1 at the DC bin (and the Nyquist bin of an
// even n), 2 elsewhere.
Array irfft_transpose(const Array& ct, const IntList& lengths) {
  Array x = fft_of(ct, FftType::rfft, lengths);
  const int64_t bins = x.shape()[size_t(x.ndim() - 1)];
  const DType part = real_dtype_of(x.dtype());
  int64_t n = 1;
  for (int64_t l : lengths) n *= l;
  Array k = iota(part, Shape{bins}, 0);
  Array once = scalar_like(k, 1.0 / double(n)), twice = scalar_like(k, 2.0 / double(n));
  Array weight = select(eq(k, scalar_like(k, 0)), once, twice);
  if (lengths.back() % 2 == 0) weight = select(eq(k, scalar_like(k, double(bins - 1))), once, weight);
  weight = broadcast_in_dim(convert(weight, x.dtype()), x.shape(), IntList{x.ndim() - 1});
  return conj(x * weight);
}

std::vector<Array> fft_transpose(Arrays ct, std::span<const LinearArg>, const Params& params, SourceLoc) {
  const FftType type = fft_type_of(params);
  const IntList& lengths = params.get_ints("fft_lengths");
  if (type == FftType::rfft) return {rfft_transpose(ct[0], lengths)};
  if (type == FftType::irfft) return {irfft_transpose(ct[0], lengths)};
  return {fft_of(ct[0], type, lengths)};
}

// The transformed axes are the trailing ones: the batch dimension goes in front.
std::vector<BatchedArray> fft_batch(std::span<const BatchedArray> args, const Params& params, int64_t axis_size,
                                    SourceLoc loc) {
  if (args[0].dim == kNotMapped) return {BatchedArray{bind1(Prim::fft, {args[0].value}, params, loc), kNotMapped}};
  return {BatchedArray{bind1(Prim::fft, {batch_at(args[0], 0, axis_size, loc)}, params, loc), 0}};
}

// Compiled code calls the kernel (lowering/lower_library.cpp): fft_type as its index in
// kFftTypeNames, fft_lengths as its length and elements.
constexpr KernelParam kFftParams[] = {{.name = "fft_type", .choices = fft_kernel::kFftTypeNames},
                                      {.name = "fft_lengths", .is_ints = true}};

const Registration fft_registration = PrimitiveRules{
    .prim = Prim::fft,
    .shape = &fft_shape,
    .kernel = &fft_kernel_rule,
    .kernel_params = kFftParams,
    .jvp = &fft_jvp,
    .transpose = &fft_transpose,
    .linear = kLinear,
    .batch = &fft_batch,
};

}  // namespace
}  // namespace fluxion
