// Op-table entries for complex numbers and the FFT. The table's host arrays are real, so each entry
// takes real operands -- the parts of its complex inputs -- and returns a real array: the result's
// real and imaginary parts stacked on a new leading axis (or a real result as it is). Every driver
// therefore runs the complex primitives in the middle: the JVP check's finite differences perturb
// real and imaginary parts separately, the VJP check's dot-product identity pairs them, vmap and jit
// (which compiles them, FFTs as library calls) see complex intermediates. References are
// std::complex<double> loops, the DFTs the naive O(n^2) sums.
#include <algorithm>
#include <cmath>
#include <complex>

#include "op_table.h"

namespace optable {
namespace {
using cd = std::complex<double>;
using K = fx::ErrorKind;
const std::vector<fx::DType> kComplexTypes = {fx::float32, fx::float64};

// ---- host complex arrays ----------------------------------------------------------------------
struct CArray {
  fx::Shape shape;
  std::vector<cd> data;
};
CArray parts(const HostArray& re, const HostArray& im) {
  CArray z{re.shape, {}};
  for (size_t i = 0; i < re.data.size(); ++i) z.data.emplace_back(re.data[i], im.data[i]);
  return z;
}
CArray real_array(const HostArray& re) {
  CArray z{re.shape, {}};
  for (double v : re.data) z.data.emplace_back(v, 0.0);
  return z;
}
// Real and imaginary parts stacked on a new leading axis (what the entries' ops return).
HostArray stacked(const CArray& z) {
  HostArray h{fx::Shape{2}, {}, fx::float64};
  for (int64_t d : z.shape.dims()) h.shape.push_back(d);
  for (const cd& v : z.data) h.data.push_back(v.real());
  for (const cd& v : z.data) h.data.push_back(v.imag());
  return h;
}
fx::Array stacked(const fx::Array& z) { return fx::stack({fx::real(z), fx::imag(z)}); }

template <class F>
CArray map(const CArray& z, const CArray& w, F f) {
  CArray r = z;
  for (size_t i = 0; i < r.data.size(); ++i) r.data[i] = f(z.data[i], w.data[i]);
  return r;
}

// Along `axis`: zero-pad or cut to n.
CArray resized(const CArray& x, int axis, int64_t n) {
  CArray r{x.shape, {}};
  r.shape[size_t(axis)] = n;
  r.data.assign(size_t(r.shape.numel()), cd(0));
  for (int64_t f = 0; f < r.shape.numel(); ++f) {
    std::vector<int64_t> idx = unravel(f, r.shape);
    if (idx[size_t(axis)] < x.shape[size_t(axis)]) r.data[size_t(f)] = x.data[size_t(ravel(idx, x.shape))];
  }
  return r;
}
// The naive DFT along `axis`: sum_j x_j exp(sign 2 pi i jk / n), times `scale`.
CArray dft(const CArray& x, int axis, int sign, double scale) {
  CArray r = x;
  const int64_t n = x.shape[size_t(axis)];
  for (int64_t f = 0; f < x.shape.numel(); ++f) {
    std::vector<int64_t> idx = unravel(f, x.shape);
    const int64_t k = idx[size_t(axis)];
    cd s = 0;
    for (int64_t j = 0; j < n; ++j) {
      idx[size_t(axis)] = j;
      s += x.data[size_t(ravel(idx, x.shape))] * std::polar(1.0, sign * 2 * M_PI * double(j * k % n) / double(n));
    }
    r.data[size_t(f)] = s * scale;
  }
  return r;
}

// Samples: n operands of `shape`, real parts in [lo, hi), the others in [-1, 1).
Sample operands(fx::Shape shape, int n, uint64_t seed, double lo = -1, double hi = 1) {
  Sample s;
  for (int i = 0; i < n; ++i) s.args.push_back(i % 2 == 0 ? uniform(shape, lo, hi, seed + uint64_t(i)) : reals(shape, seed + uint64_t(i)));
  s.label = shape.str();
  return s;
}

OpInfo entry(std::string name, std::function<fx::Array(const std::vector<fx::Array>&)> op,
             std::function<HostArray(const std::vector<HostArray>&, fx::DType)> reference, std::vector<Sample> samples,
             double tol_scale = 8) {
  OpInfo e;
  e.name = std::move(name);
  e.op = std::move(op);
  e.reference = std::move(reference);
  e.samples = std::move(samples);
  e.dtypes = kComplexTypes;
  e.tol_scale = tol_scale;
  return e;
}

void add_arithmetic(std::vector<OpInfo>& t) {
  // z = a + ib, w = c + id with |w| >= 1/2 (a, c in [0.5, 2)).
  t.push_back(entry(
      "complex.arithmetic",
      [](const std::vector<fx::Array>& x) {
        fx::Array z = fx::complex(x[0], x[1]), w = fx::complex(x[2], x[3]);
        return stacked(z * w + z / w - fx::conj(z) * 2 + (-w) * std::complex<float>(0.5f, -1.5f));
      },
      [](const std::vector<HostArray>& x, fx::DType) {
        return stacked(map(parts(x[0], x[1]), parts(x[2], x[3]),
                           [](cd z, cd w) { return z * w + z / w - std::conj(z) * 2.0 - w * cd(0.5, -1.5); }));
      },
      {operands({5}, 4, 11, 0.5, 2), operands({2, 3}, 4, 13, 0.5, 2), operands({}, 4, 17, 0.5, 2)}));
  t.push_back(entry(
      "complex.transcendental",
      [](const std::vector<fx::Array>& x) {
        fx::Array z = fx::complex(x[0], x[1]);
        return stacked(fx::exp(z) + fx::log(z) + fx::sqrt(z) + fx::sin(z) * fx::cos(z) + fx::tanh(z) + z * z * z);
      },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = parts(x[0], x[1]);
        return stacked(map(z, z, [](cd v, cd) {
          return std::exp(v) + std::log(v) + std::sqrt(v) + std::sin(v) * std::cos(v) + std::tanh(v) + v * v * v;
        }));
      },
      {operands({6}, 2, 21, 0.5, 2), operands({2, 2}, 2, 23, 0.5, 2)}, 16));
  t.push_back(entry(
      "complex.abs_angle_pow",
      [](const std::vector<fx::Array>& x) {
        fx::Array z = fx::complex(x[0], x[1]), w = fx::complex(x[2], x[3]);
        return fx::abs(z) + fx::angle(w) + fx::real(fx::power(z, w));
      },
      [](const std::vector<HostArray>& x, fx::DType) {
        HostArray r = x[0];
        for (size_t i = 0; i < r.data.size(); ++i) {
          cd z(x[0].data[i], x[1].data[i]), w(x[2].data[i], x[3].data[i]);
          r.data[i] = std::abs(z) + std::arg(w) + std::pow(z, w).real();
        }
        return r;
      },
      {operands({5}, 4, 31, 0.5, 2), operands({3, 2}, 4, 33, 0.5, 2)}, 16));
  t.push_back(entry(
      "complex.sum_prod_matmul",
      [](const std::vector<fx::Array>& x) {
        fx::Array z = fx::complex(x[0], x[1]), w = fx::complex(x[2], x[3]);
        return stacked(fx::matmul(z, w) + fx::sum(z, {0}) + fx::prod(w, {0}));
      },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = parts(x[0], x[1]), w = parts(x[2], x[3]);
        const int64_t n = z.shape[0];
        CArray r{fx::Shape{n, n}, std::vector<cd>(size_t(n * n))};
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            cd s = 0, colsum = 0, colprod = 1;
            for (int64_t k = 0; k < n; ++k) {
              s += z.data[size_t(i * n + k)] * w.data[size_t(k * n + j)];
              colsum += z.data[size_t(k * n + j)];
              colprod *= w.data[size_t(k * n + j)];
            }
            r.data[size_t(i * n + j)] = s + colsum + colprod;
          }
        return stacked(r);
      },
      {operands({3, 3}, 4, 41, 0.5, 1.5), operands({1, 1}, 4, 43, 0.5, 1.5)}));
}

