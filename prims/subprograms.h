// Helpers for the primitives that hold sub-programs in their params -- custom derivatives and
// checkpoint (prims/custom.cpp), cond (prims/cond.cpp), while (prims/while_loop.cpp), scan
// (prims/scan.cpp): reading the programs and counts back, checking operands against a program,
// rearranging derived programs, and re-tracing a program under vmap (the batching rules).
//
// Batched control flow is the same control flow over batched sub-programs: each sub-program is
// re-traced through vmap_eval on batched inputs. Inside control flow every batched value has its
// batch dim at 0 (scanned operands at 1, so that the scanned axis stays leading); unbatched values
// stay unbatched unless the control flow needs them batched. A carry that the body makes batched
// must enter the loop batched: which carries are batched is a fixpoint, found by re-tracing the body
// until it stops growing (carry_fixpoint).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "ir/trace.h"
#include "interpreters/vmap.h"

namespace fluxion::subprograms {

using Arrays = std::span<const Array>;
using BatchedArgs = std::span<const BatchedArray>;

/// The program held in param `key`.
const Program& sub(const Params& p, const char* key);
/// The count held in param `key`.
size_t count(const Params& p, const char* key);
ProgramRef share(Program p);

/// `in` are the types `prog` takes (else a TypeError naming `what`).
void check_inputs(std::span<const AbstractArray> in, const Program& prog, const std::string& what);

// ---- rearranging derived programs ---------------------------------------------------------------
/// p with invars in the order `in` (a permutation of all of them) and outvars `out` (any subset).
Program reorder(Program p, const std::vector<size_t>& in, const std::vector<size_t>& out);
/// from, from + 1, ..., to - 1.
std::vector<size_t> range(size_t from, size_t to);
void append(std::vector<size_t>& a, const std::vector<size_t>& b);
/// A tangent, or zeros of its primal's type for a symbolic zero.
Array tangent_or_zeros(const Array& primal, const Array& t, SourceLoc loc);
/// A cotangent, or zeros of type `aval` for a symbolic zero.
Array materialised(const Array& ct, const AbstractArray& aval, SourceLoc loc);
/// The type of one row of `a` (its leading dimension dropped): a scanned operand's slice.
AbstractArray row_type(AbstractArray a);

// ---- batching -----------------------------------------------------------------------------------
/// A sub-program traced from `build` on fresh inputs of the given types, closed: the values the
/// trace captured are its leading inputs, listed in `consts` (never batched).
struct Closed {
  Program program;
  std::vector<Array> consts;
};
template <class Build>
Closed trace_sub(std::span<const AbstractArray> in, Build build) {
  TraceScope scope;
  std::vector<Array> inputs;
  for (const AbstractArray& a : in) inputs.push_back(scope.new_input(a));
  std::vector<Array> outs = build(std::span<const Array>(inputs));
  Closed c;
  c.program = hoist_consts(scope.finish(outs), c.consts);
  return c;
}

/// Operands as control flow holds them: a value and its batch dim (0, or kNotMapped).
struct Operands {
  std::vector<Array> values;
  std::vector<int64_t> dims;
  size_t size() const { return values.size(); }
  void push(const Array& v, int64_t d) {
    values.push_back(v);
    dims.push_back(d);
  }
  Operands& operator+=(const Operands& o) {
    values.insert(values.end(), o.values.begin(), o.values.end());
    dims.insert(dims.end(), o.dims.begin(), o.dims.end());
    return *this;
  }
  Operands range(size_t from, size_t n) const {
    return {{values.begin() + long(from), values.begin() + long(from + n)},
            {dims.begin() + long(from), dims.begin() + long(from + n)}};
  }
  std::vector<AbstractArray> avals() const {
    std::vector<AbstractArray> r;
    for (const Array& v : values) r.push_back(v.aval());
    return r;
  }
};
Operands operator+(Operands a, const Operands& b);

/// Mapped operands moved to batch dim 0.
Operands at_front(BatchedArgs a, SourceLoc loc);
/// The operands with those flagged in `batch` batched at 0 (broadcast if they were not).
Operands batched_where(const Operands& o, const std::vector<bool>& batch, int64_t n, SourceLoc loc);
/// Types of operands with those flagged in `batch` batched at 0 (abstractly: nothing is emitted).
std::vector<AbstractArray> avals_where(const Operands& o, const std::vector<bool>& batch, int64_t n);
/// p applied under vmap to inputs of the current trace, with the given batch dims.
std::vector<BatchedArray> call_batched(const Program& p, std::span<const Array> in, std::span<const int64_t> dims,
                                       int64_t n);
/// Which outputs of p are batched when its inputs have these types and batch dims (a throwaway trace).
std::vector<bool> batched_outputs(const Program& p, std::span<const AbstractArray> avals, std::span<const int64_t> dims,
                                  int64_t n);
/// The dims of inputs with those flagged in `batch` at 0.
std::vector<int64_t> dims_where(const Operands& o, const std::vector<bool>& batch);
/// Grows the set of batched carries until the loop body keeps it: `body_outputs(carry_batched)`
/// says which carries the body returns batched.
template <class BodyOutputs>
std::vector<bool> carry_fixpoint(std::vector<bool> batched, BodyOutputs body_outputs) {
  for (;;) {
    std::vector<bool> out = body_outputs(batched);
    bool grew = false;
    for (size_t i = 0; i < batched.size(); ++i)
      if (out[i] && !batched[i]) batched[i] = grew = true;
    if (!grew) return batched;
  }
}
/// Which operands are batched.
std::vector<bool> flags(const Operands& o);
std::vector<bool> concat(std::vector<bool> a, const std::vector<bool>& b);
/// pred (a batch of bool scalars, [n]) broadcast against a batched value of `shape`.
Array pred_like(const Array& pred, const Shape& shape, SourceLoc loc);

}  // namespace fluxion::subprograms
