// Array: the value-semantic handle users compute with. It is either concrete (a host buffer) or a
// tracer (a variable of the program that an enclosing transformation is tracing).
#pragma once
#include <concepts>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/error.h"
#include "ir/shape.h"
#include "ir/sharding.h"
#include "memory/device.h"

namespace fluxion {

struct Buffer;
struct TraceState;
struct Index;  // api/subscript.h: one entry of x[...] or x.at(...)
class At;      // api/subscript.h: x.at(idx), whose set/add/mul/min/max give updated copies
class Array;

/// A concrete array split over devices: one global array whose blocks (ir/sharding.h) live on the
/// devices of a mesh -- fx::device_put(x, NamedSharding), fx::shard_map's and sharded jit's
/// results, fx::pmap's (a 1-d mesh of the local devices). `shards` holds this process's devices'
/// blocks, in mesh order, each committed to its device; the global array is gathered into host
/// memory the first time something reads it (printing, to_vector, an eager op), once.
struct Sharding {
  NamedSharding layout;
  std::vector<Array> shards;  // one per device of the mesh this process drives, in mesh order
  std::once_flag gather_once;
  std::shared_ptr<Buffer> gathered;
};

/// Shared state behind an Array handle (internal; users see Array).
struct ArrayImpl {
  AbstractArray aval;
  std::shared_ptr<Buffer> buffer;     // concrete arrays (for a sharded one: null until gathered)
  std::shared_ptr<Sharding> sharding;  // sharded concrete arrays
  std::shared_ptr<TraceState> trace;  // tracers: the trace that owns `var` (possibly ended)
  int32_t var = -1;
  SourceLoc loc;  // where a tracer was created (for ConcretizationError)
  /// Set when the array was donated to a jit call (donate_argnums, interpreters/donation.h): the
  /// buffer is gone, and reading the data raises ValueError with this message.
  std::shared_ptr<const std::string> deleted;
};

class Array {
 public:
  /// An empty handle; using it in an op raises ValueError.
  Array() = default;
  explicit Array(std::shared_ptr<ArrayImpl> impl) : impl_(std::move(impl)) {}

  const AbstractArray& aval() const { return checked().aval; }
  const Shape& shape() const { return checked().aval.shape; }
  DType dtype() const { return checked().aval.dtype; }
  bool weak_type() const { return checked().aval.weak_type; }
  int ndim() const { return checked().aval.shape.rank(); }
  int64_t size() const { return checked().aval.shape.numel(); }

  bool valid() const { return impl_ != nullptr; }
  bool is_tracer() const { return impl_ && impl_->trace != nullptr; }

  /// The value of a one-element array, converted to T. Raises ConcretizationError on a tracer.
  template <class T>
  T item(std::source_location loc = std::source_location::current()) const {
    T out{};
    read(&out, dtype_of_v<T>, 1, "item", loc);
    return out;
  }
  /// All elements in row-major order, converted to T. Raises ConcretizationError on a tracer.
  template <class T>
  std::vector<T> to_vector(std::source_location loc = std::source_location::current()) const {
    const size_t n = static_cast<size_t>(size());
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
      std::unique_ptr<bool[]> tmp(new bool[n]);
      read(tmp.get(), DType::bool_, n, "to_vector", loc);
      return std::vector<bool>(tmp.get(), tmp.get() + n);
    } else {
      std::vector<T> out(n);
      read(out.data(), dtype_of_v<T>, n, "to_vector", loc);
      return out;
    }
  }
  /// Waits for the device work producing this array: a GPU's queued kernels and copies (raising
  /// their errors as DeviceError). Execution on the CPU is synchronous (pmap returns when every
  /// device has finished), so there it only checks the handle.
  void block_until_ready() const;
  /// The device a concrete array lives on (runtime/devices.h). A sharded array spans several:
  /// DeviceError, naming them (ask shards() instead); a tracer: ConcretizationError.
  Device device(std::source_location loc = std::source_location::current()) const;
  /// The per-device blocks of a sharded array that this process holds, in mesh order; an
  /// unsharded array is its own single shard.
  std::vector<Array> shards() const;
  bool is_sharded() const { return impl_ && impl_->sharding != nullptr; }
  /// How the array is laid out over devices: a sharded array's NamedSharding; for any other
  /// concrete array, its device as a mesh of one device (no axes) and P().
  NamedSharding sharding(std::source_location loc = std::source_location::current()) const;
  /// The truth value of a one-element array, as `if (x > 0)` asks for it.
  explicit operator bool() const;