// The functions MLIR's complex dialect lacks (jit calls their reference kernels), the type-generic
// data movement (transpose, reshape, concatenate, slice, rev, broadcast, select, convert, ne) on
// complex elements, and sort's lexicographic order.
void add_functions_and_movement(std::vector<OpInfo>& t) {
  t.push_back(entry(
      "complex.inverse_hyperbolic",
      [](const std::vector<fx::Array>& x) {
        fx::Array z = fx::complex(x[0], x[1]);
        return stacked(fx::arcsin(z) + fx::arccos(z) + fx::arctan(z) + fx::sinh(z) * fx::cosh(z) + fx::arcsinh(z) +
                       fx::arccosh(z) + fx::arctanh(z) + fx::rsqrt(z) + fx::tan(z));
      },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = parts(x[0], x[1]);
        return stacked(map(z, z, [](cd v, cd) {
          return std::asin(v) + std::acos(v) + std::atan(v) + std::sinh(v) * std::cosh(v) + std::asinh(v) +
                 std::acosh(v) + std::atanh(v) + 1.0 / std::sqrt(v) + std::tan(v);
        }));
      },
      {operands({5}, 2, 51, 0.5, 2), operands({2, 2}, 2, 53, 0.5, 2)}, 16));
  // z is 2x3: r = reshape(transpose(z), 6) has r[k] = z[k % 2][k / 2]; s = concatenate(r, conj r)[3:9];
  // u = where(Re s > 1, s, 2i s) + x (x real, converted); the result is u reversed plus z[0][0],
  // broadcast, where u != 0. (No gather: its transpose, scatter_add, has no complex eager kernel.)
  t.push_back(entry(
      "complex.movement",
      [](const std::vector<fx::Array>& x) {
        fx::Array z = fx::complex(x[0], x[1]);
        fx::Array r = fx::reshape(fx::transpose(z), {6});
        fx::Array s = fx::slice(fx::concatenate({r, fx::conj(r)}, 0), {3}, {9});
        fx::Array u = fx::where(fx::real(s) > 1.0f, s, s * std::complex<float>(0, 2)) +
                      fx::astype(fx::reshape(x[0], {6}), fx::complex_dtype_of(x[0].dtype()));
        fx::Array corner = fx::broadcast_to(fx::reshape(fx::slice(z, {0, 0}, {1, 1}), {}), fx::Shape{6});
        fx::Array g = fx::flip(u);
        return stacked(g + fx::where(u != fx::zeros_like(u), corner, fx::zeros_like(u)));
      },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = parts(x[0], x[1]);
        std::vector<cd> r, c, u;
        for (int k = 0; k < 6; ++k) r.push_back(z.data[size_t((k % 2) * 3 + k / 2)]);
        c = r;
        for (cd v : r) c.push_back(std::conj(v));
        for (int k = 0; k < 6; ++k) {
          const cd v = c[size_t(k + 3)];
          u.push_back((v.real() > 1 ? v : v * cd(0, 2)) + x[0].data[size_t(k)]);
        }
        CArray out{fx::Shape{6}, {}};
        for (size_t k = 0; k < 6; ++k) out.data.push_back(u[5 - k] + (u[k] != 0.0 ? z.data[0] : 0.0));
        return stacked(out);
      },
      {operands({2, 3}, 2, 61, 0.5, 2)}));
  // Real parts rounded to halves so that some tie and the imaginary parts decide.
  t.push_back(entry(
      "complex.sort",
      [](const std::vector<fx::Array>& x) { return stacked(fx::sort(fx::complex(fx::round(x[0] * 2.0f) * 0.5f, x[1]), 0)); },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = parts(x[0], x[1]);
        for (size_t i = 0; i < z.data.size(); ++i) z.data[i].real(std::round(x[0].data[i] * 2.0) * 0.5);
        std::stable_sort(z.data.begin(), z.data.end(), [](cd a, cd b) {
          return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
        });
        return stacked(z);
      },
      {operands({8}, 2, 71, 0.5, 2)}));
}

