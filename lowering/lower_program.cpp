// Program -> MLIR module: the kernel function, the value map, the dispatch over the rule table,
// and the type/scalar/tensor helpers the rules share.
#include <mlir/Dialect/Bufferization/IR/Bufferization.h>
#include <mlir/Dialect/Complex/IR/Complex.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/IR/BuiltinTypes.h>

#include <algorithm>

#include "ir/dim_expr.h"
#include "ir/error.h"
#include "ir/poly_shapes.h"
#include "lowering/compile.h"
#include "lowering/lower.h"
#include "lowering/lower_complex.h"

namespace fluxion::lowering {

using namespace mlir;

// ---- types ----------------------------------------------------------------------------------------
Type storage_type(MLIRContext* ctx, DType d) {
  switch (d) {
    case DType::bool_: case DType::int8: case DType::uint8: return IntegerType::get(ctx, 8);
    case DType::int32: case DType::uint32: return IntegerType::get(ctx, 32);
    case DType::int64: return IntegerType::get(ctx, 64);
    case DType::float16: return Float16Type::get(ctx);
    case DType::bfloat16: return BFloat16Type::get(ctx);
    case DType::float32: return Float32Type::get(ctx);
    case DType::float64: return Float64Type::get(ctx);
    // complex<f32> memrefs are interleaved (re, im) pairs, as std::complex buffers are.
    case DType::complex64: return ComplexType::get(Float32Type::get(ctx));
    case DType::complex128: return ComplexType::get(Float64Type::get(ctx));
  }
  return Float32Type::get(ctx);
}

Type compute_type(MLIRContext* ctx, DType d) {
  if (d == DType::float16 || d == DType::bfloat16) return Float32Type::get(ctx);
  return storage_type(ctx, d);
}

// ---- symbolic dims --------------------------------------------------------------------------------
bool is_symbolic(const Shape& s) {
  return std::any_of(s.begin(), s.end(), [](int64_t d) { return is_symbolic_dim(d); });
}

std::vector<std::string> program_symbols(const Program& p) {
  std::vector<AbstractArray> in = p.in_avals();  // as the Executable binds them: from its inputs
  for (int32_t v : p.constvars) in.push_back(p.type(v));
  return symbols_of(in);
}

SmallVector<int64_t> mlir_dims(const Shape& s) {
  SmallVector<int64_t> dims;
  for (int64_t d : s) dims.push_back(is_symbolic_dim(d) ? ShapedType::kDynamic : d);
  return dims;
}

bool has_no_elements(const AbstractArray& a) {
  return std::any_of(a.shape.begin(), a.shape.end(), [](int64_t d) { return d == 0; });
}

namespace {
// A dim expression as index arithmetic (DimExpr::build): floor division and modulo by positive
// constants, as the expression evaluates them.
class IndexArithmetic : public DimExpr::Builder {
 public:
  IndexArithmetic(LowerCtx& c) : c_(c) {}
  Value value(int h) const { return values_[size_t(h)]; }
  int constant(int64_t v) override { return put(c_.b.create<arith::ConstantIndexOp>(c_.loc, v)); }
  int symbol(const std::string& name) override {
    auto it = c_.symbol_values.find(name);
    if (it == c_.symbol_values.end())
      throw CompileError("CompileError: jit: the symbol " + name + " has no size argument in this kernel");
    return put(it->second);
  }
  int add(int a, int b) override { return put(c_.b.create<arith::AddIOp>(c_.loc, value(a), value(b))); }
  int mul(int a, int b) override { return put(c_.b.create<arith::MulIOp>(c_.loc, value(a), value(b))); }
  int floordiv(int a, int64_t k) override {
    return put(c_.b.create<arith::FloorDivSIOp>(c_.loc, value(a), value(constant(k))));
  }
  int mod(int a, int64_t k) override {  // a - (a // k) * k
    Value q = c_.b.create<arith::FloorDivSIOp>(c_.loc, value(a), value(constant(k)));
    return put(c_.b.create<arith::SubIOp>(c_.loc, value(a), c_.b.create<arith::MulIOp>(c_.loc, q, value(constant(k)))));
  }
  int max(int a, int b) override { return put(c_.b.create<arith::MaxSIOp>(c_.loc, value(a), value(b))); }
  int min(int a, int b) override { return put(c_.b.create<arith::MinSIOp>(c_.loc, value(a), value(b))); }