  /// numpy/JAX indexing (api/subscript.h): x[2], x[{0, fx::colon, fx::Slice(1, 4)}], x[idx_array].
  Array operator[](const Index& index) const;
  Array operator[](std::initializer_list<Index> indices) const;
  /// JAX's x.at[...]: x.at(i).set(v), .add(v), .mul(v), .min(v), .max(v) return updated copies.
  At at(const Index& index) const;
  At at(std::initializer_list<Index> indices) const;

  /// Raw host data of a concrete array (internal; raises ConcretizationError on a tracer).
  const void* data(SourceLoc loc = {}) const;

  const std::shared_ptr<ArrayImpl>& impl() const { return impl_; }

 private:
  const ArrayImpl& checked() const;
  void read(void* dst, DType as, size_t count, const char* what, SourceLoc loc) const;
  std::shared_ptr<ArrayImpl> impl_;
};

/// The host bytes of a concrete array (internal: kernels, printing): gathering a sharded one
/// first, copying one in device memory to the host first (Buffer::host_bytes). Read-only for
/// device memory: the copy is the buffer's.
void* host_data(const ArrayImpl& a);

/// numpy-like printing of a concrete array; a tracer prints as "Traced<f32[3]>".
std::ostream& operator<<(std::ostream& os, const Array& a);

template <class T>
concept Scalar = std::is_arithmetic_v<T>;

/// An operand of the numpy-style API: an Array or a weakly typed C++ scalar. Implicit conversion
/// into it records the caller's line, which is how operators (which cannot take a defaulted
/// source_location parameter) know the user's line.
class ArrayLike {
 public:
  ArrayLike(const Array& a, std::source_location loc = std::source_location::current())  // NOLINT
      : array_(a), loc_(loc) {}
  template <Scalar T>
  ArrayLike(T v, std::source_location loc = std::source_location::current())  // NOLINT
      : loc_(loc), is_scalar_(true) {
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = DType::bool_;
      i_ = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = DType::int32;
      i_ = int64_t(v);
    } else {
      kind_ = DType::float32;
      d_ = double(v);
    }
  }
  /// A std::complex scalar is a weak complex operand (JAX's Python complex): `x_f32 * 1i` is c64.
  template <Scalar T>
  ArrayLike(std::complex<T> v, std::source_location loc = std::source_location::current())  // NOLINT
      : loc_(loc), is_scalar_(true), kind_(DType::complex64), d_(double(v.real())), im_(double(v.imag())) {}

  bool is_scalar() const { return is_scalar_; }
  const Array& array() const { return array_; }
  SourceLoc loc() const { return loc_; }
  /// For a scalar: bool_, int32 (any C++ integer), float32 (any C++ float) or complex64 (any
  /// std::complex) -- the weak kind.
  DType scalar_kind() const { return kind_; }
  double scalar_double() const { return is_inexact(kind_) ? d_ : double(i_); }
  double scalar_imag() const { return im_; }
  int64_t scalar_int() const { return is_inexact(kind_) ? int64_t(d_) : i_; }
  /// Type as it enters promotion: the array's aval, or a weak 0-d of the scalar's kind.
  DType dtype() const { return is_scalar_ ? kind_ : array_.dtype(); }
  bool weak() const { return is_scalar_ ? kind_ != DType::bool_ : array_.weak_type(); }
  Shape shape() const { return is_scalar_ ? Shape{} : array_.shape(); }
  AbstractArray aval() const { return is_scalar_ ? AbstractArray{Shape{}, kind_, weak()} : array_.aval(); }

 private:
  Array array_;
  SourceLoc loc_;
  bool is_scalar_ = false;
  DType kind_ = DType::float32;
  int64_t i_ = 0;
  double d_ = 0, im_ = 0;
};

}  // namespace fluxion
