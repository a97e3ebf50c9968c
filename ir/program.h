// The primitive IR: typed SSA programs in the style of a jaxpr.
//
//   { lambda a:f32[3] ; b:f32[3] c:f32[3]. let
//       d:f32[3] = mul b c
//       e:f32[3] = sin d
//       f:f32[] = reduce_sum[axes=(0,)] e
//     in (f) }
//
// Variables are dense integer ids into `Program::types`; printing names them a, b, c, ... in order
// of appearance, so a program prints the same however its ids were assigned.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/params.h"
#include "ir/primitive.h"
#include "ir/shape.h"

namespace fluxion {

class Array;

/// A scalar constant written inline in a program ("2.0:f32[]").
struct Literal {
  DType dtype = DType::float32;
  bool weak = false;
  union {
    double f;    // floating dtypes
    int64_t i;   // signed integers and bool
    uint64_t u;  // unsigned integers
  };
  double im = 0;  // complex dtypes: the imaginary part (the real part is f)
  Literal() : i(0) {}
  static Literal of_double(double v, DType d, bool weak = false);
  static Literal of_int(int64_t v, DType d, bool weak = false);
  /// re + im*i as dtype d: a complex dtype keeps both parts, a real one drops the imaginary part.
  static Literal of_complex(double re, double im, DType d, bool weak = false);
  /// Reads one element of dtype `d` from memory.
  static Literal load(const void* p, DType d, bool weak = false);
  /// Writes the value as one element of its dtype.
  void store(void* p) const;
  double as_double() const;
  AbstractArray aval() const { return AbstractArray{Shape{}, dtype, weak}; }
  /// "2.0", "3", "True", "1.0+2.0j"
  std::string value_str() const;
  friend bool operator==(const Literal& a, const Literal& b);
};

/// An eqn operand: a variable or an inline literal.
struct Atom {
  int32_t var = -1;  // -1: literal
  Literal lit;
  Atom() = default;
  Atom(int32_t v) : var(v) {}  // NOLINT
  Atom(const Literal& l) : var(-1), lit(l) {}  // NOLINT
  bool is_literal() const { return var < 0; }
  friend bool operator==(const Atom& a, const Atom& b) {
    return a.var == b.var && (a.var >= 0 || a.lit == b.lit);
  }
};

struct Eqn {
  Prim prim;
  Params params;
  std::vector<Atom> inputs;
  std::vector<int32_t> outputs;
  SourceLoc loc;  // the user's call that created it (not printed, not compared)
};

/// Whether f(q) holds for some sub-program q that e holds (a cond's branches, a loop's body, a
/// custom rule's programs), tried in parameter order; the walks over nested programs start here.
template <class F>
bool any_sub_program(const Eqn& e, F&& f);

class Program {
 public:
  std::vector<AbstractArray> types;  // the type of each var id
  std::vector<int32_t> constvars;    // inputs bound to `consts`
  std::vector<int32_t> invars;
  std::vector<Eqn> eqns;
  std::vector<Atom> outvars;
  /// Values of constvars: concrete arrays, or tracers of an enclosing trace. A parsed program
  /// has none (the text does not hold values); it must then be closed over by the caller.
  std::vector<Array> consts;

  Program();
  ~Program();
  Program(const Program&);
  Program(Program&&) noexcept;
  Program& operator=(const Program&);
  Program& operator=(Program&&) noexcept;

  int32_t new_var(const AbstractArray& t) {
    types.push_back(t);
    return int32_t(types.size() - 1);
  }
  const AbstractArray& type(int32_t var) const { return types[size_t(var)]; }
  AbstractArray aval(const Atom& a) const { return a.is_literal() ? a.lit.aval() : types[size_t(a.var)]; }
  std::vector<AbstractArray> in_avals() const;
  std::vector<AbstractArray> out_avals() const;
  /// How many times each var is read: by eqn inputs and by outvars (not inside sub-programs).
  std::vector<int> use_counts() const;
  /// The index of the eqn that defines each var, or -1 (constvars, invars, unused ids).
  std::vector<int> producers() const;

  /// Structural identity: equal iff the programs print the same (var numbering is irrelevant).
  size_t hash() const;
  friend bool operator==(const Program& a, const Program& b);
  /// The text form (see docs/ir.md).
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const Program& p);

template <class F>
bool any_sub_program(const Eqn& e, F&& f) {
  for (const auto& [key, value] : e.params.entries()) {
    if (const ProgramRef* q = std::get_if<ProgramRef>(&value); q && *q && f(static_cast<const Program&>(**q))) return true;
    if (const ProgramList* list = std::get_if<ProgramList>(&value))
      for (const ProgramRef& q : *list)
        if (q && f(static_cast<const Program&>(*q))) return true;
  }
  return false;
}

/// Reads the text form back. Malformed text raises ParseError naming line and column.
Program parse_program(std::string_view text);

/// Checks SSA (each var defined once before use), that every eqn's output types are what its
/// primitive's shape rule gives for its input types, and that outvars are defined. Throws
/// fluxion::Error (TypeError/ShapeError) naming the eqn.
void verify(const Program& p);

}  // namespace fluxion
