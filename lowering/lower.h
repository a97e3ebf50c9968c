// Internal to lowering/: the state and helpers the per-primitive lowering rules share. Every rule
// turns one eqn into linalg/tensor/arith/math ops on tensors -- of static shape, except for the
// symbolic dims of a polymorphic program (docs/shape_polymorphism.md), which are dynamic extents
// computed from the kernel's size arguments (`dim_value`).
//
// Element types: bool is stored as i8 (0 or 1) everywhere, so that memory and vector layouts are
// one byte per element; comparisons produce i1 and widen. Integers are signless (the rule picks
// the signed or unsigned op from the fluxion dtype). float16/bfloat16 compute in f32, as the
// reference kernels do (compute_t), and round back after each primitive.
#pragma once
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/IR/Builders.h>
#include <mlir/IR/BuiltinOps.h>

#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/program.h"
#include "lowering/compile.h"

namespace fluxion::lowering {

/// An eqn operand as the rules see it: a tensor value, or (for a literal) a scalar constant of the
/// storage type, which elementwise rules use directly inside their bodies.
struct Operand {
  mlir::Value value;
  AbstractArray aval;
  bool scalar = false;  // `value` is a scalar (a literal), not a tensor
};

struct LowerCtx {
  mlir::OpBuilder& b;
  mlir::ModuleOp module;
  mlir::Location loc;  // the current eqn's location (primitive name + user's file:line)
  MatmulPath matmul = MatmulPath::automatic;
  int num_threads = 1;  // CompileOptions::num_threads (library calls may use as many)
  /// For the current eqn: per output, the kernel's output buffer (a memref argument) when that
  /// output is a program output and nothing else reads it, else null. Library calls write there
  /// directly instead of into a temporary that is then copied.
  std::vector<mlir::Value> out_buffers;
  /// A polymorphic program's symbols, sorted (the kernel's trailing int64 arguments), and their
  /// values as `index` in the function being built.
  std::vector<std::string> symbols;
  std::map<std::string, mlir::Value> symbol_values;

