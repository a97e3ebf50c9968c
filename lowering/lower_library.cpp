// Library calls: an eqn whose work a C function of the runtime does (kernels/library_calls.h).
// sort and polygamma call the reference kernel itself (sorting networks and the polygamma series
// gain nothing from generated code), as do the decompositions (Eigen/LAPACK) and fft (FFTW);
// dot_general may call Eigen (lower_dot_general.cpp decides).
//
// In the module a call is a private wrapper `@fx_libcall_N(memref...)` that stores the static
// integers and the buffers' addresses into a stack array and calls the C function with it. The
// kernel passes the wrapper memrefs (inputs: `to_memref read_only`, outputs: fresh allocations it
// then reads as tensors), so buffer deallocation sees every buffer used by the call and frees it
// only after; `inline` later folds the wrapper into the kernel.
#include <algorithm>

#include <mlir/Dialect/Bufferization/IR/Bufferization.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>

#include "ir/error.h"
#include "lowering/library_arrays.h"
#include "lowering/gpu_lines.h"
#include "lowering/lower.h"
#include "kernels/library_calls.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {
constexpr int64_t kMaxLibraryArgs = 64;  // the stack array every call passes
constexpr const char* kLibraryCallCount = "fx.library_calls";  // a module attribute: wrappers made so far
}

std::vector<Value> library_call(LowerCtx& c, const std::string& symbol, std::span<const Value> ins,
                                std::span<const AbstractArray> in_avals, std::span<const AbstractArray> outs,
                                std::span<const LibraryArg> layout) {
  OpBuilder& b = c.b;
  MLIRContext* ctx = b.getContext();
  if (int64_t(layout.size()) > kMaxLibraryArgs)
    throw CompileError("CompileError: jit: a library call (" + symbol + ") needs " + std::to_string(layout.size()) +
                       " arguments; at most " + std::to_string(kMaxLibraryArgs) + " fit");
  auto memref_of = [&](const AbstractArray& a) { return MemRefType::get(mlir_dims(a.shape), storage_type(ctx, a.dtype)); };
  SmallVector<Value> buffers;
  SmallVector<Type> buffer_types;
  for (size_t i = 0; i < ins.size(); ++i) {
    buffer_types.push_back(memref_of(in_avals[i]));
    buffers.push_back(b.create<bufferization::ToMemrefOp>(c.loc, buffer_types.back(), ins[i], /*read_only=*/true));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    buffer_types.push_back(memref_of(outs[i]));
    Value dest = i < c.out_buffers.size() ? c.out_buffers[i] : Value();
    buffers.push_back(dest ? dest
                           : Value(b.create<memref::AllocOp>(c.loc, cast<MemRefType>(buffer_types.back()),
                                                             dynamic_sizes(c, outs[i].shape), b.getI64IntegerAttr(64))));
  }

  // The wrapper.
  auto arg_array = MemRefType::get({kMaxLibraryArgs}, b.getI64Type());
  func::FuncOp callee = c.external(symbol, TypeRange{arg_array}, TypeRange{});
  func::FuncOp wrapper;
  {
    OpBuilder::InsertionGuard guard(b);
    // The wrappers are numbered by a count kept on the module: probing names with lookupSymbol
    // scans the module's functions, cubic in the number of calls (a jitted 100-step spectral
    // solver's gradient has thousands of FFTs).
    auto count = c.module->getAttrOfType<IntegerAttr>(kLibraryCallCount);
    const int64_t n = count ? count.getInt() : 0;
    c.module->setAttr(kLibraryCallCount, b.getI64IntegerAttr(n + 1));
    b.setInsertionPointToEnd(c.module.getBody());
    wrapper = b.create<func::FuncOp>(c.loc, "fx_libcall_" + std::to_string(n), b.getFunctionType(buffer_types, {}));
    wrapper.setPrivate();
    Block* body = wrapper.addEntryBlock();
    b.setInsertionPointToStart(body);
    Value array = b.create<memref::AllocaOp>(c.loc, arg_array);
    for (size_t i = 0; i < layout.size(); ++i) {
      Value v;
      if (layout[i].buffer >= 0) {
        Value addr = b.create<memref::ExtractAlignedPointerAsIndexOp>(c.loc, body->getArgument(unsigned(layout[i].buffer)));
        v = b.create<arith::IndexCastOp>(c.loc, b.getI64Type(), addr);
      } else if (layout[i].dims_of >= 0) {  // a size known at run time: the buffer's dims
        Value n = b.create<arith::ConstantIndexOp>(c.loc, 1);
        for (int d = layout[i].dim_begin; d < layout[i].dim_end; ++d)
          n = b.create<arith::MulIOp>(c.loc, n, b.create<memref::DimOp>(c.loc, body->getArgument(unsigned(layout[i].dims_of)), d));
        v = b.create<arith::IndexCastOp>(c.loc, b.getI64Type(), n);
      } else {
        v = b.create<arith::ConstantOp>(c.loc, b.getI64IntegerAttr(layout[i].value));
      }
      Value idx = b.create<arith::ConstantIndexOp>(c.loc, int64_t(i));
      b.create<memref::StoreOp>(c.loc, v, array, ValueRange{idx});
    }
    b.create<func::CallOp>(c.loc, callee, ValueRange{array});
    b.create<func::ReturnOp>(c.loc);
  }
  b.create<func::CallOp>(c.loc, wrapper, buffers);
  std::vector<Value> results;
  for (size_t i = 0; i < outs.size(); ++i)
    results.push_back(b.create<bufferization::ToTensorOp>(c.loc, buffers[ins.size() + i], /*restrict=*/true, /*writable=*/true));
  return results;
}