 private:
  int put(Value v) {
    values_.push_back(v);
    return int(values_.size() - 1);
  }
  LowerCtx& c_;
  std::vector<Value> values_;
};
}  // namespace

Value dim_value(LowerCtx& c, int64_t d) {
  if (!is_symbolic_dim(d)) return c.b.create<arith::ConstantIndexOp>(c.loc, d);
  DimExpr e;
  if (!decode_dim(d, e)) throw CompileError("CompileError: jit: a dim of the program is not a symbolic dimension");
  IndexArithmetic ia(c);
  return ia.value(e.build(ia));
}

SmallVector<Value> dynamic_sizes(LowerCtx& c, const Shape& s) {
  SmallVector<Value> sizes;
  for (int64_t d : s)
    if (is_symbolic_dim(d)) sizes.push_back(dim_value(c, d));
  return sizes;
}

RankedTensorType tensor_type(MLIRContext* ctx, const AbstractArray& a) {
  return RankedTensorType::get(mlir_dims(a.shape), storage_type(ctx, a.dtype));
}

// Arrays without elements are passed as memref<1xT> (the bare-pointer ABI cannot lower a zero-size
// memref type; the runtime's buffers are never null): nothing reads or writes them. So is an array
// of a symbolic type (nor can it lower a dynamic one): the function casts it to its dynamic type.
MemRefType buffer_type(MLIRContext* ctx, const AbstractArray& a) {
  Type elem = storage_type(ctx, a.dtype);
  return has_no_elements(a) || is_symbolic(a.shape) ? MemRefType::get({1}, elem) : MemRefType::get(a.shape.dims(), elem);
}

// ---- scalars --------------------------------------------------------------------------------------
Value to_compute(OpBuilder& b, Location l, Value v, DType d) {
  if (d == DType::float16 || d == DType::bfloat16) return b.create<arith::ExtFOp>(l, b.getF32Type(), v);
  return v;
}

Value from_compute(OpBuilder& b, Location l, Value v, DType d) {
  if (d == DType::float16 || d == DType::bfloat16) return b.create<arith::TruncFOp>(l, storage_type(b.getContext(), d), v);
  return v;
}

Value constant(OpBuilder& b, Location l, DType d, double v) {
  Type t = compute_type(b.getContext(), d);
  if (is_complex(d)) return complex_constant(b, l, d, v, 0.0);
  if (is_float(d)) return b.create<arith::ConstantOp>(l, b.getFloatAttr(t, v));
  if (is_unsigned_int(d) && v < 0) return b.create<arith::ConstantOp>(l, b.getIntegerAttr(t, int64_t(v)));
  return b.create<arith::ConstantOp>(l, b.getIntegerAttr(t, int64_t(v)));
}

Value bool_to_storage(OpBuilder& b, Location l, Value i1) { return b.create<arith::ExtUIOp>(l, b.getI8Type(), i1); }

Value storage_to_bool(OpBuilder& b, Location l, Value i8) {
  Value zero = b.create<arith::ConstantOp>(l, b.getIntegerAttr(i8.getType(), 0));
  return b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, i8, zero);
}

namespace {
unsigned bits_of(DType d) { return unsigned(itemsize(d) * 8); }
// The saturation bounds of an integer dtype as doubles (what the reference's C(limit) rounds to).
double int_min(DType d) {
  switch (d) {
    case DType::int8: return -128.0;
    case DType::int32: return -2147483648.0;
    case DType::int64: return -9223372036854775808.0;
    default: return 0.0;
  }
}
double int_max(DType d) {
  switch (d) {
    case DType::int8: return 127.0;
    case DType::int32: return 2147483647.0;
    case DType::int64: return 9223372036854775807.0;
    case DType::uint8: return 255.0;
    case DType::uint32: return 4294967295.0;
    default: return 1.0;
  }
}
}  // namespace

