#include "ir/trace.h"

#include <cstring>
#include <new>

#include "ir/debug_checks.h"
#include "ir/dim_expr.h"
#include "ir/eager_cpu_hook.h"
#include "ir/eval_rules.h"
#include "ir/interpret.h"
#include "ir/poly_shapes.h"
#include "ir/profiler.h"
#include "ir/settings.h"
#include "memory/buffer.h"

namespace fluxion {

namespace {
thread_local std::vector<TraceState*> t_stack;
thread_local bool t_has_loc = false;
thread_local SourceLoc t_loc;

[[noreturn]] void leaked(const ArrayImpl& a, Prim p, SourceLoc loc) {
  throw TracerLeakError("TracerLeakError: " + std::string(prim_name(p)) + " at " + loc.str() +
                        ": an operand is a tracer (" + a.aval.str() + ", created at " + a.loc.str() +
                        ") of a trace that has already ended. A traced value escaped its transformation "
                        "(stored in a global or a captured variable); return it from the function instead.");
}

bool owned_by(const ArrayImpl& a, const TraceState* t) { return a.trace.get() == t; }

// The var of `a` in trace `t`, lifting it (as constvar or literal) if it comes from outside.
Atom atom_in(TraceState& t, const Array& a, Prim p, SourceLoc loc) {
  const ArrayImpl& impl = *a.impl();
  if (owned_by(impl, &t)) return Atom(impl.var);
  if (impl.trace) {
    const TraceState& owner = *impl.trace;
    if (!owner.alive || owner.depth >= t_stack.size() || t_stack[owner.depth] != &owner) leaked(impl, p, loc);
  } else if (impl.aval.shape.rank() == 0) {
    return Atom(Literal::load(host_data(impl), impl.aval.dtype, impl.aval.weak_type));
  }
  auto it = t.lifted.find(&impl);
  if (it != t.lifted.end()) return Atom(it->second);
  int32_t v = t.program.new_var(impl.aval);
  t.program.constvars.push_back(v);
  t.program.consts.push_back(a);
  t.lifted.emplace(&impl, v);
  return Atom(v);
}

Array tracer(const std::shared_ptr<TraceState>& t, int32_t var, SourceLoc loc) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = t->program.type(var);
  impl->trace = t;
  impl->var = var;
  impl->loc = loc;
  return Array(std::move(impl));
}

// Owning pointers to the TraceStates on the stack, so tracers can hold them.
thread_local std::vector<std::shared_ptr<TraceState>> t_owners;

// Where an eager op runs: on the device its committed operands share (two different ones are a
// DeviceError), else on the default device. Sharded operands are read through their gathered host
// copy and commit nothing.
struct Placement {
  Device device;
  bool committed = false;
};
Placement placement(Prim p, std::span<const Array> inputs, std::span<const AbstractArray> in_avals, SourceLoc loc) {
  Placement at{default_device(), false};
  for (const Array& x : inputs) {
    const Buffer* b = x.impl()->buffer.get();
    if (!b || !b->committed || x.impl()->sharding) continue;
    if (at.committed && !(b->device == at.device))
      op_error(ErrorKind::Device, prim_name(p), in_avals, loc,
               "operands are committed to different devices, " + at.device.str() + " and " + b->device.str() +
                   "; move one with fx::device_put");
    at = {b->device, true};
  }
  return at;
}

DeviceOpRunner g_device_runners[2] = {nullptr, nullptr};  // by Platform
EagerCpuRunner g_eager_cpu_runner = nullptr;               // compile/eager_cpu.cpp
// Inside eval_program (fx::eval, the oracle every backend is tested against): reference kernels only.
thread_local int t_reference_only = 0;

// An eager op on a GPU: its platform's runner (the compile floor's); a process without one cannot
// have made a GPU array, so a missing runner is an internal error.
std::vector<Array> run_on_device(Prim p, std::span<const Array> inputs, const Params& params,
                                 std::span<const AbstractArray> in_avals, const Placement& at, SourceLoc loc) {
  DeviceOpRunner run = g_device_runners[size_t(at.device.platform)];
  if (!run)
    op_error(ErrorKind::Device, prim_name(p), in_avals, loc,
             "internal error: no eager runner for " + at.device.str() + " (the library's compile floor registers it)");
  std::vector<Array> outs = run(p, inputs, params, at.device, at.committed, loc);
  if (config::debug_nans()) check_nonfinite(p, inputs, outs, params, loc);
  return outs;
}

// An eager result's memory. An allocation that fails is a DeviceError naming the op and the bytes
// (issue 35: a valid shape can still be more than the machine has), not a std::bad_alloc.
std::shared_ptr<Buffer> allocate_result(const AbstractArray& aval, const Device& device, Prim p,
                                        std::span<const AbstractArray> in, SourceLoc loc) {
  if (has_symbolic_dim(std::span(&aval, 1)))  // no size to allocate (docs/shape_polymorphism.md)
    op_error(ErrorKind::Shape, prim_name(p), in, loc, "its result: " + shape_problem(aval.shape, aval.dtype));
  try {
    return Buffer::allocate_on(device, aval.nbytes());
  } catch (const std::bad_alloc&) {
    op_error(ErrorKind::Device, prim_name(p), in, loc,
             "cannot allocate " + std::to_string(aval.nbytes()) + " bytes for its result " + aval.str() + " (out of memory)");
  }
}

const ArrayImpl& operand(const Array& a, Prim p, size_t i, SourceLoc loc) {
  if (!a.valid())
    throw ValueError("ValueError: " + std::string(prim_name(p)) + " at " + loc.str() + ": operand " +
                     std::to_string(i) + " is an empty Array handle (default-constructed or moved from)");
  return *a.impl();
}
}  // namespace