// Along axis 1 of a [rows, n] array (or the whole array when flat): the running sums, and the
// index of the lexicographically largest / smallest value (real parts first; the first NaN --
// in either part -- wins; ties keep the first), as numpy and jnp.argmax order complex values.
CArray cumsum_ref(const CArray& z, bool flat) {
  CArray r = z;
  const int64_t n = flat ? z.shape.numel() : z.shape[1];
  for (size_t i = 0; i < r.data.size(); ++i)
    if (int64_t(i) % n != 0) r.data[i] += r.data[i - 1];
  if (flat) r.shape = fx::Shape{n};
  return r;
}
HostArray arg_extremum_ref(const CArray& z, bool is_max) {
  const int64_t n = z.shape[1];
  HostArray r{fx::Shape{z.shape[0]}, {}, fx::int32};
  auto nan = [](cd v) { return v != v; };
  for (int64_t row = 0; row < z.shape[0]; ++row) {
    int64_t best = 0;
    for (int64_t j = 1; j < n; ++j) {
      const cd v = z.data[size_t(row * n + j)], b = z.data[size_t(row * n + best)];
      const bool after = v.real() > b.real() || (v.real() == b.real() && v.imag() > b.imag());
      const bool before = v.real() < b.real() || (v.real() == b.real() && v.imag() < b.imag());
      if (!nan(b) && (nan(v) || (is_max ? after : before))) best = j;
    }
    r.data.push_back(double(best));
  }
  return r;
}

