// DimExpr: a symbolic dimension ("b", "2*b + 1", "b // 8") in a canonical form, and its encoding
// as one int64 inside a Shape (docs/shape_polymorphism.md).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/shape.h"

namespace fluxion {

/// An integer polynomial over atoms, with integer coefficients. An atom is a symbol ("b") or an
/// operation the polynomial ring cannot express: floor division or modulo by a positive constant,
/// max, min. Every constructor returns the canonical form (like terms merged, zero terms dropped,
/// atoms keyed by their printed canonical text), so two expressions are equal exactly when their
/// canonical forms are -- equality is decidable, which is what shape rules need.
class DimExpr {
 public:
  DimExpr() = default;
  DimExpr(int64_t c);  // NOLINT: a constant converts implicitly, as in "b + 1"
  static DimExpr symbol(std::string_view name);

  bool is_constant() const;
  /// The value of a constant expression (0 for the empty sum); only meaningful when is_constant().
  int64_t constant() const;
  /// The symbols it mentions, sorted.
  std::vector<std::string> symbols() const;
  /// Its value with every symbol given; a missing symbol is a ValueError naming it.
  int64_t evaluate(const std::map<std::string, int64_t>& env) const;
  /// Canonical text: "2*b + 1", "b // 8", "max(b, 4)".
  std::string str() const;

  /// Operations to compute an expression with something other than int64 -- the lowering builds
  /// the index arithmetic a compiled kernel runs on its size arguments. Values are the builder's
  /// own handles.
  struct Builder {
    virtual ~Builder() = default;
    virtual int constant(int64_t c) = 0;
    virtual int symbol(const std::string& name) = 0;
    virtual int add(int a, int b) = 0;
    virtual int mul(int a, int b) = 0;
    virtual int floordiv(int a, int64_t c) = 0;  // floor division by a positive constant
    virtual int mod(int a, int64_t c) = 0;       // floor modulo by a positive constant
    virtual int max(int a, int b) = 0;
    virtual int min(int a, int b) = 0;
  };
  /// The expression computed with b's operations (as evaluate computes it with int64).
  int build(Builder& b) const;

  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a) { return DimExpr(0) - a; }
  /// Floor division and modulo by a positive constant (a ValueError otherwise).
  friend DimExpr floordiv(const DimExpr& a, int64_t c);
  friend DimExpr mod(const DimExpr& a, int64_t c);
  friend DimExpr max(const DimExpr& a, const DimExpr& b);
  friend DimExpr min(const DimExpr& a, const DimExpr& b);
  friend bool operator==(const DimExpr& a, const DimExpr& b) { return a.terms_ == b.terms_; }

  /// Parses "2*b + 1", "(b + 7) // 8", "b % 8", "max(b, 4)"; a ValueError names the text and the
  /// position of the mistake.
  static DimExpr parse(std::string_view text);

  struct Atom;

 private:
  using Monomial = std::vector<std::string>;  // sorted atom keys; {} is the constant term
  std::map<Monomial, int64_t> terms_;
  std::map<std::string, std::shared_ptr<const Atom>> atoms_;  // every atom a term mentions
  static DimExpr of_atom(std::shared_ptr<const Atom> atom);
  static DimExpr extremum(const DimExpr& a, const DimExpr& b, bool is_max);
  void merge_atoms(const DimExpr& o);
};

/// A symbolic dimension lives in a Shape as one int64 at or below kSymbolicDimBase, naming an
/// entry of a process-wide table of interned expressions; concrete shapes never reach that range
/// (shape_problem rejects negative sizes), so every existing rule that copies or compares dims
/// handles symbolic ones unchanged, and concrete shapes cost nothing.
inline constexpr int64_t kSymbolicDimBase = -(int64_t(1) << 62);
inline bool is_symbolic_dim(int64_t d) { return d <= kSymbolicDimBase; }
/// The int64 that stands for `e` in a Shape: its value when constant, else the interned code
/// (equal expressions get the same code).
int64_t encode_dim(const DimExpr& e);
/// The expression an int64 dim stands for: a constant for a concrete dim. A code that was never
/// interned (arithmetic on a code by a rule that needs a concrete value) returns false.
bool decode_dim(int64_t d, DimExpr& out);
/// The dim a*b for two dims of a Shape, either of them symbolic: concrete dims multiply; symbolic
/// ones multiply as expressions (b by 3 is the dim 3*b -- a code is no size to multiply). A code
/// that names nothing is kept, so the shape check reports it.
int64_t mul_dims(int64_t a, int64_t b);
/// "784" or "b" or "2*b": how a dim prints in a type ("?<code>" for a code that names nothing).
std::string dim_str(int64_t d);
/// shape_problem (ir/shape.h) for a type rather than an array: symbolic dims are allowed (bind's
/// check of a rule's result, the IR parser, the verifier), where shape_problem -- the check of
/// every array made (creation, file readers) -- rejects them.
std::string symbolic_shape_problem(const Shape& s, DType dtype);

}  // namespace fluxion
