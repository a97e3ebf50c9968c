#include "api/conv.h"

#include <algorithm>

#include "api/operands.h"
#include "ir/trace.h"

namespace fluxion {
namespace {

IntList ones(size_t n) { return IntList(n, 1); }

// Dilating a size d by k leaves 1 + k (d - 1) (0 stays 0).
int64_t dilated(int64_t d, int64_t k) { return d == 0 ? 0 : 1 + k * (d - 1); }

std::vector<AbstractArray> avals(std::initializer_list<ArrayLike> xs) {
  std::vector<AbstractArray> r;
  for (const ArrayLike& x : xs) r.push_back(x.aval());
  return r;
}

}  // namespace

ConvDimensionNumbers conv_dimension_numbers(std::string_view lhs, std::string_view rhs, std::string_view out) {
  auto fail = [&](const std::string& why) -> void {
    throw ValueError("ValueError: conv_dimension_numbers(\"" + std::string(lhs) + "\", \"" + std::string(rhs) +
                     "\", \"" + std::string(out) + "\"): " + why);
  };
  if (lhs.size() != rhs.size() || lhs.size() != out.size() || lhs.size() < 2)
    fail("the three layouts must have one letter per dim, the same rank >= 2");
  auto index = [&](std::string_view s, char c) -> int64_t {
    if (std::count(s.begin(), s.end(), c) != 1) fail(std::string("'") + c + "' must appear exactly once in \"" + std::string(s) + "\"");
    return int64_t(s.find(c));
  };
  ConvDimensionNumbers dn{{index(lhs, 'N'), index(lhs, 'C')}, {index(rhs, 'O'), index(rhs, 'I')},
                          {index(out, 'N'), index(out, 'C')}};
  for (char c : rhs) {
    if (c == 'O' || c == 'I') continue;
    dn.rhs_spec.push_back(index(rhs, c));
    dn.lhs_spec.push_back(index(lhs, c));
    dn.out_spec.push_back(index(out, c));
  }
  return dn;
}

Padding Padding::with_leading(size_t n) const {
  if (!name_.empty()) return *this;
  std::vector<std::pair<int64_t, int64_t>> pairs(n, {0, 0});
  pairs.insert(pairs.end(), pairs_.begin(), pairs_.end());
  return Padding(std::move(pairs));
}

IntList Padding::resolve(std::string_view op, const std::vector<int64_t>& in, const std::vector<int64_t>& window,
                         const IntList& strides, const AbstractArray& x, SourceLoc loc) const {
  const size_t n = in.size();
  IntList flat;
  if (name_.empty()) {
    if (pairs_.size() != n)
      op_error(ErrorKind::Shape, op, std::span(&x, 1), loc,
               "padding has " + std::to_string(pairs_.size()) + " (low, high) pair(s) for " + std::to_string(n) +
                   " windowed dim(s)");
    for (auto [lo, hi] : pairs_) flat.insert(flat.end(), {lo, hi});
    return flat;
  }
  if (name_ != "SAME" && name_ != "VALID")
    throw ValueError("ValueError: " + std::string(op) + " at " + loc.str() + ": padding \"" + name_ +
                     "\" is not SAME, VALID or (low, high) pairs");
  for (size_t i = 0; i < n; ++i) {
    int64_t total = 0;
    // Bad strides are the primitive's to report; they get no padding here.
    if (name_ == "SAME" && i < strides.size() && strides[i] > 0) {
      const int64_t out = (in[i] + strides[i] - 1) / strides[i];
      total = std::max<int64_t>((out - 1) * strides[i] + window[i] - in[i], 0);
    }
    flat.insert(flat.end(), {total / 2, total - total / 2});
  }
  return flat;
}

Array conv_general_dilated(const ArrayLike& lhs, const ArrayLike& rhs, const IntList& window_strides,
                           const Padding& padding, const IntList& lhs_dilation, const IntList& rhs_dilation,
                           const std::optional<ConvDimensionNumbers>& dimension_numbers, int64_t feature_group_count,
                           int64_t batch_group_count, std::optional<DType> preferred_element_type, SourceLoc loc) {
  const char* op = "conv_general_dilated";
  const int rank = lhs.shape().rank();
  auto shape_error = [&](const std::string& why) { op_error(ErrorKind::Shape, op, avals({lhs, rhs}), loc, why); };
  if (rank < 2 || rhs.shape().rank() != rank)
    shape_error("the input and the kernel must have the same rank >= 2 (batch, feature, spatial...)");
  const size_t nsp = size_t(rank - 2);
  ConvDimensionNumbers dn;
  if (dimension_numbers) {
    dn = *dimension_numbers;
  } else {
    for (int64_t d = 0; d < rank; ++d) dn.lhs_spec.push_back(d);
    dn.rhs_spec = dn.out_spec = dn.lhs_spec;
  }
  if (dn.lhs_spec.size() != size_t(rank) || dn.rhs_spec.size() != size_t(rank) || dn.out_spec.size() != size_t(rank))
    shape_error("the dimension numbers describe rank " + std::to_string(dn.lhs_spec.size()) + ", the operands have rank " +
                std::to_string(rank));
  const IntList ld = lhs_dilation.empty() ? ones(nsp) : lhs_dilation;
  const IntList rd = rhs_dilation.empty() ? ones(nsp) : rhs_dilation;
  std::vector<int64_t> in, window;
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t l = dn.lhs_spec[2 + i], r = dn.rhs_spec[2 + i];
    if (l < 0 || l >= rank || r < 0 || r >= rank) shape_error("a dimension number is out of range");
    in.push_back(dilated(lhs.shape()[size_t(l)], i < ld.size() ? ld[i] : 1));
    window.push_back(dilated(rhs.shape()[size_t(r)], i < rd.size() ? rd[i] : 1));
  }
  const AbstractArray x = lhs.aval();
  Params p{{"window_strides", window_strides},
           {"padding", padding.resolve(op, in, window, window_strides, x, loc)},
           {"lhs_dilation", ld},
           {"rhs_dilation", rd},
           {"lhs_spec", dn.lhs_spec},
           {"rhs_spec", dn.rhs_spec},
           {"out_spec", dn.out_spec},
           {"feature_group_count", feature_group_count},
           {"batch_group_count", batch_group_count}};
  if (preferred_element_type) p.set("preferred_element_type", *preferred_element_type);
  ArrayLike xs[] = {lhs, rhs};
  const PromotedType t = detail::promote(xs);
  return bind1(Prim::conv_general_dilated,
               {detail::as_array(lhs, t.dtype, t.weak, loc), detail::as_array(rhs, t.dtype, t.weak, loc)}, p, loc);
}

