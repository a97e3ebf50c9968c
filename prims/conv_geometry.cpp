// conv_general_dilated's geometry (prims/conv_geometry.h): the params' checks, the roles' sizes and
// strides, and the window tables.
#include "prims/conv_geometry.h"

#include "ir/error.h"
#include "prims/strides.h"

namespace fluxion::conv {

using strides::ints_str;

ConvParams conv_params(const Params& p) {
  return ConvParams{p.get_ints("window_strides"), p.get_ints("padding"),  p.get_ints("lhs_dilation"),
                    p.get_ints("rhs_dilation"),   p.get_ints("lhs_spec"), p.get_ints("rhs_spec"),
                    p.get_ints("out_spec"),       p.get_int("feature_group_count"),
                    p.get_int("batch_group_count")};
}

Params to_params(const ConvParams& c) {
  return Params{{"window_strides", c.window_strides},
                {"padding", c.padding},
                {"lhs_dilation", c.lhs_dilation},
                {"rhs_dilation", c.rhs_dilation},
                {"lhs_spec", c.lhs_spec},
                {"rhs_spec", c.rhs_spec},
                {"out_spec", c.out_spec},
                {"feature_group_count", c.feature_group_count},
                {"batch_group_count", c.batch_group_count}};
}

namespace {

[[noreturn]] void shape_error(const std::string& s) { rule_error(ErrorKind::Shape, s); }

void check_positive(const char* what, const IntList& v, size_t n) {
  if (v.size() != n)
    shape_error(std::string(what) + " " + ints_str(v) + " must have one entry per spatial dimension (" +
                std::to_string(n) + ")");
  for (int64_t x : v)
    if (x <= 0) shape_error(std::string(what) + " " + ints_str(v) + " must be positive");
}

// Dilating a size d by k leaves 1 + k (d - 1) (0 stays 0), as lax._dilate_shape.
int64_t dilated(int64_t d, int64_t k) { return d == 0 ? 0 : 1 + k * (d - 1); }

}  // namespace

ConvGeometry conv_geometry(const Shape& lhs, const Shape& rhs, const ConvParams& p, Shape* out_shape) {
  const int rank = lhs.rank();
  if (rank < 2) shape_error("the input must have rank >= 2 (batch, feature, spatial...), got rank " + std::to_string(rank));
  if (rhs.rank() != rank)
    shape_error("the input and the kernel must have the same rank, got " + std::to_string(rank) + " and " +
                std::to_string(rhs.rank()));
  strides::check_length("lhs_spec", p.lhs_spec, rank);
  strides::check_length("rhs_spec", p.rhs_spec, rank);
  strides::check_length("out_spec", p.out_spec, rank);
  strides::check_distinct_dims("lhs_spec", p.lhs_spec, rank);
  strides::check_distinct_dims("rhs_spec", p.rhs_spec, rank);
  strides::check_distinct_dims("out_spec", p.out_spec, rank);
  ConvGeometry g;
  g.nsp = rank - 2;
  const size_t nsp = size_t(g.nsp);
  check_positive("window_strides", p.window_strides, nsp);
  check_positive("lhs_dilation", p.lhs_dilation, nsp);
  check_positive("rhs_dilation", p.rhs_dilation, nsp);
  if (p.padding.size() != 2 * nsp)
    shape_error("padding " + ints_str(p.padding) + " must hold a (low, high) pair per spatial dimension (" +
                std::to_string(nsp) + ")");
  g.groups = p.feature_group_count;
  g.batch_groups = p.batch_group_count;
  if (g.groups < 1 || g.batch_groups < 1)
    shape_error("feature_group_count and batch_group_count must be >= 1, got " + std::to_string(g.groups) + " and " +
                std::to_string(g.batch_groups));
  if (g.groups > 1 && g.batch_groups > 1)
    shape_error("feature_group_count and batch_group_count cannot both exceed 1");

  auto at = [](const Shape& s, int64_t d) { return s[size_t(d)]; };
  g.n = at(lhs, p.lhs_spec[0]);
  g.c = at(lhs, p.lhs_spec[1]);
  g.o = at(rhs, p.rhs_spec[0]);
  g.ci = at(rhs, p.rhs_spec[1]);
  if (g.c != g.ci * g.groups)
    shape_error("the input has " + std::to_string(g.c) + " feature(s) but the kernel expects " +
                std::to_string(g.ci) + " x feature_group_count " + std::to_string(g.groups) + " = " +
                std::to_string(g.ci * g.groups));
  if (g.o % g.groups != 0)
    shape_error("the kernel's " + std::to_string(g.o) + " output feature(s) do not divide into feature_group_count " +
                std::to_string(g.groups) + " group(s)");
  if (g.n % g.batch_groups != 0 || g.o % g.batch_groups != 0)
    shape_error("batch_group_count " + std::to_string(g.batch_groups) + " must divide the batch size " +
                std::to_string(g.n) + " and the output features " + std::to_string(g.o));
  g.out_n = g.n / g.batch_groups;

  const std::vector<int64_t> xs = strides_of(lhs), ws = strides_of(rhs);
  g.x_n = xs[size_t(p.lhs_spec[0])];
  g.x_c = xs[size_t(p.lhs_spec[1])];
  g.w_o = ws[size_t(p.rhs_spec[0])];
  g.w_i = ws[size_t(p.rhs_spec[1])];
  g.stride = p.window_strides;
  g.lhs_dil = p.lhs_dilation;
  g.rhs_dil = p.rhs_dilation;
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t in = at(lhs, p.lhs_spec[2 + i]), k = at(rhs, p.rhs_spec[2 + i]);
    const int64_t lo = p.padding[2 * i], hi = p.padding[2 * i + 1];
    const int64_t padded = dilated(in, g.lhs_dil[i]) + lo + hi, window = dilated(k, g.rhs_dil[i]);
    if (padded < window)
      shape_error("in spatial dimension " + std::to_string(i) + " the window (" + std::to_string(k) +
                  (g.rhs_dil[i] > 1 ? " dilated by " + std::to_string(g.rhs_dil[i]) : std::string()) + ": " +
                  std::to_string(window) + ") is larger than the padded input (" + std::to_string(padded) + ")");
    g.in_sp.push_back(in);
    g.k_sp.push_back(k);
    g.out_sp.push_back(window == 0 ? 0 : (padded - window) / g.stride[i] + 1);
    g.pad_lo.push_back(lo);
    g.x_sp.push_back(xs[size_t(p.lhs_spec[2 + i])]);
    g.w_sp.push_back(ws[size_t(p.rhs_spec[2 + i])]);
  }
  Shape out(std::vector<int64_t>(size_t(rank), 0));
  out[size_t(p.out_spec[0])] = g.out_n;
  out[size_t(p.out_spec[1])] = g.o;
  for (size_t i = 0; i < nsp; ++i) out[size_t(p.out_spec[2 + i])] = g.out_sp[i];
  const std::vector<int64_t> ys = strides_of(out);
  g.y_n = ys[size_t(p.out_spec[0])];
  g.y_c = ys[size_t(p.out_spec[1])];
  for (size_t i = 0; i < nsp; ++i) g.y_sp.push_back(ys[size_t(p.out_spec[2 + i])]);
  if (out_shape) *out_shape = out;
  return g;
}

