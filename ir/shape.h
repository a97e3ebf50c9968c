// Shape: the static dimensions of an array, and AbstractArray: shape + dtype + weak-type flag.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace fluxion {

/// Static dimensions (int64). Compares equal to a brace list: `x.shape() == fx::Shape{3}`.
/// Up to six dimensions live inline (no allocation): shapes are copied on every op and eqn.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }
  template <class It>
  Shape(It first, It last) {
    assign(first, last);
  }
  Shape(const Shape& o) { assign(o.begin(), o.end()); }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  Shape(Shape&& o) noexcept { *this = std::move(o); }
  Shape& operator=(Shape&& o) noexcept {
    if (this == &o) return *this;
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      cap_ = o.cap_;
      rank_ = o.rank_;
    } else {
      heap_.reset();
      cap_ = kInline;
      assign(o.begin(), o.end());
    }
    o.rank_ = 0;
    o.cap_ = kInline;
    return *this;
  }

  int rank() const { return rank_; }
  size_t size() const { return size_t(rank_); }
  bool empty() const { return rank_ == 0; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& operator[](size_t i) { return data()[i]; }
  /// Product of the dimensions (1 for a scalar). Unchecked (it runs on every op): a shape that
  /// comes from a user or a file is checked with `shape_problem` where it is made.
  int64_t numel() const {
    uint64_t n = 1;  // wraps rather than overflows (undefined): shape_problem is the check
    for (int64_t d : *this) n *= uint64_t(d);
    return int64_t(n);
  }
  /// The dimensions as a list (a copy), e.g. for params.
  std::vector<int64_t> dims() const { return std::vector<int64_t>(begin(), end()); }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + rank_; }
  void push_back(int64_t d) {
    reserve(rank_ + 1);
    data()[rank_++] = d;
  }
  /// Inserts a dimension before position `pos`.
  void insert(size_t pos, int64_t d) {
    push_back(0);
    int64_t* p = data();
    for (size_t i = size_t(rank_) - 1; i > pos; --i) p[i] = p[i - 1];
    p[pos] = d;
  }

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.rank_ != b.rank_) return false;
    for (int i = 0; i < a.rank_; ++i)
      if (a.data()[i] != b.data()[i]) return false;
    return true;
  }
  /// "[2,3]"
  std::string str() const;

 private:
  static constexpr int kInline = 6;
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  void reserve(int n) {
    if (n <= cap_) return;
    std::unique_ptr<int64_t[]> h(new int64_t[size_t(n) * 2]);
    for (int i = 0; i < rank_; ++i) h[size_t(i)] = data()[i];
    heap_ = std::move(h);
    cap_ = n * 2;
  }
  template <class It>
  void assign(It first, It last) {
    rank_ = 0;
    for (; first != last; ++first) push_back(int64_t(*first));
  }

  int32_t rank_ = 0;
  int32_t cap_ = kInline;
  int64_t inline_[kInline] = {};
  std::unique_ptr<int64_t[]> heap_;
};
std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Row-major strides in elements.
std::vector<int64_t> strides_of(const Shape& s);

/// Why no array of this shape and dtype can exist -- a negative dimension, or more elements or
/// bytes than an int64 counts -- or "" when one can: "the shape [4294967296,4294967296] has more
/// elements than an int64 counts". Every place a shape is made checks it (bind's and verify's
/// shape rules, the creation functions, the file readers), so that numel() never wraps.
std::string shape_problem(const Shape& s, DType dtype);

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