void set_device_op_runner(Platform platform, DeviceOpRunner runner) { g_device_runners[size_t(platform)] = runner; }
void set_eager_cpu_runner(EagerCpuRunner runner) { g_eager_cpu_runner = runner; }

// ---- TraceScope ---------------------------------------------------------------------------------
TraceScope::TraceScope() : state_(std::make_shared<TraceState>()) {
  state_->depth = t_stack.size();
  t_stack.push_back(state_.get());
  t_owners.push_back(state_);
}

TraceScope::~TraceScope() {
  if (state_->alive) {
    state_->alive = false;
    t_stack.pop_back();
    t_owners.pop_back();
  }
}

Array TraceScope::new_input(const AbstractArray& aval, SourceLoc loc) {
  int32_t v = state_->program.new_var(aval);
  state_->program.invars.push_back(v);
  return tracer(state_, v, loc);
}

Program TraceScope::finish(std::span<const Array> outputs) {
  TraceState& t = *state_;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ArrayImpl& impl = operand(outputs[i], Prim::neg, i, {});
    if (owned_by(impl, &t)) {
      t.program.outvars.push_back(Atom(impl.var));
    } else if (!impl.trace && impl.aval.shape.rank() == 0) {
      t.program.outvars.push_back(Atom(Literal::load(host_data(impl), impl.aval.dtype, impl.aval.weak_type)));
    } else {
      t.program.outvars.push_back(atom_in(t, outputs[i], Prim::neg, {}));
    }
  }
  t.alive = false;
  t_stack.pop_back();
  t_owners.pop_back();
  t.lifted.clear();
  return std::move(t.program);
}

bool is_tracing() { return !t_stack.empty(); }

LocationScope::LocationScope(SourceLoc loc) : saved_(t_loc), had_(t_has_loc) {
  t_loc = loc;
  t_has_loc = true;
}
LocationScope::~LocationScope() {
  t_loc = saved_;
  t_has_loc = had_;
}

// ---- bind ---------------------------------------------------------------------------------------
std::vector<AbstractArray> abstract_eval(Prim p, std::span<const AbstractArray> in, const Params& params,
                                         SourceLoc loc) {
  ShapeRule rule = eval_rules(p).shape;
  if (!rule) op_error(ErrorKind::Type, prim_name(p), in, loc, "internal error: the primitive has no shape rule");
  // Symbolic dims (ir/dim_expr.h) reach only the rules that copy and compare dims.
  const bool symbolic = has_symbolic_dim(in);
  if (symbolic)
    if (std::string why = symbolic_operand_problem(p, in); !why.empty()) op_error(ErrorKind::Shape, prim_name(p), in, loc, why);
  std::vector<AbstractArray> out;
  try {
    out = rule(in, params);
  } catch (const RuleError& e) {
    op_error(e.kind, prim_name(p), in, loc, e.detail);
  }
  for (const AbstractArray& o : out)  // a result too large to count (issue 35): not a wrapped size
    if (std::string why = symbolic_shape_problem(o.shape, o.dtype); !why.empty()) op_error(ErrorKind::Shape, prim_name(p), in, loc, why);
  return out;
}