namespace {
// A fresh tensor holding a copy of t (bufferization gives it a buffer of its own).
Value private_copy(LowerCtx& c, Value t) {
  return c.b.create<bufferization::AllocTensorOp>(c.loc, cast<RankedTensorType>(t.getType()), ValueRange{}, t);
}

}  // namespace

std::vector<Value> call_on_arrays(LowerCtx& c, const std::string& symbol, std::vector<LibraryArg> layout,
                                  std::span<const Operand> in, std::span<const AbstractArray> out,
                                  bool private_operands) {
  std::vector<Value> tensors;
  std::vector<AbstractArray> in_avals;
  int buffer = 0;
  auto describe = [&](const AbstractArray& a) {
    layout.push_back({int64_t(a.dtype)});
    layout.push_back({int64_t(a.ndim())});
    for (int64_t d : a.shape) layout.push_back({d});
    layout.push_back({0, buffer++});
  };
  for (const Operand& o : in) {
    tensors.push_back(as_tensor(c, o));
    if (private_operands) tensors.back() = private_copy(c, tensors.back());
    in_avals.push_back(o.aval);
    describe(o.aval);
  }
  for (const AbstractArray& a : out) describe(a);
  return library_call(c, symbol, tensors, in_avals, out, layout);
}

namespace {

// A param by key, or nullptr.
const ParamValue* find_param(const Params& p, std::string_view key) {
  for (const auto& [k, v] : p.entries())
    if (k == key) return &v;
  return nullptr;
}

// Appends e's param k to the call's integers as ir/eval_rules.h's KernelParam says: a bool as 0/1,
// an IntList as its length then its elements, a string as its index in k.choices.
void encode_param(const Eqn& e, const KernelParam& k, std::vector<LibraryArg>& layout) {
  const ParamValue* v = find_param(e.params, k.name);
  auto refuse = [&](const std::string& why) {
    throw CompileError("CompileError: jit: " + std::string(prim_name(e.prim)) + " at " + e.loc.str() + ": the param " +
                       k.name + " " + why);
  };
  if (!v) refuse("is missing");
  if (const bool* b = std::get_if<bool>(v)) {
    layout.push_back({int64_t(*b)});
  } else if (const int64_t* i = std::get_if<int64_t>(v)) {
    layout.push_back({*i});
  } else if (const IntList* list = std::get_if<IntList>(v); list && k.is_ints) {
    layout.push_back({int64_t(list->size())});
    for (int64_t x : *list) layout.push_back({x});
  } else if (const std::string* str = std::get_if<std::string>(v); str && !k.choices.empty()) {
    auto it = std::find(k.choices.begin(), k.choices.end(), std::string_view(*str));
    if (it == k.choices.end()) refuse("has the value \"" + *str + "\", not one the library call can pass");
    layout.push_back({int64_t(it - k.choices.begin())});
  } else {
    refuse("is of a type the library call cannot pass");
  }
}

// The reference kernel of e.prim through fluxion_rt_call_prim (layout in kernels/library_calls.h).
std::vector<Value> call_reference_kernel(LowerCtx& c, const Eqn& e, std::span<const Operand> in,
                                         std::span<const AbstractArray> out) {
  for (const Operand& o : in)
    if (o.aval.size() == 0) {
      std::vector<Value> empties;
      for (const AbstractArray& a : out) empties.push_back(empty(c, a));
      return empties;
    }
  const std::span<const KernelParam> names = runtime::library_call_params(e.prim);
  std::vector<LibraryArg> layout{{int64_t(e.prim)}, {int64_t(in.size())}, {int64_t(out.size())}, {int64_t(names.size())}};
  for (const KernelParam& k : names) encode_param(e, k, layout);
  // A host callback reads its operands through pointers that the tensor analysis does not follow
  // past the call: CSE would share one `to_memref` between two prints of a value and bufferization
  // may overwrite that buffer in between. A copy of its own (never merged: it allocates) is read
  // exactly where the print is.
  return call_on_arrays(c, "fluxion_rt_call_prim", std::move(layout), in, out, eval_rules(e.prim).effect);
}

}  // namespace

namespace {

// sort: the reference kernel on the CPU; on a GPU, whose code cannot call the host, a thread per
// line (gpu_sort.cpp).
std::vector<Value> sort_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  if (lowering_for_gpu(c)) return gpu_sort(c, e, in, out);
  return call_reference_kernel(c, e, in, out);
}

}  // namespace

bool is_library_call(const Eqn& e) {
  const LowerRule r = lower_table()[size_t(e.prim)];
  return r == &call_reference_kernel || r == &sort_rule;  // (only the CPU pipeline asks)
}

void add_library_lowerings(LowerTable& t) {
  t[size_t(Prim::sort)] = &sort_rule;
  t[size_t(Prim::polygamma)] = &call_reference_kernel;
  t[size_t(Prim::debug_callback)] = &call_reference_kernel;  // calls back into the process (prims/debug.h)
  // Collectives (prims/collectives.cpp): their kernels meet the other devices' through ir/spmd.h.
  for (Prim p : {Prim::psum, Prim::pmean, Prim::pmax, Prim::pmin, Prim::all_gather, Prim::psum_scatter, Prim::ppermute,
                 Prim::all_to_all, Prim::axis_index})
    t[size_t(p)] = &call_reference_kernel;
  // The matrix decompositions and solves (prims/linalg.cpp, linalg_spectral.cpp): Eigen's.
  for (Prim p : {Prim::cholesky, Prim::triangular_solve, Prim::lu, Prim::qr, Prim::eigh, Prim::svd,
                 Prim::cholesky_linear})
    t[size_t(p)] = &call_reference_kernel;
  // FFTW (prims/fft_kernel.cpp): the plan cached per transform shape, as eagerly.
  t[size_t(Prim::fft)] = &call_reference_kernel;
}

}  // namespace fluxion::lowering
