#include "ir/program.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "ir/array.h"

namespace fluxion {

// ---- Literal ------------------------------------------------------------------------------------
Literal Literal::of_double(double v, DType d, bool weak) {
  if (is_complex(d)) return of_complex(v, 0, d, weak);
  Literal l;
  l.dtype = d;
  l.weak = weak;
  if (is_float(d)) {
    // Round to the dtype's precision so that the literal is exactly the value the kernels see.
    l.f = dispatch_dtype(d, [&](auto z) -> double {
      using T = decltype(z);
      if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>)
        return double(float(T(float(v))));
      else
        return double(T(v));
    });
  } else if (d == DType::bool_) {
    l.i = v != 0;
  } else if (is_unsigned_int(d)) {
    l.u = uint64_t(int64_t(v));
  } else {
    l.i = int64_t(v);
  }
  return l;
}

Literal Literal::of_complex(double re, double im, DType d, bool weak) {
  if (!is_complex(d)) return of_double(re, d, weak);
  Literal l = of_double(re, real_dtype_of(d), weak);
  l.im = of_double(im, real_dtype_of(d)).f;
  l.dtype = d;
  return l;
}

Literal Literal::of_int(int64_t v, DType d, bool weak) {
  if (is_inexact(d)) return of_double(double(v), d, weak);
  Literal l;
  l.dtype = d;
  l.weak = weak;
  if (d == DType::bool_) {
    l.i = v != 0;
  } else {
    // Wrap to the dtype's width, as a store and load would.
    l = load(&v, DType::int64, weak);
    int64_t tmp = v;
    dispatch_dtype(d, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_integral_v<T>) {
        T t = T(tmp);
        l = load(&t, d, weak);
      }
    });
  }
  return l;
}

Literal Literal::load(const void* p, DType d, bool weak) {
  Literal l;
  l.dtype = d;
  l.weak = weak;
  if (is_complex(d)) {
    dispatch_dtype_complex(d, [&](auto z) {
      using T = decltype(z);
      if constexpr (is_complex_type<T>) {
        T t;
        std::memcpy(&t, p, sizeof(T));
        l.f = double(t.real());
        l.im = double(t.imag());
      }
    });
    return l;
  }
  dispatch_dtype(d, [&](auto z) {
    using T = decltype(z);
    T t;
    std::memcpy(&t, p, sizeof(T));
    if constexpr (std::is_same_v<T, bool>) l.i = t ? 1 : 0;
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) l.i = t;
    else if constexpr (std::is_integral_v<T>) l.u = t;
    else l.f = double(static_cast<compute_t<T>>(t));
  });
  return l;
}

void Literal::store(void* p) const {
  dispatch_dtype_complex(dtype, [&](auto z) {
    using T = decltype(z);
    T t;
    if constexpr (std::is_same_v<T, bool>) t = i != 0;
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) t = T(i);
    else if constexpr (std::is_integral_v<T>) t = T(u);
    else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) t = T(float(f));
    else if constexpr (is_complex_type<T>) t = T(typename T::value_type(f), typename T::value_type(im));
    else t = T(f);
    std::memcpy(p, &t, sizeof(T));
  });
}

double Literal::as_double() const {
  if (is_inexact(dtype)) return f;  // the real part of a complex literal
  if (is_unsigned_int(dtype)) return double(u);
  return double(i);
}

namespace {
// The shortest text that reads back to the same value of the (real) dtype d.
std::string real_str(double f, DType d) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  std::to_chars_result r = d == DType::float64 ? std::to_chars(buf, buf + sizeof buf, f)
                                               : std::to_chars(buf, buf + sizeof buf, float(f));
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

std::string Literal::value_str() const {
  if (dtype == DType::bool_) return i ? "True" : "False";
  if (is_signed_int(dtype)) return std::to_string(i);
  if (is_unsigned_int(dtype)) return std::to_string(u);
  if (!is_complex(dtype)) return real_str(f, dtype);
  // Python's spelling, 1.0+2.0j / 1.0-2.0j (nan and inf parts as +nanj, -infj).
  std::string imag = real_str(im, real_dtype_of(dtype));
  return real_str(f, real_dtype_of(dtype)) + (imag[0] == '-' ? "" : "+") + imag + "j";
}

bool operator==(const Literal& a, const Literal& b) {
  if (a.dtype != b.dtype || a.weak != b.weak) return false;
  if (is_complex(a.dtype))
    return std::memcmp(&a.f, &b.f, sizeof(double)) == 0 && std::memcmp(&a.im, &b.im, sizeof(double)) == 0;
  if (is_float(a.dtype)) return std::memcmp(&a.f, &b.f, sizeof(double)) == 0;
  return a.i == b.i;
}

// ---- Program ------------------------------------------------------------------------------------
Program::Program() = default;
Program::~Program() = default;
Program::Program(const Program&) = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(const Program&) = default;
Program& Program::operator=(Program&&) noexcept = default;

std::vector<AbstractArray> Program::in_avals() const {
  std::vector<AbstractArray> r;
  r.reserve(invars.size());
  for (int32_t v : invars) r.push_back(types[size_t(v)]);
  return r;
}

std::vector<AbstractArray> Program::out_avals() const {
  std::vector<AbstractArray> r;
  r.reserve(outvars.size());
  for (const Atom& a : outvars) r.push_back(aval(a));
  return r;
}

std::vector<int> Program::use_counts() const {
  std::vector<int> uses(types.size(), 0);
  for (const Eqn& e : eqns)
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) ++uses[size_t(a.var)];
  for (const Atom& a : outvars)
    if (!a.is_literal()) ++uses[size_t(a.var)];
  return uses;
}

std::vector<int> Program::producers() const {
  std::vector<int> def(types.size(), -1);
  for (size_t k = 0; k < eqns.size(); ++k)
    for (int32_t v : eqns[k].outputs) def[size_t(v)] = int(k);
  return def;
}

size_t Program::hash() const { return std::hash<std::string>()(str()); }

bool operator==(const Program& a, const Program& b) {
  if (&a == &b) return true;
  if (a.eqns.size() != b.eqns.size() || a.invars.size() != b.invars.size() || a.outvars.size() != b.outvars.size())
    return false;
  return a.str() == b.str();
}

std::ostream& operator<<(std::ostream& os, const Program& p) { return os << p.str(); }

}  // namespace fluxion