Value convert_scalar(OpBuilder& b, Location l, Value x, DType from, DType to) {
  MLIRContext* ctx = b.getContext();
  if (is_complex(from) || is_complex(to)) return convert_complex_scalar(b, l, x, from, to);
  Type tt = compute_type(ctx, to);
  if (to == DType::bool_) {
    Value ne;
    if (is_float(from)) {
      ne = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNE, x, constant(b, l, from, 0));
    } else {
      ne = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, x, constant(b, l, from, 0));
    }
    return bool_to_storage(b, l, ne);
  }
  const bool from_f = is_float(from), to_f = is_float(to);
  if (from_f && to_f) {
    if (from == DType::float64 && to == DType::float16)  // one rounding: through f32 it could be two
      return b.create<arith::ExtFOp>(l, tt, b.create<arith::TruncFOp>(l, b.getF16Type(), x).getResult());
    unsigned fb = x.getType().getIntOrFloatBitWidth(), tb = tt.getIntOrFloatBitWidth();
    if (fb == tb) return x;
    if (fb < tb) return b.create<arith::ExtFOp>(l, tt, x);
    return b.create<arith::TruncFOp>(l, tt, x);
  }
  if (!from_f && to_f) {
    if (is_signed_int(from)) return b.create<arith::SIToFPOp>(l, tt, x);
    return b.create<arith::UIToFPOp>(l, tt, x);  // unsigned and bool (0/1)
  }
  if (from_f && !to_f) {
    // The reference: NaN -> 0, x <= C(min) -> min, x >= C(max) -> max, else truncate.
    Type ft = x.getType();
    auto fconst = [&](double v) -> Value { return b.create<arith::ConstantOp>(l, b.getFloatAttr(ft, v)); };
    Value lo = fconst(int_min(to)), hi = fconst(int_max(to));
    Value conv = is_signed_int(to) ? Value(b.create<arith::FPToSIOp>(l, tt, x)) : Value(b.create<arith::FPToUIOp>(l, tt, x));
    // The saturated values exactly (as doubles, int64's maximum is 2^63, which no int64 holds).
    const unsigned bits = tt.getIntOrFloatBitWidth();
    auto iconst = [&](const llvm::APInt& v) -> Value { return b.create<arith::ConstantOp>(l, b.getIntegerAttr(tt, v)); };
    const llvm::APInt max = is_signed_int(to) ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits);
    const llvm::APInt min = is_signed_int(to) ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getZero(bits);
    Value r = b.create<arith::SelectOp>(l, b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGE, x, hi), iconst(max), conv);
    r = b.create<arith::SelectOp>(l, b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OLE, x, lo), iconst(min), r);
    r = b.create<arith::SelectOp>(l, b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNO, x, x), iconst(llvm::APInt::getZero(bits)), r);
    return r;
  }
  // integer -> integer: wraps (truncate) or extends by the source's signedness.
  unsigned fb = bits_of(from), tb = bits_of(to);
  if (fb == tb) return x;
  if (fb > tb) return b.create<arith::TruncIOp>(l, tt, x);
  if (is_signed_int(from)) return b.create<arith::ExtSIOp>(l, tt, x);
  return b.create<arith::ExtUIOp>(l, tt, x);
}

// ---- tensors --------------------------------------------------------------------------------------
Value empty_of(LowerCtx& c, const Shape& s, Type elem) {
  return c.b.create<tensor::EmptyOp>(c.loc, mlir_dims(s), elem, dynamic_sizes(c, s));
}

Value empty(LowerCtx& c, const AbstractArray& a) {
  return empty_of(c, a.shape, storage_type(c.b.getContext(), a.dtype));
}

Value filled(LowerCtx& c, const AbstractArray& a, Value v) {
  return c.b.create<linalg::FillOp>(c.loc, ValueRange{v}, ValueRange{empty(c, a)}).getResult(0);
}