std::vector<Array> bind(Prim p, std::span<const Array> inputs, const Params& params, SourceLoc loc) {
  if (t_has_loc) loc = t_loc;
  const EvalRules& r = eval_rules(p);
  std::vector<AbstractArray> in_avals;
  in_avals.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) in_avals.push_back(operand(inputs[i], p, i, loc).aval);
  std::vector<AbstractArray> out_avals = abstract_eval(p, in_avals, params, loc);

  std::vector<Array> outs;
  outs.reserve(out_avals.size());
  if (t_stack.empty()) check_settings_once();  // eager: as a compile would (docs/settings.md)
  if (t_stack.empty() && r.impl) {
    // Primitives with sub-programs run them; their results take the types the shape rule gives
    // (the jit's types), which can differ only in weak typing (a loop that runs zero times
    // returns its weak initial carry).
    outs = r.impl(inputs, params, loc);
    for (size_t i = 0; i < outs.size() && i < out_avals.size(); ++i)
      if (outs[i].valid() && outs[i].impl()->aval.weak_type != out_avals[i].weak_type) {
        auto impl = std::make_shared<ArrayImpl>(*outs[i].impl());
        impl->aval.weak_type = out_avals[i].weak_type;
        outs[i] = Array(std::move(impl));
      }
    return outs;
  }
  if (t_stack.empty()) {
    // Eager: run the reference kernel now, on the device of the committed operands.
    profiler::Scope prof("eager", [&] { return std::string(prim_name(p)); });
    for (const Array& x : inputs)
      if (x.impl()->trace) leaked(*x.impl(), p, loc);
    const Placement at = placement(p, inputs, in_avals, loc);
    if (at.device.memory_kind() == MemoryKind::device) return run_on_device(p, inputs, params, in_avals, at, loc);
    if (g_eager_cpu_runner && t_reference_only == 0)
      if (std::optional<std::vector<Array>> compiled = g_eager_cpu_runner(p, inputs, params, out_avals, at.device, at.committed, loc)) {
        if (config::debug_nans()) check_nonfinite(p, inputs, *compiled, params, loc);
        return std::move(*compiled);
      }
    std::vector<View> in_views(inputs.size()), out_views(out_avals.size());
    for (size_t i = 0; i < inputs.size(); ++i) in_views[i] = View{host_data(*inputs[i].impl()), &inputs[i].impl()->aval};
    for (size_t i = 0; i < out_avals.size(); ++i) {
      auto impl = std::make_shared<ArrayImpl>();
      impl->aval = std::move(out_avals[i]);
      impl->buffer = allocate_result(impl->aval, at.device, p, in_avals, loc);
      impl->buffer->committed = at.committed;
      out_views[i] = View{impl->buffer->data, &impl->aval};
      outs.emplace_back(std::move(impl));
    }
    r.kernel(in_views, out_views, params);
    if (config::debug_nans()) check_nonfinite(p, inputs, outs, params, loc);
    return outs;
  }

  TraceState& t = *t_stack.back();
  Eqn e;
  e.prim = p;
  e.params = params;
  e.loc = loc;
  e.inputs.reserve(inputs.size());
  for (const Array& a : inputs) e.inputs.push_back(atom_in(t, a, p, loc));
  e.outputs.reserve(out_avals.size());
  for (AbstractArray& av : out_avals) e.outputs.push_back(t.program.new_var(std::move(av)));
  const std::shared_ptr<TraceState>& owner = t_owners.back();
  for (int32_t v : e.outputs) outs.push_back(tracer(owner, v, loc));
  t.program.eqns.push_back(std::move(e));
  return outs;
}

Array bind1(Prim p, std::span<const Array> inputs, const Params& params, SourceLoc loc) {
  std::vector<Array> r = bind(p, inputs, params, loc);
  return std::move(r[0]);
}

// ---- concrete arrays ----------------------------------------------------------------------------
Array make_uninitialized(const AbstractArray& aval) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = aval;
  impl->buffer = Buffer::allocate(aval.nbytes());
  return Array(std::move(impl));
}

