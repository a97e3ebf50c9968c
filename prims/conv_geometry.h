// The geometry of one conv_general_dilated (prims/conv.cpp): its params read and checked, the
// operands' dims named by role, and the index tables both kernels walk -- the reference kernel
// (prims/conv.cpp) and the jit's library call (kernels/conv.cpp), which shares them so that the two
// cannot disagree about where a window reads.
//
// Roles (JAX's ConvDimensionNumbers): lhs_spec = (batch dim, feature dim, spatial dims...) of the
// input, rhs_spec = (output-feature dim, input-feature dim, spatial dims...) of the kernel, out_spec
// = (batch dim, feature dim, spatial dims...) of the output; spatial dim i of each corresponds.
// Window positions are computed in the coordinates of the input dilated by lhs_dilation and padded
// by `padding` (negative padding crops): position q reads input element (q - pad_lo) / lhs_dilation
// when that divides and lies inside, else a zero.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "ir/params.h"
#include "ir/shape.h"

namespace fluxion::conv {

/// The params of one convolution, by name.
struct ConvParams {
  IntList window_strides, padding, lhs_dilation, rhs_dilation;  // padding: lo0, hi0, lo1, hi1, ...
  IntList lhs_spec, rhs_spec, out_spec;
  int64_t feature_group_count = 1, batch_group_count = 1;
};
/// Reads the params (a missing one is an internal error, as everywhere).
ConvParams conv_params(const Params& p);
/// Writes them back (the rules build new convolutions from edited copies).
Params to_params(const ConvParams& c);

/// Sizes and strides by role. `*_stride` are element strides in the row-major operand, so a kernel
/// reads any layout in place.
struct ConvGeometry {
  int nsp = 0;                   // number of spatial dims
  int64_t n = 0, c = 0;          // lhs batch and feature sizes
  int64_t o = 0, ci = 0;         // rhs output and input features (ci = c / feature_group_count)
  int64_t out_n = 0;             // n / batch_group_count
  int64_t groups = 1, batch_groups = 1;
  Shape in_sp, k_sp, out_sp;     // spatial sizes of lhs, rhs, output
  IntList stride, pad_lo, lhs_dil, rhs_dil;
  int64_t x_n = 0, x_c = 0, w_o = 0, w_i = 0, y_n = 0, y_c = 0;  // strides of the role dims
  IntList x_sp, w_sp, y_sp;      // strides of the spatial dims
  int64_t k_size() const { return k_sp.numel(); }
  int64_t out_size() const { return out_sp.numel(); }
};

/// Checks the operands against the params (ShapeError via rule_error for bad input: rank, specs,
/// channel counts, groups, strides and dilations, a window larger than the padded input) and
/// returns the geometry and the output shape (in out_spec's layout).
ConvGeometry conv_geometry(const Shape& lhs, const Shape& rhs, const ConvParams& p, Shape* out_shape = nullptr);

/// For every kernel offset k (row-major over k_sp) and output position p (row-major over out_sp):
/// the offset of the input element the window reads, in units of the lhs spatial strides, or -1
/// where it reads padding or a hole of the dilation. Layout: [k * out_size + p].
std::vector<int64_t> window_offsets(const ConvGeometry& g);
/// The offset of each kernel offset k in the rhs (rhs spatial strides) and of each output position
/// p in the output (output spatial strides).
std::vector<int64_t> kernel_offsets(const ConvGeometry& g);
std::vector<int64_t> output_offsets(const ConvGeometry& g);
/// The offset of each input position (row-major over in_sp) in the lhs (lhs spatial strides).
std::vector<int64_t> input_offsets(const ConvGeometry& g);

/// The padding (lo, hi per dim, flattened) of the convolution that transposes a windowed op with
/// respect to its input: the cotangent, dilated by the strides, padded so that a stride-1 window
/// over it lands on every input element (jax's _conv_general_vjp_lhs_padding). Per dim: the input,
/// window and output sizes, the op's strides, its padding (lo, hi pairs), input and window dilation.
IntList input_gradient_padding(const Shape& in, const Shape& window, const Shape& out, const IntList& strides,
                               const IntList& padding, const IntList& in_dil, const IntList& window_dil);
/// The same for the transpose with respect to the window (the kernel gradient: the input correlated
/// with the cotangent; jax's _conv_general_vjp_rhs_padding).
IntList kernel_gradient_padding(const Shape& in, const Shape& window, const Shape& out, const IntList& strides,
                                const IntList& padding, const IntList& in_dil, const IntList& window_dil);

}  // namespace fluxion::conv