Value as_tensor(LowerCtx& c, const Operand& o) {
  if (!o.scalar) return o.value;
  return c.b.create<tensor::FromElementsOp>(c.loc, tensor_type(c.b.getContext(), o.aval), ValueRange{o.value});
}

Value elementwise(LowerCtx& c, const AbstractArray& out, std::span<const Operand> in, const ScalarBody& body) {
  OpBuilder& b = c.b;
  const unsigned rank = unsigned(out.ndim());
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  SmallVector<int> slot(in.size(), -1);  // operand i -> block argument, or -1 for a scalar
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].scalar) continue;
    slot[i] = int(ins.size());
    ins.push_back(in[i].value);
    maps.push_back(in[i].aval.ndim() == 0 && rank != 0 ? AffineMap::get(rank, 0, b.getContext())
                                                       : b.getMultiDimIdentityMap(rank));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{tensor_type(b.getContext(), out)}, ins, ValueRange{empty(c, out)}, maps, iters,
      [&](OpBuilder& nb, Location nl, ValueRange args) {
        SmallVector<Value> scalars;
        for (size_t i = 0; i < in.size(); ++i) scalars.push_back(slot[i] < 0 ? in[i].value : args[size_t(slot[i])]);
        nb.create<linalg::YieldOp>(nl, body(nb, nl, scalars));
      });
  return g.getResult(0);
}

func::FuncOp LowerCtx::external(const std::string& name, TypeRange args, TypeRange results) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name)) return f;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto f = b.create<func::FuncOp>(b.getUnknownLoc(), name, b.getFunctionType(args, results));
  f.setPrivate();
  return f;
}

// ---- the rule table -------------------------------------------------------------------------------
const LowerTable& lower_table() {
  static const LowerTable table = [] {
    LowerTable t(size_t(kNumPrims), nullptr);
    add_elementwise_lowerings(t);
    add_shape_lowerings(t);
    add_reduce_lowerings(t);
    add_dot_general_lowerings(t);
    add_indexing_lowerings(t);
    add_random_lowerings(t);
    add_library_lowerings(t);
    add_control_lowerings(t);
    add_conv_lowerings(t);
    add_complex_lowerings(t);
    return t;
  }();
  return table;
}

bool has_lowering(Prim p) { return lower_table()[size_t(p)] != nullptr; }

namespace {
Location eqn_location(MLIRContext* ctx, const Eqn& e) {
  Location file = e.loc.known() ? Location(FileLineColLoc::get(ctx, e.loc.file, e.loc.line, 0)) : UnknownLoc::get(ctx);
  return NameLoc::get(StringAttr::get(ctx, prim_name(e.prim)), file);
}

[[noreturn]] void no_lowering(const Program& p, const Eqn& e) {
  std::vector<AbstractArray> in;
  for (const Atom& a : e.inputs) in.push_back(p.aval(a));
  op_error(ErrorKind::Compile, "jit", in, e.loc,
           "the primitive '" + std::string(prim_name(e.prim)) + "' has no MLIR lowering yet; it runs only eagerly");
}
}  // namespace


Operand operand_of(LowerCtx& c, const Program& p, const std::vector<Value>& values, const Atom& a) {
  if (!a.is_literal()) return Operand{values[size_t(a.var)], p.type(a.var), false};
  const Literal& lit = a.lit;
  Type t = storage_type(c.b.getContext(), lit.dtype);
  Value v;
  if (is_complex(lit.dtype)) v = complex_constant(c.b, c.loc, lit.dtype, lit.as_double(), lit.im);
  else if (is_float(lit.dtype)) v = c.b.create<arith::ConstantOp>(c.loc, c.b.getFloatAttr(t, lit.as_double()));
  else if (is_unsigned_int(lit.dtype)) v = c.b.create<arith::ConstantOp>(c.loc, c.b.getIntegerAttr(t, int64_t(lit.u)));
  else v = c.b.create<arith::ConstantOp>(c.loc, c.b.getIntegerAttr(t, lit.i));
  return Operand{v, lit.aval(), true};
}