// The lexicographic running max/min along axis 1 (NaN in either part propagates, as lax.max), and
// the running product.
CArray running_ref(const CArray& z, int kind /* 0 prod, 1 max, -1 min */) {
  CArray r = z;
  const int64_t n = z.shape[1];
  auto nan = [](cd v) { return v != v; };
  for (size_t i = 0; i < r.data.size(); ++i) {
    if (int64_t(i) % n == 0) continue;
    const cd acc = r.data[i - 1], v = z.data[i];
    if (kind == 0) {
      r.data[i] = acc * v;
      continue;
    }
    const bool after = v.real() > acc.real() || (v.real() == acc.real() && v.imag() > acc.imag());
    const bool before = v.real() < acc.real() || (v.real() == acc.real() && v.imag() < acc.imag());
    r.data[i] = !nan(acc) && (nan(v) || (kind > 0 ? after : before)) ? v : acc;
  }
  return r;
}
CArray last_column(const CArray& z) {
  CArray r{fx::Shape{z.shape[0]}, {}};
  for (int64_t row = 0; row < z.shape[0]; ++row) r.data.push_back(z.data[size_t((row + 1) * z.shape[1] - 1)]);
  return r;
}

void add_cumulative_and_arg_extremum(std::vector<OpInfo>& t) {
  for (bool flat : {false, true})
    t.push_back(entry(
        flat ? "complex.cumsum_flat" : "complex.cumsum",
        [flat](const std::vector<fx::Array>& x) {
          fx::Array z = fx::complex(x[0], x[1]);
          return stacked(flat ? fx::cumsum(z * z) : fx::cumsum(z * z, 1));
        },
        [flat](const std::vector<HostArray>& x, fx::DType) {
          return stacked(cumsum_ref(map(parts(x[0], x[1]), parts(x[0], x[1]), [](cd a, cd) { return a * a; }), flat));
        },
        {operands({3, 5}, 2, 81), operands({2, 1}, 2, 83)}));
  // Real parts rounded to halves so that rows tie on them and the imaginary parts decide; one
  // sample with NaN imaginary parts.
  HostArray re = host(fx::Shape{2, 4}, {1, 1, 0.5, 1, 2, -1, 2, 0});
  HostArray im = host(fx::Shape{2, 4}, {0.5, std::nan(""), 0.25, 0.75, -1, 3, -1, std::nan("")});
  for (bool is_max : {true, false}) {
    t.push_back(entry(
        is_max ? "complex.argmax" : "complex.argmin",
        [is_max](const std::vector<fx::Array>& x) {
          fx::Array z = fx::complex(fx::round(x[0] * 2.0f) * 0.5f, x[1]);
          return is_max ? fx::argmax(z, 1) : fx::argmin(z, 1);
        },
        [is_max](const std::vector<HostArray>& x, fx::DType) {
          CArray z = parts(x[0], x[1]);
          for (size_t i = 0; i < z.data.size(); ++i) z.data[i].real(std::round(x[0].data[i] * 2.0) * 0.5);
          return arg_extremum_ref(z, is_max);
        },
        {operands({3, 6}, 2, 91), operands({4, 1}, 2, 93), fixed({re, im}, "NaN parts, ties")}));
    t.back().differentiable = false;
  }
  t.push_back(entry(
      "complex.cumprod", [](const std::vector<fx::Array>& x) { return stacked(fx::cumprod(fx::complex(x[0], x[1]), 1)); },
      [](const std::vector<HostArray>& x, fx::DType) { return stacked(running_ref(parts(x[0], x[1]), 0)); },
      {operands({3, 5}, 2, 95, 0.5, 1.5), operands({2, 1}, 2, 96)}));
  // cummax/cummin and max/min: the same tie-making rounding and NaN sample as argmax above.
  for (bool is_max : {true, false})
    for (bool reduce : {false, true}) {
      t.push_back(entry(
          std::string("complex.") + (reduce ? (is_max ? "max" : "min") : (is_max ? "cummax" : "cummin")),
          [is_max, reduce](const std::vector<fx::Array>& x) {
            fx::Array z = fx::complex(fx::round(x[0] * 2.0f) * 0.5f, x[1]);
            if (reduce) return stacked(is_max ? fx::max(z, fx::Axes{1}) : fx::min(z, fx::Axes{1}));
            return stacked(is_max ? fx::cummax(z, 1) : fx::cummin(z, 1));
          },
          [is_max, reduce](const std::vector<HostArray>& x, fx::DType) {
            CArray z = parts(x[0], x[1]);
            for (size_t i = 0; i < z.data.size(); ++i) z.data[i].real(std::round(x[0].data[i] * 2.0) * 0.5);
            CArray r = running_ref(z, is_max ? 1 : -1);
            return stacked(reduce ? last_column(r) : r);
          },
          {operands({3, 6}, 2, 97), operands({4, 1}, 2, 98), fixed({re, im}, "NaN parts, ties")}));
      t.back().skip = {Check::jvp, Check::vjp};  // the rounding makes ties, where there is no derivative
    }
}

