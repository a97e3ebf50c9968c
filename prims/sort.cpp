// sort[dimension=d is_stable=B num_keys=k] over n operands of one shape (lax.sort): each line along
// `dimension` is ordered lexicographically by the first k operands, and every operand is permuted
// alike, so sort(bits, iota) is a random permutation and sort(x, iota) an argsort. NaNs order last
// (numpy, JAX); -0.0 and 0.0 are equal; complex keys order by real, then imaginary part. The kernel always sorts stably, which satisfies both
// settings of is_stable.
#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include "lax/lax.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {

std::vector<AbstractArray> sort_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.empty()) rule_error(ErrorKind::Type, "expects at least 1 operand");
  if (!params.has("dimension") || !params.has("is_stable") || !params.has("num_keys"))
    rule_error(ErrorKind::Value, "expects params dimension, is_stable and num_keys");
  const int64_t dim = params.get_int("dimension");
  const int64_t num_keys = params.get_int("num_keys");
  params.get_bool("is_stable");
  for (const AbstractArray& a : in)
    if (!(a.shape == in[0].shape))
      rule_error(ErrorKind::Shape, "operands must have equal shapes, got " + in[0].shape.str() + " and " + a.shape.str());
  if (dim < 0 || dim >= in[0].ndim())
    rule_error(ErrorKind::Shape, "dimension " + std::to_string(dim) + " is out of range for operands of rank " +
                                     std::to_string(in[0].ndim()));
  if (num_keys < 1 || num_keys > int64_t(in.size()))
    rule_error(ErrorKind::Value, "num_keys must be between 1 and the number of operands (" +
                                     std::to_string(in.size()) + "), got " + std::to_string(num_keys));
  return std::vector<AbstractArray>(in.begin(), in.end());
}

/// NaN-last strict weak order on one element type.
template <class C>
bool less_nan_last(C a, C b) {
  if (a != a) return false;
  if (b != b) return true;
  return a < b;
}

/// Complex numbers order lexicographically, by the real parts and then the imaginary ones, each
/// NaN-last (numpy's order, which JAX follows).
template <class C>
bool less_nan_last(std::complex<C> a, std::complex<C> b) {
  if (less_nan_last(a.real(), b.real())) return true;
  if (less_nan_last(b.real(), a.real())) return false;
  return less_nan_last(a.imag(), b.imag());
}

/// Three-way comparison of two elements (by flat offset) of one key operand.
using KeyCompare = std::function<int(int64_t, int64_t)>;
KeyCompare key_compare(const View& key) {
  return dispatch_dtype_complex(key.dtype(), [&](auto z) -> KeyCompare {
    using T = decltype(z);
    using C = compute_t<T>;
    const T* x = key.as<const T>();
    return [x](int64_t i, int64_t j) {
      const C a = static_cast<C>(x[i]), b = static_cast<C>(x[j]);
      return less_nan_last(a, b) ? -1 : less_nan_last(b, a) ? 1 : 0;
    };
  });
}

/// Copies element src[perm[k]] to dst[k] along one line, for every operand (by element size).
void permute_line(const View& src, const View& dst, int64_t base, int64_t stride, const std::vector<int64_t>& perm) {
  const size_t isz = itemsize(src.dtype());
  const char* s = static_cast<const char*>(src.data);
  char* d = static_cast<char*>(dst.data);
  for (size_t k = 0; k < perm.size(); ++k)
    std::memcpy(d + size_t(base + int64_t(k) * stride) * isz, s + size_t(base + perm[k] * stride) * isz, isz);
}

void sort_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const Shape& shape = in[0].shape();
  const int64_t dim = params.get_int("dimension");
  const size_t num_keys = size_t(params.get_int("num_keys"));
  int64_t outer = 1, len = shape[size_t(dim)], inner = 1;
  for (int d = 0; d < shape.rank(); ++d) {
    if (d < dim) outer *= shape[size_t(d)];
    if (d > dim) inner *= shape[size_t(d)];
  }
  if (in[0].size() == 0) return;
  std::vector<int64_t> perm(static_cast<size_t>(len), 0);
  // Sorts the positions 0..len-1 of the line starting at `base` with a comparator on flat offsets.
  auto sort_line = [&](int64_t base, auto&& less_at) {
    std::iota(perm.begin(), perm.end(), int64_t(0));
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return less_at(base + a * inner, base + b * inner); });
    for (size_t i = 0; i < in.size(); ++i) permute_line(in[i], out[i], base, inner, perm);
  };
  auto for_each_line = [&](auto&& less_at) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) sort_line(o * len * inner + j, less_at);
  };
  if (num_keys == 1) {  // the common case (sort, argsort, permutation): a typed comparator
    dispatch_dtype_complex(in[0].dtype(), [&](auto z) {
      using T = decltype(z);
      using C = compute_t<T>;
      const T* x = in[0].as<const T>();
      for_each_line([x](int64_t a, int64_t b) { return less_nan_last(static_cast<C>(x[a]), static_cast<C>(x[b])); });
    });
    return;
  }
  std::vector<KeyCompare> keys;
  for (size_t k = 0; k < num_keys; ++k) keys.push_back(key_compare(in[k]));
  for_each_line([&](int64_t a, int64_t b) {
    for (const KeyCompare& c : keys)
      if (int r = c(a, b)) return r < 0;
    return false;
  });
}