void lower_eqns(LowerCtx& c, const Program& p, std::span<const Eqn> eqns, std::vector<Value>& values,
                const std::function<Value(int32_t)>& out_buffer) {
  MLIRContext* ctx = c.b.getContext();
  for (const Eqn& e : eqns) {
    // Sub-programs (control flow) are checked here: the top level was checked before any IR.
    if (!has_lowering(e.prim)) no_lowering(p, e);
    c.loc = eqn_location(ctx, e);
    c.out_buffers.assign(e.outputs.size(), Value());
    for (size_t i = 0; i < e.outputs.size(); ++i) c.out_buffers[i] = out_buffer(e.outputs[i]);
    std::vector<Operand> in;
    for (const Atom& a : e.inputs) in.push_back(operand_of(c, p, values, a));
    std::vector<AbstractArray> out;
    for (int32_t v : e.outputs) out.push_back(p.type(v));
    std::vector<Value> results = lower_table()[size_t(e.prim)](c, e, in, out);
    for (size_t i = 0; i < e.outputs.size(); ++i) values[size_t(e.outputs[i])] = results.at(i);
  }
}

std::vector<Value> lower_subprogram(LowerCtx& c, const Program& p, std::span<const Value> inputs) {
  if (!p.constvars.empty() || inputs.size() != p.invars.size())
    throw std::logic_error("lower_subprogram: a sub-program must be closed and given all its inputs");
  const Location outer = c.loc;
  std::vector<Value> values(p.types.size());
  for (size_t i = 0; i < inputs.size(); ++i) values[size_t(p.invars[i])] = inputs[i];
  lower_eqns(c, p, p.eqns, values, [](int32_t) { return Value(); });
  c.loc = outer;
  std::vector<Value> results;
  for (const Atom& a : p.outvars) results.push_back(as_tensor(c, operand_of(c, p, values, a)));
  return results;
}

namespace {
// A buffer of a symbolic type arrives as memref<1xT> (buffer_type): the same pointer viewed as the
// row-major memref of its dynamic sizes.
Value dynamic_buffer(LowerCtx& c, Value arg, const AbstractArray& t) {
  SmallVector<OpFoldResult> sizes, strides(size_t(t.ndim()));
  for (int64_t d : t.shape) sizes.push_back(is_symbolic_dim(d) ? OpFoldResult(dim_value(c, d)) : c.b.getIndexAttr(d));
  OpFoldResult stride = c.b.getIndexAttr(1);
  for (int k = t.ndim() - 1; k >= 0; --k) {
    strides[size_t(k)] = stride;
    const int64_t d = t.shape[size_t(k)];
    auto known = getConstantIntValue(stride);
    if (known && !is_symbolic_dim(d)) {
      stride = c.b.getIndexAttr(*known * d);
    } else {
      Value s = known ? Value(c.b.create<arith::ConstantIndexOp>(c.loc, *known)) : cast<Value>(stride);
      stride = OpFoldResult(Value(c.b.create<arith::MulIOp>(c.loc, s, dim_value(c, d))));
    }
  }
  auto type = MemRefType::get(mlir_dims(t.shape), storage_type(c.b.getContext(), t.dtype));
  return c.b.create<memref::ReinterpretCastOp>(c.loc, type, arg, c.b.getIndexAttr(0), sizes, strides);
}
}  // namespace

func::FuncOp add_function(LowerCtx& c, const Program& p, const FunctionView& f, const std::string& name) {
  MLIRContext* ctx = c.b.getContext();
  SmallVector<Type> arg_types;
  for (int32_t v : f.ins) arg_types.push_back(buffer_type(ctx, p.type(v)));
  for (const Atom& a : f.outs) arg_types.push_back(buffer_type(ctx, p.aval(a)));
  arg_types.append(c.symbols.size(), c.b.getI64Type());  // a polymorphic program's sizes
  OpBuilder::InsertionGuard guard(c.b);
  c.b.setInsertionPointToEnd(c.module.getBody());
  auto fn = c.b.create<func::FuncOp>(c.b.getUnknownLoc(), name, c.b.getFunctionType(arg_types, {}));
  fn.addEntryBlock();
  return fn;
}