namespace {
// Offsets of every point of `sizes` (row-major) under `strides`.
std::vector<int64_t> offsets(const Shape& sizes, const IntList& st) {
  std::vector<int64_t> r;
  r.reserve(size_t(sizes.numel()));
  strides::for_each_index(sizes, [&](int64_t, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
    r.push_back(off);
  });
  return r;
}
}  // namespace

std::vector<int64_t> kernel_offsets(const ConvGeometry& g) { return offsets(g.k_sp, g.w_sp); }
std::vector<int64_t> output_offsets(const ConvGeometry& g) { return offsets(g.out_sp, g.y_sp); }
std::vector<int64_t> input_offsets(const ConvGeometry& g) { return offsets(g.in_sp, g.x_sp); }

std::vector<int64_t> window_offsets(const ConvGeometry& g) {
  const int64_t K = g.k_size(), P = g.out_size();
  std::vector<int64_t> table(size_t(K * P), -1);
  strides::for_each_index(g.k_sp, [&](int64_t k, const std::vector<int64_t>& kidx) {
    strides::for_each_index(g.out_sp, [&](int64_t p, const std::vector<int64_t>& pidx) {
      int64_t off = 0;
      for (size_t d = 0; d < kidx.size(); ++d) {
        const int64_t q = pidx[d] * g.stride[d] + kidx[d] * g.rhs_dil[d] - g.pad_lo[d];
        if (q < 0 || q % g.lhs_dil[d] != 0 || q / g.lhs_dil[d] >= g.in_sp[d]) return;
        off += q / g.lhs_dil[d] * g.x_sp[d];
      }
      table[size_t(k * P + p)] = off;
    });
  });
  return table;
}

namespace {
// Calls f(dilated input, dilated window, dilated output, padding lo) per dim; appends its pair.
template <class F>
IntList padding_per_dim(const Shape& in, const Shape& window, const Shape& out, const IntList& strides,
                        const IntList& padding, const IntList& in_dil, const IntList& window_dil, F f) {
  IntList r;
  for (size_t i = 0; i < in.size(); ++i) {
    auto [lo, hi] = f(dilated(in[i], in_dil[i]), dilated(window[i], window_dil[i]), dilated(out[i], strides[i]),
                      padding[2 * i]);
    r.insert(r.end(), {lo, hi});
  }
  return r;
}
}  // namespace

IntList input_gradient_padding(const Shape& in, const Shape& window, const Shape& out, const IntList& strides,
                               const IntList& padding, const IntList& in_dil, const IntList& window_dil) {
  return padding_per_dim(in, window, out, strides, padding, in_dil, window_dil,
                         [](int64_t i, int64_t k, int64_t o, int64_t lo) {
                           const int64_t before = k - lo - 1;
                           return std::pair<int64_t, int64_t>{before, i + k - 1 - o - before};
                         });
}

IntList kernel_gradient_padding(const Shape& in, const Shape& window, const Shape& out, const IntList& strides,
                                const IntList& padding, const IntList& in_dil, const IntList& window_dil) {
  return padding_per_dim(in, window, out, strides, padding, in_dil, window_dil,
                         [](int64_t i, int64_t k, int64_t o, int64_t lo) {
                           return std::pair<int64_t, int64_t>{lo, o - i + k - lo - 1};
                         });
}

}  // namespace fluxion::conv
