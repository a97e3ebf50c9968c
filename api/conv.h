// Convolutions and windowed reductions (jax.lax names): conv_general_dilated and
// reduce_window_{sum,max,min}. The pooling and normalisation layers built on them are in api/nn.h.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/elementwise.h"
#include "ir/params.h"

namespace fluxion {

/// Which dims of each operand play which role (jax.lax.ConvDimensionNumbers): lhs_spec = (batch,
/// feature, spatial...) of the input, rhs_spec = (output feature, input feature, spatial...) of the
/// kernel, out_spec = (batch, feature, spatial...) of the output.
struct ConvDimensionNumbers {
  IntList lhs_spec, rhs_spec, out_spec;
};

/// Dimension numbers from layout strings, as jax.lax.conv_dimension_numbers: "NCHW", "OIHW", "NCHW"
/// (N batch, C feature, O/I output/input feature, any other letter a spatial dim; the spatial dims
/// pair up by letter, in the kernel's order). ValueError for strings that do not describe layouts.
ConvDimensionNumbers conv_dimension_numbers(std::string_view lhs, std::string_view rhs, std::string_view out);

/// Padding of a windowed op: "SAME" (the output is ceil(input / stride), the extra split low-first
/// as in JAX), "VALID" (none), or explicit (low, high) pairs, one per windowed dim (negative crops).
class Padding {
 public:
  Padding(const char* name) : name_(name) {}  // NOLINT: "SAME" reads as a padding
  Padding(std::string name) : name_(std::move(name)) {}  // NOLINT
  Padding(std::vector<std::pair<int64_t, int64_t>> pairs) : pairs_(std::move(pairs)) {}  // NOLINT
  Padding(std::initializer_list<std::pair<int64_t, int64_t>> pairs) : pairs_(pairs) {}
  /// The pairs flattened (lo0, hi0, lo1, hi1, ...) for inputs of these sizes (already dilated),
  /// windows of these sizes (already dilated) and strides; ValueError for an unknown name,
  /// ShapeError (naming `op`) for the wrong number of pairs.
  /// The same padding for an operand with `n` more leading dims, which it leaves unpadded.
  Padding with_leading(size_t n) const;
  /// "SAME" or "VALID" (any case as given), or empty for explicit pairs.
  const std::string& name() const { return name_; }
  const std::vector<std::pair<int64_t, int64_t>>& pairs() const { return pairs_; }
  IntList resolve(std::string_view op, const std::vector<int64_t>& in, const std::vector<int64_t>& window,
                  const IntList& strides, const AbstractArray& x, SourceLoc loc) const;

 private:
  std::string name_;
  std::vector<std::pair<int64_t, int64_t>> pairs_;
};

/// An n-D convolution (cross-correlation) of `lhs` with the kernel `rhs` (jax.lax.conv_general_dilated).
/// Defaults: unit dilations, NCHW x OIHW -> NCHW (for any rank), no groups. Operands are promoted to
/// one dtype; `preferred_element_type` asks for a wider output (bfloat16 inputs, float32 result:
/// the sums accumulate in float32 either way).
Array conv_general_dilated(const ArrayLike& lhs, const ArrayLike& rhs, const IntList& window_strides,
                           const Padding& padding, const IntList& lhs_dilation = {}, const IntList& rhs_dilation = {},
                           const std::optional<ConvDimensionNumbers>& dimension_numbers = std::nullopt,
                           int64_t feature_group_count = 1, int64_t batch_group_count = 1,
                           std::optional<DType> preferred_element_type = std::nullopt, FLUXION_LOC);

/// Reductions over sliding windows (jax.lax.reduce_window with add/max/min): one window dimension,
/// stride, padding pair and dilation per dim of x. Padding contributes the reduction's identity
/// (0, -inf, +inf). Empty dilations mean 1.
Array reduce_window_sum(const ArrayLike& x, const IntList& window_dimensions, const IntList& window_strides,
                        const Padding& padding, const IntList& base_dilation = {}, const IntList& window_dilation = {},
                        FLUXION_LOC);
Array reduce_window_max(const ArrayLike& x, const IntList& window_dimensions, const IntList& window_strides,
                        const Padding& padding, const IntList& base_dilation = {}, const IntList& window_dilation = {},
                        FLUXION_LOC);
Array reduce_window_min(const ArrayLike& x, const IntList& window_dimensions, const IntList& window_strides,
                        const Padding& padding, const IntList& base_dilation = {}, const IntList& window_dilation = {},
                        FLUXION_LOC);

}  // namespace fluxion