func::FuncOp lower_function(LowerCtx& c, const Program& p, const FunctionView& f, const std::string& name) {
  OpBuilder& b = c.b;
  func::FuncOp fn = add_function(c, p, f, name);
  Block* entry = &fn.getBody().front();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);

  c.loc = b.getUnknownLoc();
  const unsigned n_buffers = unsigned(f.ins.size() + f.outs.size());
  c.symbol_values.clear();
  for (size_t j = 0; j < c.symbols.size(); ++j)
    c.symbol_values[c.symbols[j]] =
        b.create<arith::IndexCastOp>(c.loc, b.getIndexType(), entry->getArgument(n_buffers + unsigned(j)));
  std::vector<Value> buffers;  // the arguments as the body reads them
  for (unsigned i = 0; i < n_buffers; ++i) {
    const AbstractArray& t = i < f.ins.size() ? p.type(f.ins[i]) : p.aval(f.outs[i - f.ins.size()]);
    buffers.push_back(is_symbolic(t.shape) ? dynamic_buffer(c, entry->getArgument(i), t) : entry->getArgument(i));
  }
  std::vector<Value> values(p.types.size());
  for (size_t i = 0; i < f.ins.size(); ++i) {
    const AbstractArray& t = p.type(f.ins[i]);
    values[size_t(f.ins[i])] =
        has_no_elements(t) ? empty(c, t)
                           : Value(b.create<bufferization::ToTensorOp>(c.loc, buffers[i], /*restrict=*/true,
                                                                       /*writable=*/false));
  }

  // Outputs that only the caller reads: library calls may write them in place (c.out_buffers).
  std::vector<int> reads(p.types.size(), 0), out_slot(p.types.size(), -1);
  for (const Eqn& e : f.eqns)
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) ++reads[size_t(a.var)];
  for (size_t i = 0; i < f.outs.size(); ++i) {
    const Atom& a = f.outs[i];
    if (a.is_literal()) continue;
    ++reads[size_t(a.var)];
    out_slot[size_t(a.var)] = int(i);
  }
  lower_eqns(c, p, f.eqns, values, [&](int32_t v) {
    if (out_slot[size_t(v)] >= 0 && reads[size_t(v)] == 1 && !has_no_elements(p.type(v)))
      return buffers[f.ins.size() + size_t(out_slot[size_t(v)])];
    return Value();
  });

  c.loc = b.getUnknownLoc();
  for (size_t i = 0; i < f.outs.size(); ++i) {
    if (has_no_elements(p.aval(f.outs[i]))) continue;
    Value t = as_tensor(c, operand_of(c, p, values, f.outs[i]));
    b.create<bufferization::MaterializeInDestinationOp>(c.loc, TypeRange{}, t, buffers[f.ins.size() + i],
                                                        /*restrict=*/true, /*writable=*/true);
  }
  b.create<func::ReturnOp>(c.loc);
  return fn;
}

OwningOpRef<ModuleOp> lower_program(MLIRContext& ctx, const Program& p, const CompileOptions& options, bool in_parts) {
  ctx.getOrLoadDialect<complex::ComplexDialect>();  // complex64/complex128 (lower_complex.cpp)
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  // Every eqn must have a rule before any IR is built, so the error names the first offender.
  for (const Eqn& e : p.eqns)
    if (!has_lowering(e.prim)) no_lowering(p, e);

  LowerCtx c{b, *module, b.getUnknownLoc(), options.matmul};
  c.num_threads = options.num_threads;
  c.symbols = program_symbols(p);
  if (!c.symbols.empty()) in_parts = false;  // one function: its size arguments serve every eqn
  FunctionView whole{p.eqns, {p.invars.begin(), p.invars.end()}, p.outvars};
  whole.ins.insert(whole.ins.end(), p.constvars.begin(), p.constvars.end());
  if (!in_parts || !lower_in_parts(c, p, whole)) lower_function(c, p, whole, "kernel");
  return module;
}

}  // namespace fluxion::lowering
