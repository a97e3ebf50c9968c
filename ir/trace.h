// Tracing: a thread-local stack of live traces, and `bind`, the one entry point every op goes
// through. With no live trace, bind runs the primitive's reference kernel at once (eager mode).
// Inside a trace, it records an eqn into the innermost trace; any operand that does not belong to
// that trace (a concrete array, or a tracer of an enclosing trace) is lifted into it as a constvar
// -- or as a literal if it is a concrete scalar. That is how closures over arrays become constants
// and how transformations nest.
#pragma once
#include <initializer_list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "ir/array.h"
#include "ir/program.h"

namespace fluxion {

/// One trace in progress (internal).
struct TraceState {
  Program program;
  std::unordered_map<const ArrayImpl*, int32_t> lifted;  // outer value -> its constvar
  size_t depth = 0;                                      // position in this thread's stack
  bool alive = true;
};

/// Records ops into a new innermost trace while it lives (RAII).
class TraceScope {
 public:
  TraceScope();
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  /// A new program input of the given type.
  Array new_input(const AbstractArray& aval, SourceLoc loc = {});
  /// Ends the trace: `outputs` become the outvars (lifted first if they are not of this trace).
  Program finish(std::span<const Array> outputs);

 private:
  std::shared_ptr<TraceState> state_;
};

/// While alive, every bind on this thread records `loc` instead of the location it is given. The
/// transforms hold one while a rule runs, so that eqns emitted by a JVP, transpose or batching
/// rule carry the user's line rather than the rule's.
class LocationScope {
 public:
  explicit LocationScope(SourceLoc loc);
  ~LocationScope();
  LocationScope(const LocationScope&) = delete;
  LocationScope& operator=(const LocationScope&) = delete;

 private:
  SourceLoc saved_;
  bool had_;
};

/// True when an op would be recorded rather than run.
bool is_tracing();

/// Applies a primitive: runs it now, or records it into the innermost trace.
std::vector<Array> bind(Prim p, std::span<const Array> inputs, const Params& params, SourceLoc loc);
inline std::vector<Array> bind(Prim p, std::initializer_list<Array> inputs, const Params& params, SourceLoc loc) {
  return bind(p, std::span<const Array>(inputs.begin(), inputs.size()), params, loc);
}
/// bind for single-output primitives.
Array bind1(Prim p, std::span<const Array> inputs, const Params& params, SourceLoc loc);
inline Array bind1(Prim p, std::initializer_list<Array> inputs, const Params& params, SourceLoc loc) {
  return bind1(p, std::span<const Array>(inputs.begin(), inputs.size()), params, loc);
}

/// Runs one primitive eagerly on a device whose memory is not the host's (a GPU): the compile floor
/// registers one per such platform (compile/eager_device.cpp compiles the eqn as a one-op program
/// for the device). `on` is where the op runs and `committed` whether its results are committed
/// there (JAX's rule: committed when an operand was).
using DeviceOpRunner = std::vector<Array> (*)(Prim p, std::span<const Array> inputs, const Params& params,
                                              const Device& on, bool committed, SourceLoc loc);
void set_device_op_runner(Platform platform, DeviceOpRunner runner);

/// Abstract evaluation of one primitive (the shape rule, with errors formatted for the user).
std::vector<AbstractArray> abstract_eval(Prim p, std::span<const AbstractArray> in, const Params& params,
                                         SourceLoc loc);

/// A concrete array holding a copy of `nbytes` host bytes, on the default device (a GPU's memory
/// under a default_device_scope of one; uncommitted).
Array make_concrete(const AbstractArray& aval, const void* data);
/// A concrete array with uninitialised storage (callers fill `data()` before sharing it).
Array make_uninitialized(const AbstractArray& aval);
/// A concrete 0-d array holding a literal's value.
Array literal_array(const Literal& lit);

/// Closure conversion: the program's constvars become its leading invars (a closed program, as
/// sub-programs held in params must be); their values are appended to `consts`.
Program hoist_consts(Program p, std::vector<Array>& consts);

/// Interprets a program op by op through bind: eager on concrete arguments, and re-recorded into
/// the innermost trace when one is live (this is how a transformed program is inlined).
std::vector<Array> eval_program(const Program& p, std::span<const Array> args);

}  // namespace fluxion