// Sorting permutes: the tangents follow their values. Sorting the tangents as extra operands
// behind the same keys applies the same permutation (the sort is stable, so ties agree too).
std::vector<Array> sort_jvp(std::span<const Array> x, std::span<const Array> t, std::span<const Array>,
                            const Params& params, SourceLoc loc) {
  std::vector<Array> operands(x.begin(), x.end());
  std::vector<size_t> carried;
  for (size_t i = 0; i < t.size(); ++i)
    if (!is_zero(t[i])) {
      carried.push_back(i);
      operands.push_back(t[i]);
    }
  std::vector<Array> sorted = bind(Prim::sort, operands, params, loc);
  std::vector<Array> out(x.size());
  for (size_t k = 0; k < carried.size(); ++k) out[carried[k]] = sorted[x.size() + k];
  return out;
}

// The JVP above leaves sort(keys..., tangents...) in the linear program: linear in the operands
// after the keys, with the keys known. It applies the keys' sorting permutation P to each line
// (out[i] = t[P[i]]), so its transpose scatters back, ct_t[P[i]] = ct[i]: that is sorting ct by
// the key P (a permutation, so sorting by it applies the inverse). P is sort(keys..., iota),
// from known values only; a second-order transpose meets sort(P, ct), which this rule handles too.
std::vector<Array> sort_transpose(std::span<const Array> cts, std::span<const LinearArg> args, const Params& params,
                                  SourceLoc loc) {
  const size_t num_keys = size_t(params.get_int("num_keys"));
  for (size_t k = 0; k < num_keys; ++k)
    if (args[k].linear)
      throw TypeError("TypeError: transpose of sort at " + loc.str() + ": sort is not linear in its keys");
  std::vector<Array> keys;
  for (size_t k = 0; k < num_keys; ++k) keys.push_back(args[k].value);
  keys.push_back(lax::iota(DType::int32, args[0].aval.shape, params.get_int("dimension")));
  std::vector<Array> operands{bind(Prim::sort, keys, params, loc).back()};  // P, then the cotangents
  std::vector<size_t> which;
  for (size_t i = num_keys; i < args.size(); ++i)
    if (args[i].linear && !is_zero(cts[i])) {
      which.push_back(i);
      operands.push_back(cts[i]);
    }
  std::vector<Array> out(args.size());
  if (which.empty()) return out;
  Params one_key = params;
  one_key.set("num_keys", int64_t(1));
  std::vector<Array> sorted = bind(Prim::sort, operands, one_key, loc);
  for (size_t k = 0; k < which.size(); ++k) out[which[k]] = sorted[k + 1];
  return out;
}
// Batching: every operand gets the batch dim where the first mapped one has it (unmapped operands
// broadcast there), and the sorted dimension is renumbered around it.
std::vector<BatchedArray> sort_batch(std::span<const BatchedArray> a, const Params& params, int64_t n, SourceLoc loc) {
  int64_t bd;
  std::vector<Array> ins = batch_like_first(a, n, loc, bd);
  Params p = params;
  const int64_t dim = params.get_int("dimension");
  p.set("dimension", dim >= bd ? dim + 1 : dim);
  std::vector<BatchedArray> out;
  for (Array& y : bind(Prim::sort, ins, p, loc)) out.push_back({std::move(y), bd});
  return out;
}
// Compiled code calls the kernel (a sorting network gains nothing from generated code), passing
// these params.
constexpr KernelParam kSortParams[] = {{"dimension"}, {"is_stable", true}, {"num_keys"}};

const Registration sort_registration = PrimitiveRules{
    .prim = Prim::sort,
    .shape = &sort_shape,
    .kernel = &sort_kernel,
    .kernel_params = kSortParams,
    .jvp = &sort_jvp,
    .transpose = &sort_transpose,
    .linear = kLinearByParams,  // in the operands after the keys
    .batch = &sort_batch,
    .gpu = GpuLowering::generic,
};

}  // namespace
}  // namespace fluxion