void add_fft(std::vector<OpInfo>& t) {
  t.push_back(entry(
      "fft.fft",
      [](const std::vector<fx::Array>& x) { return stacked(fx::fft::fft(fx::complex(x[0], x[1]))); },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = parts(x[0], x[1]);
        return stacked(dft(z, z.shape.rank() - 1, -1, 1));
      },
      {operands({8}, 2, 51), operands({3, 5}, 2, 53), operands({2, 3, 4}, 2, 55), operands({1}, 2, 57)}));
  t.push_back(entry(
      "fft.ifft_ortho_n",  // cut to 4 along axis 0, then the inverse scaled by 1/sqrt(4)
      [](const std::vector<fx::Array>& x) { return stacked(fx::fft::ifft(fx::complex(x[0], x[1]), 4, 0, "ortho")); },
      [](const std::vector<HostArray>& x, fx::DType) { return stacked(dft(resized(parts(x[0], x[1]), 0, 4), 0, 1, 0.5)); },
      {operands({6, 2}, 2, 61), operands({3}, 2, 63)}));
  t.push_back(entry(
      "fft.rfft",
      [](const std::vector<fx::Array>& x) { return stacked(fx::fft::rfft(x[0])); },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = real_array(x[0]);
        const int last = z.shape.rank() - 1;
        return stacked(resized(dft(z, last, -1, 1), last, z.shape[size_t(last)] / 2 + 1));
      },
      {operands({8}, 1, 71), operands({3, 7}, 1, 73), operands({2, 2, 6}, 1, 75)}));
  // irfft of n = 2m - 2 (even) and 2m - 1 (odd) points: the Hermitian extension of the m bins (DC's,
  // and even n's Nyquist's, imaginary parts ignored), inverted.
  for (bool odd : {false, true}) {
    t.push_back(entry(
        odd ? "fft.irfft_odd" : "fft.irfft",
        [odd](const std::vector<fx::Array>& x) {
          const int64_t m = x[0].shape()[size_t(x[0].ndim() - 1)];
          if (fx::is_symbolic_dim(m)) throw fx::ShapeError("ShapeError: 2m - 2 of a symbolic m");  // a code, no count
          return fx::fft::irfft(fx::complex(x[0], x[1]), odd ? 2 * m - 1 : 2 * m - 2);
        },
        [odd](const std::vector<HostArray>& x, fx::DType) {
          CArray z = parts(x[0], x[1]);
          const int last = z.shape.rank() - 1;
          const int64_t m = z.shape[size_t(last)], n = odd ? 2 * m - 1 : 2 * m - 2;
          HostArray r{z.shape, {}, fx::float64};
          r.shape[size_t(last)] = n;
          r.data.assign(size_t(r.shape.numel()), 0.0);
          for (int64_t f = 0; f < r.shape.numel(); ++f) {
            std::vector<int64_t> idx = unravel(f, r.shape);
            const int64_t j = idx[size_t(last)];
            double s = 0;
            for (int64_t k = 0; k < n; ++k) {
              const int64_t b = k < m ? k : n - k;
              idx[size_t(last)] = b;
              cd v = z.data[size_t(ravel(idx, z.shape))];
              if (b == 0 || (!odd && b == m - 1)) v = v.real();
              if (k >= m) v = std::conj(v);
              s += (v * std::polar(1.0, 2 * M_PI * double(j * k % n) / double(n))).real();
            }
            r.data[size_t(f)] = s / double(n);
          }
          return r;
        },
        {operands({5}, 2, 81), operands({3, 4}, 2, 83)}));
  }
  t.push_back(entry(
      "fft.fftn_s_axes",  // axes (0, 2), axis 0 padded to 4, axis 2 cut to 3, norm "forward"
      [](const std::vector<fx::Array>& x) { return stacked(fx::fft::fftn(fx::complex(x[0], x[1]), {4, 3}, {0, 2}, "forward")); },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = resized(resized(parts(x[0], x[1]), 0, 4), 2, 3);
        return stacked(dft(dft(z, 0, -1, 0.25), 2, -1, 1.0 / 3));
      },
      {operands({3, 2, 4}, 2, 91)}));
  t.push_back(entry(
      "fft.rfft2",
      [](const std::vector<fx::Array>& x) { return stacked(fx::fft::rfft2(x[0])); },
      [](const std::vector<HostArray>& x, fx::DType) {
        CArray z = real_array(x[0]);
        const int r = z.shape.rank();
        return stacked(resized(dft(dft(z, r - 2, -1, 1), r - 1, -1, 1), r - 1, z.shape[size_t(r - 1)] / 2 + 1));
      },
      {operands({4, 6}, 1, 101), operands({2, 3, 5}, 1, 103)}));
  OpInfo& last = t.back();
  last.errors = {ErrorSample{{reals({5}, 1)}, K::Shape, "fft2 of a vector: axis -2 is out of range"}};
  last.error_name = "rfft2";
}

}  // namespace

void add_complex_ops(std::vector<OpInfo>& t) {
  add_arithmetic(t);
  add_functions_and_movement(t);
  add_cumulative_and_arg_extremum(t);
  add_fft(t);
}

}  // namespace optable