namespace {

Array reduce_window(Prim prim, const char* op, const ArrayLike& x, const IntList& window_dimensions,
                    const IntList& window_strides, const Padding& padding, const IntList& base_dilation,
                    const IntList& window_dilation, SourceLoc loc) {
  const size_t rank = size_t(x.shape().rank());
  const AbstractArray a = x.aval();
  const IntList bd = base_dilation.empty() ? ones(rank) : base_dilation;
  const IntList wd = window_dilation.empty() ? ones(rank) : window_dilation;
  if (window_dimensions.size() != rank || bd.size() != rank || wd.size() != rank)
    op_error(ErrorKind::Shape, op, std::span(&a, 1), loc,
             "window_dimensions, base_dilation and window_dilation need one entry per dim (rank " +
                 std::to_string(rank) + ")");
  std::vector<int64_t> in, window;
  for (size_t i = 0; i < rank; ++i) {
    in.push_back(dilated(x.shape()[i], bd[i]));
    window.push_back(dilated(window_dimensions[i], wd[i]));
  }
  Params p{{"window_dimensions", window_dimensions},
           {"window_strides", window_strides},
           {"padding", padding.resolve(op, in, window, window_strides, a, loc)},
           {"base_dilation", bd},
           {"window_dilation", wd}};
  return bind1(prim, {detail::as_array(x, x.dtype(), x.weak(), loc)}, p, loc);
}

}  // namespace

Array reduce_window_sum(const ArrayLike& x, const IntList& window_dimensions, const IntList& window_strides,
                        const Padding& padding, const IntList& base_dilation, const IntList& window_dilation,
                        SourceLoc loc) {
  return reduce_window(Prim::reduce_window_sum, "reduce_window_sum", x, window_dimensions, window_strides, padding,
                       base_dilation, window_dilation, loc);
}
Array reduce_window_max(const ArrayLike& x, const IntList& window_dimensions, const IntList& window_strides,
                        const Padding& padding, const IntList& base_dilation, const IntList& window_dilation,
                        SourceLoc loc) {
  return reduce_window(Prim::reduce_window_max, "reduce_window_max", x, window_dimensions, window_strides, padding,
                       base_dilation, window_dilation, loc);
}
Array reduce_window_min(const ArrayLike& x, const IntList& window_dimensions, const IntList& window_strides,
                        const Padding& padding, const IntList& base_dilation, const IntList& window_dilation,
                        SourceLoc loc) {
  return reduce_window(Prim::reduce_window_min, "reduce_window_min", x, window_dimensions, window_strides, padding,
                       base_dilation, window_dilation, loc);
}

}  // namespace fluxion