  /// A declaration of an external C function (libm, runtime helpers), created once.
  mlir::func::FuncOp external(const std::string& name, mlir::TypeRange args, mlir::TypeRange results);
};

using LowerRule = std::vector<mlir::Value> (*)(LowerCtx& c, const Eqn& e, std::span<const Operand> in,
                                               std::span<const AbstractArray> out);
using LowerTable = std::vector<LowerRule>;  // indexed by Prim; nullptr: no lowering

void add_elementwise_lowerings(LowerTable& t);  // lower_elementwise.cpp
void add_shape_lowerings(LowerTable& t);        // lower_shape.cpp
void add_reduce_lowerings(LowerTable& t);       // lower_reduce.cpp
void add_dot_general_lowerings(LowerTable& t);  // lower_dot_general.cpp
void add_indexing_lowerings(LowerTable& t);     // lower_indexing.cpp
void add_random_lowerings(LowerTable& t);       // lower_random.cpp
void add_library_lowerings(LowerTable& t);      // lower_library.cpp
void add_control_lowerings(LowerTable& t);      // lower_control.cpp
void add_conv_lowerings(LowerTable& t);         // lower_conv.cpp
const LowerTable& lower_table();

/// An eqn operand: the value of a var, or a literal as a scalar constant at the insertion point.
Operand operand_of(LowerCtx& c, const Program& p, const std::vector<mlir::Value>& values, const Atom& a);
/// Lowers `eqns` (p's, or a run of them) in order at the insertion point, reading and filling
/// `values` (indexed by p's vars); `out_buffer(var)` is the output buffer a library call may write
/// var into, or null.
void lower_eqns(LowerCtx& c, const Program& p, std::span<const Eqn> eqns, std::vector<mlir::Value>& values,
                const std::function<mlir::Value(int32_t)>& out_buffer);
/// Lowers a closed sub-program (a control-flow branch or body) at the insertion point on the given
/// input tensors; returns its outputs as tensors. c.loc is restored afterwards.
std::vector<mlir::Value> lower_subprogram(LowerCtx& c, const Program& p, std::span<const mlir::Value> inputs);

/// Builds the module: func @kernel(memref args...) with the body on tensors. `in_parts`: a large
/// program with library calls may become a @kernel that calls one function per part
/// (lower_parts.cpp); the GPU pipeline wants the single function.
mlir::OwningOpRef<mlir::ModuleOp> lower_program(mlir::MLIRContext& ctx, const Program& p, const CompileOptions& options,
                                                bool in_parts = false);

/// A function of the module made of a run of p's eqns: its memref arguments are the buffers of
/// `ins` (vars of p) and then of `outs`, which it writes.
struct FunctionView {
  std::span<const Eqn> eqns;
  std::vector<int32_t> ins;
  std::vector<Atom> outs;
};
/// Appends to c.module an empty function `name` (an entry block without ops) of f's signature.
mlir::func::FuncOp add_function(LowerCtx& c, const Program& p, const FunctionView& f, const std::string& name);
/// Appends to c.module the function `name` computing f (its body on tensors, as lower_program's).
mlir::func::FuncOp lower_function(LowerCtx& c, const Program& p, const FunctionView& f, const std::string& name);
/// Builds @kernel (of `whole`'s signature) as calls to one function per part of p, if p is worth
/// cutting (lower_parts.cpp); false (and nothing built) otherwise.
bool lower_in_parts(LowerCtx& c, const Program& p, const FunctionView& whole);
/// The attribute that marks those part functions (the inliner leaves their calls alone).
inline constexpr const char* kPartAttr = "fx.part";

// ---- symbolic dims (docs/shape_polymorphism.md) -------------------------------------------------
bool is_symbolic(const Shape& s);
/// The symbols of the program's types, sorted (empty for a program of concrete types).
std::vector<std::string> program_symbols(const Program& p);
/// The dims as MLIR takes them: a symbolic dim is ShapedType::kDynamic.
llvm::SmallVector<int64_t> mlir_dims(const Shape& s);
/// Whether the array has no elements (a symbolic dim is at least 1).
bool has_no_elements(const AbstractArray& a);
/// A dim's value as an `index` at the insertion point: a constant, or the arithmetic of its
/// expression on the symbols' values.
mlir::Value dim_value(LowerCtx& c, int64_t d);
/// The values of s's symbolic dims, in order: what tensor.empty takes for its dynamic extents.
llvm::SmallVector<mlir::Value> dynamic_sizes(LowerCtx& c, const Shape& s);

// ---- types ----------------------------------------------------------------------------------------
mlir::Type storage_type(mlir::MLIRContext* ctx, DType d);
/// The type arithmetic happens in: f32 for the 16-bit floats, the storage type otherwise.
mlir::Type compute_type(mlir::MLIRContext* ctx, DType d);
mlir::RankedTensorType tensor_type(mlir::MLIRContext* ctx, const AbstractArray& a);
/// The memref a function passes `a` in (memref<1xT> for an array without elements).
mlir::MemRefType buffer_type(mlir::MLIRContext* ctx, const AbstractArray& a);

// ---- scalars (inside linalg bodies) ---------------------------------------------------------------
/// Storage value -> compute value (extends f16/bf16 to f32) and back.
mlir::Value to_compute(mlir::OpBuilder& b, mlir::Location l, mlir::Value v, DType d);
mlir::Value from_compute(mlir::OpBuilder& b, mlir::Location l, mlir::Value v, DType d);
/// A constant of dtype d's compute type.
mlir::Value constant(mlir::OpBuilder& b, mlir::Location l, DType d, double v);
/// Converts one scalar of dtype `from` (compute value) to dtype `to` (compute value), with the
/// reference's semantics (saturating float->int, NaN->0, x != 0 for bool).
mlir::Value convert_scalar(mlir::OpBuilder& b, mlir::Location l, mlir::Value x, DType from, DType to);
/// i1 -> the bool storage (i8).
mlir::Value bool_to_storage(mlir::OpBuilder& b, mlir::Location l, mlir::Value i1);
/// bool storage (i8) -> i1.
mlir::Value storage_to_bool(mlir::OpBuilder& b, mlir::Location l, mlir::Value i8);

// ---- tensors ------------------------------------------------------------------------------------
using ScalarBody = std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)>;
/// One linalg.generic over `out`'s shape: rank-0 tensors and scalar operands broadcast, the others
/// have `out`'s shape. The body gets each operand's element in its storage type and returns the
/// result in `out`'s storage type.
mlir::Value elementwise(LowerCtx& c, const AbstractArray& out, std::span<const Operand> in, const ScalarBody& body);
/// A tensor holding the operand (a literal becomes a rank-0 tensor).
mlir::Value as_tensor(LowerCtx& c, const Operand& o);
/// A tensor of `a`'s type filled with the scalar (storage type) `v`.
mlir::Value filled(LowerCtx& c, const AbstractArray& a, mlir::Value v);
mlir::Value empty(LowerCtx& c, const AbstractArray& a);
/// A tensor.empty of shape s and element type `elem` (an accumulator's type, say).
mlir::Value empty_of(LowerCtx& c, const Shape& s, mlir::Type elem);
/// The same elements under another shape (row-major order).
mlir::Value reshape_to(LowerCtx& c, mlir::Value t, const Shape& from, const AbstractArray& to);


// ---- library calls (lower_library.cpp) ----------------------------------------------------------
/// One integer of a library call's argument array: a constant, or (buffer >= 0) the address of
/// buffer `buffer` (inputs first, then outputs), or (dims_of >= 0) the product of the sizes of
/// dims [dim_begin, dim_end) of buffer `dims_of` -- how a polymorphic program passes a size that
/// is known only at run time.
struct LibraryArg {
  int64_t value = 0;
  int buffer = -1;
  int dims_of = -1;
  int dim_begin = 0, dim_end = 0;
};
/// Whether e is lowered to a library call (the elementwise code on each side cannot fuse across it).
bool is_library_call(const Eqn& e);
/// Calls the C function `symbol(int64_t* args)` (kernels/library_calls.h) with `layout` on the
/// buffers of `ins` and of fresh outputs of types `outs`; returns the outputs as tensors.
std::vector<mlir::Value> library_call(LowerCtx& c, const std::string& symbol, std::span<const mlir::Value> ins,
                                      std::span<const AbstractArray> in_avals, std::span<const AbstractArray> outs,
                                      std::span<const LibraryArg> layout);

}  // namespace fluxion::lowering