Array make_concrete(const AbstractArray& aval, const void* data) {
  const Device d = default_device();
  if (d.memory_kind() == MemoryKind::device) {
    auto impl = std::make_shared<ArrayImpl>();
    impl->aval = aval;
    impl->buffer = Buffer::allocate_on(d, aval.nbytes());
    if (aval.nbytes()) device_memory(d.platform).copy_to_device(d.id, impl->buffer->address, data, aval.nbytes());
    return Array(std::move(impl));
  }
  Array a = make_uninitialized(aval);
  if (aval.nbytes()) std::memcpy(a.impl()->buffer->data, data, aval.nbytes());
  return a;
}

Array literal_array(const Literal& lit) {
  Array a = make_uninitialized(lit.aval());
  lit.store(a.impl()->buffer->data);
  return a;
}

Program hoist_consts(Program p, std::vector<Array>& consts) {
  std::vector<int32_t> invars = p.constvars;
  invars.insert(invars.end(), p.invars.begin(), p.invars.end());
  p.invars = std::move(invars);
  p.constvars.clear();
  consts.insert(consts.end(), p.consts.begin(), p.consts.end());
  p.consts.clear();
  return p;
}

// ---- the interpreter ----------------------------------------------------------------------------
std::vector<Array> eval_program(const Program& p, std::span<const Array> args) {
  struct ReferenceOnly {
    ReferenceOnly() { ++t_reference_only; }
    ~ReferenceOnly() { --t_reference_only; }
  } reference_only;
  if (args.size() != p.invars.size())
    throw TypeError("TypeError: eval: the program takes " + std::to_string(p.invars.size()) +
                    " arguments, got " + std::to_string(args.size()));
  if (p.consts.size() != p.constvars.size())
    throw ValueError("ValueError: eval: the program has " + std::to_string(p.constvars.size()) +
                     " constvars but only " + std::to_string(p.consts.size()) +
                     " values for them (a parsed program must be given its constants)");
  for (size_t i = 0; i < args.size(); ++i) {
    const AbstractArray& want = p.type(p.invars[i]);
    if (!args[i].valid() || !args[i].aval().same_type(want))
      throw TypeError("TypeError: eval: argument " + std::to_string(i) + " has type " +
                      (args[i].valid() ? args[i].aval().str() : std::string("<empty>")) + ", the program expects " +
                      want.str());
  }
  return interpret(p, args);
}

std::vector<Array> interpret(const Program& p, std::span<const Array> args, const EqnHook& hook) {
  std::vector<Array> env(p.types.size());
  for (size_t i = 0; i < args.size(); ++i) env[size_t(p.invars[i])] = args[i];
  for (size_t i = 0; i < p.consts.size(); ++i) env[size_t(p.constvars[i])] = p.consts[i];
  // Free each intermediate after its last use.
  std::vector<int32_t> last_use(p.types.size(), -1);
  for (size_t k = 0; k < p.eqns.size(); ++k)
    for (const Atom& a : p.eqns[k].inputs)
      if (!a.is_literal()) last_use[size_t(a.var)] = int32_t(k);
  for (const Atom& a : p.outvars)
    if (!a.is_literal()) last_use[size_t(a.var)] = int32_t(p.eqns.size());
  auto read = [&](const Atom& a) { return a.is_literal() ? literal_array(a.lit) : env[size_t(a.var)]; };
  std::vector<Array> ins;
  for (size_t k = 0; k < p.eqns.size(); ++k) {
    const Eqn& e = p.eqns[k];
    ins.clear();
    for (const Atom& a : e.inputs) ins.push_back(read(a));
    std::optional<Array> hooked = hook ? hook(k, e, ins) : std::nullopt;
    if (hooked) {
      env[size_t(e.outputs[0])] = std::move(*hooked);
    } else {
      std::vector<Array> outs = bind(e.prim, ins, e.params, e.loc);
      for (size_t j = 0; j < outs.size(); ++j) env[size_t(e.outputs[j])] = std::move(outs[j]);
    }
    for (const Atom& a : e.inputs)
      if (!a.is_literal() && last_use[size_t(a.var)] == int32_t(k)) env[size_t(a.var)] = Array();
  }
  std::vector<Array> result;
  result.reserve(p.outvars.size());
  for (const Atom& a : p.outvars) result.push_back(read(a));
  return result;
}

}  // namespace fluxion
