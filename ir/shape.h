// Shape: the static dimensions of an array, and AbstractArray: shape + dtype + weak-type flag.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace fluxion {

/// Static dimensions (int64). Compares equal to a brace list: `x.shape() == fx::Shape{3}`.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  template <class It>
  Shape(It first, It last) : dims_(first, last) {}

  int rank() const { return int(dims_.size()); }
  size_t size() const { return dims_.size(); }
  bool empty() const { return dims_.empty(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  /// Product of the dimensions (1 for a scalar).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  void push_back(int64_t d) { dims_.push_back(d); }

  friend bool operator==(const Shape&, const Shape&) = default;
  /// "[2,3]"
  std::string str() const;

 private:
  std::vector<int64_t> dims_;
};
std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Row-major strides in elements.
std::vector<int64_t> strides_of(const Shape& s);

/// The type of a value in a program: shape, dtype and whether it is weakly typed (a C++ scalar
/// that defers to the other operand's dtype under promotion).
struct AbstractArray {
  Shape shape;
  DType dtype = DType::float32;
  bool weak_type = false;

  int ndim() const { return shape.rank(); }
  int64_t size() const { return shape.numel(); }
  size_t nbytes() const { return size_t(shape.numel()) * itemsize(dtype); }
  /// "f32[2,3]" (with "{weak}" appended for weakly typed values).
  std::string str() const;
  /// Equality ignoring the weak flag: what shape rules and verifiers compare.
  bool same_type(const AbstractArray& o) const { return shape == o.shape && dtype == o.dtype; }
  friend bool operator==(const AbstractArray&, const AbstractArray&) = default;
};
std::ostream& operator<<(std::ostream& os, const AbstractArray& a);

}  // namespace fluxion
