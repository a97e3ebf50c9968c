#include "api/complex.h"

#include "api/operands.h"
#include "ir/trace.h"

namespace fluxion {
namespace {
Array as_array(const ArrayLike& x, SourceLoc loc) {
  return detail::as_array(x, detail::promote(std::span(&x, 1)).dtype, x.weak(), loc);
}
}  // namespace

Array real(const ArrayLike& x, SourceLoc loc) {
  Array a = as_array(x, loc);
  return is_complex(a.dtype()) ? bind1(Prim::real, {a}, {}, loc) : a;
}
Array imag(const ArrayLike& x, SourceLoc loc) {
  Array a = as_array(x, loc);
  return is_complex(a.dtype()) ? bind1(Prim::imag, {a}, {}, loc) : multiply(a, 0, loc);
}
Array conj(const ArrayLike& x, SourceLoc loc) {
  Array a = as_array(x, loc);
  return is_complex(a.dtype()) ? bind1(Prim::conj, {a}, {}, loc) : a;
}
Array conjugate(const ArrayLike& x, SourceLoc loc) { return conj(x, loc); }

Array complex(const ArrayLike& re, const ArrayLike& im, SourceLoc loc) {
  ArrayLike xs[] = {re, im};
  PromotedType t = detail::promote(xs);
  if (is_complex(t.dtype)) {
    std::vector<AbstractArray> avals{re.aval(), im.aval()};
    op_error(ErrorKind::Type, "complex", avals, loc, "the parts must be real (use x + y * 1i for complex parts)");
  }
  DType part = real_dtype_of(complex_dtype_of(is_float(t.dtype) ? t.dtype : default_float));
  std::vector<Array> a = detail::elementwise_operands("complex", xs, loc, &part);
  return bind1(Prim::complex, {a[0], a[1]}, {}, loc);
}

Array angle(const ArrayLike& x, SourceLoc loc) {
  Array a = as_array(x, loc);
  if (!is_complex(a.dtype())) return arctan2(multiply(a, 0, loc), a, loc);
  return arctan2(imag(a, loc), real(a, loc), loc);
}

}  // namespace fluxion
