#include "transforms/onnx.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "ir/dim_expr.h"
#include "ir/trace.h"
#include "prims/conv_geometry.h"
#include "interpreters/jit_passes.h"
#include "transforms/onnx_proto.h"
#include "transforms/refuse_complex.h"
#include "transforms/quant.h"

namespace fluxion::onnx {

namespace {

using proto::Message;

int onnx_dtype(DType d) {
  switch (d) {
    case DType::bool_: return proto::dtype::bool_;
    case DType::int8: return proto::dtype::int8;
    case DType::uint8: return proto::dtype::uint8;
    case DType::int32: return proto::dtype::int32;
    case DType::uint32: return proto::dtype::uint32;
    case DType::int64: return proto::dtype::int64;
    case DType::float16: return proto::dtype::float16;
    case DType::bfloat16: return proto::dtype::bfloat16;
    case DType::float32: return proto::dtype::float_;
    case DType::float64: return proto::dtype::double_;
    case DType::complex64: case DType::complex128: break;  // refused before (transforms/refuse_complex.h)
  }
  throw CompileError("CompileError: fx::onnx::export_: no ONNX type for " + std::string(dtype_name(d)));
}

// The ONNX operator computing the primitive elementwise with the same operands, or nullptr.
const char* elementwise_op(Prim p) {
  switch (p) {
    case Prim::neg: return "Neg";
    case Prim::sign: return "Sign";
    case Prim::floor: return "Floor";
    case Prim::ceil: return "Ceil";
    case Prim::exp: return "Exp";
    case Prim::log: return "Log";
    case Prim::tanh: return "Tanh";
    case Prim::logistic: return "Sigmoid";
    case Prim::sin: return "Sin";
    case Prim::cos: return "Cos";
    case Prim::tan: return "Tan";
    case Prim::asin: return "Asin";
    case Prim::acos: return "Acos";
    case Prim::atan: return "Atan";
    case Prim::sinh: return "Sinh";
    case Prim::cosh: return "Cosh";
    case Prim::asinh: return "Asinh";
    case Prim::acosh: return "Acosh";
    case Prim::atanh: return "Atanh";
    case Prim::sqrt: return "Sqrt";
    case Prim::abs: return "Abs";
    case Prim::not_: return "Not";
    case Prim::erf: return "Erf";
    case Prim::stop_gradient: return "Identity";
    case Prim::add: case Prim::add_any: return "Add";
    case Prim::sub: return "Sub";
    case Prim::mul: return "Mul";
    case Prim::div: return "Div";
    case Prim::pow: return "Pow";
    case Prim::max: return "Max";
    case Prim::min: return "Min";
    case Prim::and_: return "And";
    case Prim::or_: return "Or";
    case Prim::xor_: return "Xor";
    case Prim::eq: return "Equal";
    case Prim::lt: return "Less";
    case Prim::le: return "LessOrEqual";
    case Prim::gt: return "Greater";
    case Prim::ge: return "GreaterOrEqual";
    case Prim::select: return "Where";  // select(pred, on_true, on_false) = Where(pred, x, y)
    default: return nullptr;
  }
}

Message int_attr(const char* name, int64_t v) {
  Message a;
  a.bytes(proto::attribute::name, name).varint(proto::attribute::type, proto::attribute_type::int_);
  a.varint(proto::attribute::i, uint64_t(v));
  return a;
}

Message ints_attr(const char* name, const IntList& v) {
  Message a;
  a.bytes(proto::attribute::name, name).varint(proto::attribute::type, proto::attribute_type::ints);
  for (int64_t x : v) a.varint(proto::attribute::ints, uint64_t(x));
  return a;
}

Message string_attr(const char* name, const std::string& v) {
  Message a;
  a.bytes(proto::attribute::name, name).varint(proto::attribute::type, proto::attribute_type::string);
  a.bytes(proto::attribute::s, v);
  return a;
}

// A symbolic dim (a polymorphic export: docs/shape_polymorphism.md) is a dim_param named by its
// expression ("b", "2*b").
Message value_info(const std::string& name, const AbstractArray& a) {
  Message shape;
  for (int64_t d : a.shape)
    shape.message(proto::shape::dim, is_symbolic_dim(d) ? Message().bytes(proto::dimension::dim_param, dim_str(d))
                                                         : Message().varint(proto::dimension::dim_value, uint64_t(d)));
  Message tensor;
  tensor.varint(proto::tensor_type::elem_type, uint64_t(onnx_dtype(a.dtype))).message(proto::tensor_type::shape, shape);
  return Message().bytes(proto::value_info::name, name).message(proto::value_info::type,
                                                                Message().message(proto::type::tensor_type, tensor));
}

// A quantized function's program (fx::quant::Quantized::program): its first `param_leaves` invars
// are parameters, written as initializers (the float ones; a weight only quantized layers read has
// no float form), and the equations in `layers` are written in QDQ form.
struct Qdq {
  size_t param_leaves = 0;
  const std::vector<Array>* params = nullptr;
  std::map<size_t, const quant::Quantized::Layer*> layers;
};

// Builds the graph of one program, eqn by eqn.
class GraphWriter {
 public:
  explicit GraphWriter(const Program& p, const Qdq* qdq = nullptr) : p_(p), names_(p.types.size()), qdq_(qdq) {}

  Message graph() {
    const size_t params = qdq_ ? qdq_->param_leaves : 0;
    for (size_t i = 0; i < params; ++i) {
      const Array& v = (*qdq_->params)[i];
      if (v.valid()) names_[size_t(p_.invars[i])] = initializer(v.aval(), v.data());
    }
    for (size_t i = params; i < p_.invars.size(); ++i) {
      names_[size_t(p_.invars[i])] = "in" + std::to_string(i - params);
      graph_.message(proto::graph::input, value_info(names_[size_t(p_.invars[i])], p_.type(p_.invars[i])));
    }
    for (size_t i = 0; i < p_.constvars.size(); ++i)
      names_[size_t(p_.constvars[i])] = initializer(p_.consts[i].aval(), p_.consts[i].data());
    for (size_t k = 0; k < p_.eqns.size(); ++k) eqn(k, p_.eqns[k]);
    for (size_t i = 0; i < p_.outvars.size(); ++i) {
      const std::string out = "out" + std::to_string(i);
      node("Identity", {atom(p_.outvars[i])}, {out});
      graph_.message(proto::graph::output, value_info(out, p_.aval(p_.outvars[i])));
    }
    graph_.bytes(proto::graph::name, "fluxion");
    return graph_;
  }

 private:
  std::string fresh() { return "t" + std::to_string(next_++); }

  std::string initializer(const AbstractArray& a, const void* data) {
    const std::string name = fresh();
    Message t;
    for (int64_t d : a.shape) t.varint(proto::tensor::dims, uint64_t(d));
    t.varint(proto::tensor::data_type, uint64_t(onnx_dtype(a.dtype))).bytes(proto::tensor::name, name);
    t.bytes(proto::tensor::raw_data, std::string_view(static_cast<const char*>(data), a.nbytes()));
    graph_.message(proto::graph::initializer, t);
    return name;
  }
  // A list of sizes as an int64 tensor: an initializer, or -- when it holds symbolic dims -- a
  // Concat of constants and each symbol's size read from the input it is a dim of (Shape).
  std::string ints(const IntList& v) {
    if (std::none_of(v.begin(), v.end(), [](int64_t d) { return is_symbolic_dim(d); }))
      return initializer(AbstractArray{Shape{int64_t(v.size())}, DType::int64, false}, v.data());
    std::vector<std::string> parts;
    for (int64_t d : v) parts.push_back(is_symbolic_dim(d) ? symbol_size(d) : ints(IntList{d}));
    const std::string t = fresh();
    node("Concat", parts, {t}, {int_attr("axis", 0)});
    return t;
  }
  // int64[1]: the run-time size of a symbolic dim that is one symbol, the dim of an input.
  std::string symbol_size(int64_t code) {
    if (auto it = symbol_sizes_.find(code); it != symbol_sizes_.end()) return it->second;
    for (size_t i = 0; i < p_.invars.size(); ++i) {
      const Shape& s = p_.type(p_.invars[i]).shape;
      for (size_t k = 0; k < s.size(); ++k)
        if (s[k] == code) {
          const std::string t = fresh();
          node("Shape", {names_[size_t(p_.invars[i])]}, {t}, {int_attr("start", int64_t(k)), int_attr("end", int64_t(k) + 1)});
          return symbol_sizes_[code] = t;
        }
    }
    throw CompileError("CompileError: onnx::export_: the size " + dim_str(code) +
                       " is not a dim of an input; only plain symbols are exported to ONNX as shapes");
  }
  std::string scalar(double v, DType d) {
    const Literal lit = Literal::of_double(v, d);
    unsigned char bytes[8];
    lit.store(bytes);
    return initializer(lit.aval(), bytes);
  }
  std::string atom(const Atom& a) {
    if (!a.is_literal()) return names_[size_t(a.var)];
    unsigned char bytes[8];
    a.lit.store(bytes);
    return initializer(a.lit.aval(), bytes);
  }

  void node(const char* op, const std::vector<std::string>& in, const std::vector<std::string>& out,
            const std::vector<Message>& attrs = {}) {
    Message n;
    for (const std::string& s : in) n.bytes(proto::node::input, s);
    for (const std::string& s : out) n.bytes(proto::node::output, s);
    n.bytes(proto::node::name, "n" + std::to_string(nodes_++)).bytes(proto::node::op_type, op);
    for (const Message& a : attrs) n.message(proto::node::attribute, a);
    graph_.message(proto::graph::node, n);
  }

  void eqn(size_t k, const Eqn& e);
  std::string einsum(const Eqn& e);
  void quantized_operands(const quant::Quantized::Layer& L, std::vector<std::string>& in);
  bool elementwise(const Eqn& e, const std::vector<std::string>& in, const std::vector<std::string>& out);
  bool structural(const Eqn& e, const std::vector<std::string>& in, const std::vector<std::string>& out);
  bool conv(const Eqn& e, const std::vector<std::string>& in, const std::vector<std::string>& out);
  bool pool(const Eqn& e, const std::vector<std::string>& in, const std::vector<std::string>& out);
  std::string transposed(const std::string& x, const IntList& perm) {
    if (std::is_sorted(perm.begin(), perm.end())) return x;
    const std::string t = fresh();
    node("Transpose", {x}, {t}, {ints_attr("perm", perm)});
    return t;
  }

  const Program& p_;
  std::vector<std::string> names_;
  std::map<int64_t, std::string> symbol_sizes_;  // symbolic dim code -> its int64[1] size tensor
  const Qdq* qdq_;
  Message graph_;
  int next_ = 0, nodes_ = 0;
};

// dot_general as an Einsum equation: output = batch dims, lhs free dims, rhs free dims.
std::string GraphWriter::einsum(const Eqn& e) {
  const IntList& lc = e.params.get_ints("lhs_contracting");
  const IntList& rc = e.params.get_ints("rhs_contracting");
  const IntList& lb = e.params.get_ints("lhs_batch");
  const IntList& rb = e.params.get_ints("rhs_batch");
  const int64_t lr = p_.aval(e.inputs[0]).ndim(), rr = p_.aval(e.inputs[1]).ndim();
  std::string l(size_t(lr), ' '), r(size_t(rr), ' '), out;
  char next = 'a';
  for (size_t i = 0; i < lb.size(); ++i) l[size_t(lb[i])] = r[size_t(rb[i])] = next, out += next++;
  for (size_t i = 0; i < lc.size(); ++i) l[size_t(lc[i])] = r[size_t(rc[i])] = next++;
  for (char& c : l)
    if (c == ' ') c = next, out += next++;
  for (char& c : r)
    if (c == ' ') c = next, out += next++;
  return l + "," + r + "->" + out;
}

// conv_general_dilated as Conv: operands transposed into ONNX's (N, C, spatial...) and
// (O, I, spatial...) from their dimension numbers, the result back into out_spec's layout. ONNX has
// no input dilation, batch groups or negative (cropping) padding: those stay errors.
bool GraphWriter::conv(const Eqn& e, const std::vector<std::string>& in, const std::vector<std::string>& out) {
  const conv::ConvParams c = conv::conv_params(e.params);
  const auto ones = [](const IntList& v) { return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; }); };
  const bool negative = std::any_of(c.padding.begin(), c.padding.end(), [](int64_t x) { return x < 0; });
  if (!ones(c.lhs_dilation) || c.batch_group_count != 1 || negative) return false;
  IntList pads;  // ONNX: all begins, then all ends
  for (size_t i = 0; i < c.padding.size(); i += 2) pads.push_back(c.padding[i]);
  for (size_t i = 1; i < c.padding.size(); i += 2) pads.push_back(c.padding[i]);
  const std::string y = fresh();
  node("Conv", {transposed(in[0], c.lhs_spec), transposed(in[1], c.rhs_spec)}, {y},
       {ints_attr("strides", c.window_strides), ints_attr("pads", pads), ints_attr("dilations", c.rhs_dilation),
        int_attr("group", c.feature_group_count)});
  IntList back(c.out_spec.size());  // role j lives in dim out_spec[j]
  for (size_t j = 0; j < c.out_spec.size(); ++j) back[size_t(c.out_spec[j])] = int64_t(j);
  node("Identity", {transposed(y, back)}, out);
  return true;
}

// reduce_window_max as MaxPool, reduce_window_sum as AveragePool (padding counted) times the window
// size: when exactly two dims have a trivial window (size 1, stride 1, no padding), which become
// ONNX's N and C, and nothing is base-dilated (and, for the sum, window-dilated: opset 17's
// AveragePool has no dilations).
bool GraphWriter::pool(const Eqn& e, const std::vector<std::string>& in, const std::vector<std::string>& out) {
  const Params& ps = e.params;
  const IntList &wdim = ps.get_ints("window_dimensions"), &st = ps.get_ints("window_strides"),
                &pad = ps.get_ints("padding"), &bd = ps.get_ints("base_dilation"), &wd = ps.get_ints("window_dilation");
  IntList perm, kernel, strides, lo, hi, dil;
  for (size_t d = 0; d < wdim.size(); ++d)
    if (wdim[d] == 1 && st[d] == 1 && pad[2 * d] == 0 && pad[2 * d + 1] == 0 && perm.size() < 2) perm.push_back(int64_t(d));
  if (perm.size() != 2) return false;
  for (size_t d = 0; d < wdim.size(); ++d) {
    if (bd[d] != 1 || pad[2 * d] < 0 || pad[2 * d + 1] < 0) return false;
    if (int64_t(d) == perm[0] || int64_t(d) == perm[1]) continue;
    perm.push_back(int64_t(d));
    kernel.push_back(wdim[d]), strides.push_back(st[d]), lo.push_back(pad[2 * d]), hi.push_back(pad[2 * d + 1]);
    dil.push_back(wd[d]);
  }
  IntList pads = lo;
  pads.insert(pads.end(), hi.begin(), hi.end());
  const bool sum = e.prim == Prim::reduce_window_sum;
  if (sum && !std::all_of(dil.begin(), dil.end(), [](int64_t x) { return x == 1; })) return false;
  const std::string y = fresh();
  std::vector<Message> attrs = {ints_attr("kernel_shape", kernel), ints_attr("strides", strides), ints_attr("pads", pads)};
  if (sum) attrs.push_back(int_attr("count_include_pad", 1));
  else attrs.push_back(ints_attr("dilations", dil));
  node(sum ? "AveragePool" : "MaxPool", {transposed(in[0], perm)}, {y}, attrs);
  IntList back(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) back[size_t(perm[j])] = int64_t(j);
  std::string r = transposed(y, back);
  if (sum) {
    int64_t n = 1;
    for (int64_t k : kernel) n *= k;
    const std::string t = fresh();
    node("Mul", {r, scalar(double(n), p_.aval(e.inputs[0]).dtype)}, {t});
    r = t;
  }
  node("Identity", {r}, out);
  return true;
}

// A quantized layer in QDQ form, as onnxruntime's own quantizer writes it: the activation through
// QuantizeLinear and DequantizeLinear (per tensor, affine: round half to even and saturation, as
// quant::quantize_array), the int8 weight an initializer through DequantizeLinear along its output
// channels (symmetric), and the product itself in float. Its value is the integer path's, (acc -
// zero point x the weight's sums) x both scales, up to float rounding; a runtime may fuse the
// pattern into an integer kernel. Padding with 0.0 pads with the dequantized zero point.
void GraphWriter::quantized_operands(const quant::Quantized::Layer& L, std::vector<std::string>& in) {
  const std::string scale = scalar(L.activation.scale, DType::float32);
  const int8_t zp = int8_t(L.activation.zero_point);
  const std::string zero_point = initializer(AbstractArray{Shape{}, DType::int8, false}, &zp);
  const std::string q = fresh(), x = fresh();
  node("QuantizeLinear", {in[0], scale, zero_point}, {q});
  node("DequantizeLinear", {q, scale, zero_point}, {x});
  const int64_t channels = L.weight_scale.shape()[0];
  const std::vector<int8_t> zeros(size_t(channels), 0);
  const std::string w = fresh();
  node("DequantizeLinear",
       {initializer(L.weight.aval(), L.weight.data()), initializer(L.weight_scale.aval(), L.weight_scale.data()),
        initializer(AbstractArray{Shape{channels}, DType::int8, false}, zeros.data())},
       {w}, {int_attr("axis", L.weight_channel_axis)});
  in[0] = x, in[1] = w;
}

void GraphWriter::eqn(size_t k, const Eqn& e) {
  std::vector<std::string> in;
  for (const Atom& a : e.inputs) in.push_back(atom(a));
  if (qdq_)
    if (auto it = qdq_->layers.find(k); it != qdq_->layers.end()) quantized_operands(*it->second, in);
  for (size_t j = 0; j < in.size(); ++j)
    if (in[j].empty())  // quantize() keeps every parameter an unquantized equation reads
      throw CompileError("CompileError: fx::onnx::export_: operand " + std::to_string(j) + " of " +
                         std::string(prim_name(e.prim)) + " is a quantized function's parameter with no float value");
  std::vector<std::string> out;
  for (int32_t v : e.outputs) out.push_back(names_[size_t(v)] = fresh());
  if (!elementwise(e, in, out) && !structural(e, in, out)) {
    std::vector<AbstractArray> types;
    for (const Atom& a : e.inputs) types.push_back(p_.aval(a));
    op_error(ErrorKind::Compile, prim_name(e.prim), types, e.loc,
             "fx::onnx::export_: this primitive (with these params) has no ONNX form");
  }
}

// Elementwise primitives: one ONNX operator of the same meaning, or a few.
bool GraphWriter::elementwise(const Eqn& e, const std::vector<std::string>& in, const std::vector<std::string>& out) {
  // ONNX's Not/And/Or/Xor take bools only (the Bitwise* forms are opset 18): integers are refused
  // instead of making a model no runtime loads.
  const bool logical = e.prim == Prim::not_ || e.prim == Prim::and_ || e.prim == Prim::or_ || e.prim == Prim::xor_;
  const char* op = elementwise_op(e.prim);
  if (op && !(logical && p_.aval(e.inputs[0]).dtype != DType::bool_)) return node(op, in, out), true;
  const Params& ps = e.params;
  switch (e.prim) {
    case Prim::rsqrt: {
      const std::string t = fresh();
      node("Sqrt", in, {t});
      return node("Reciprocal", {t}, out), true;
    }
    case Prim::is_finite: {  // neither infinite nor NaN
      const std::string inf = fresh(), nan = fresh(), either = fresh();
      node("IsInf", in, {inf});
      node("IsNaN", in, {nan});
      node("Or", {inf, nan}, {either});
      return node("Not", {either}, out), true;
    }
    case Prim::ne: {
      const std::string t = fresh();
      node("Equal", in, {t});
      return node("Not", {t}, out), true;
    }
    case Prim::rem: return node("Mod", in, out, {int_attr("fmod", 1)}), true;
    case Prim::integer_pow:
      return node("Pow", {in[0], scalar(double(ps.get_int("y")), p_.aval(e.inputs[0]).dtype)}, out), true;
    case Prim::convert_element_type: return node("Cast", in, out, {int_attr("to", onnx_dtype(ps.get<DType>("new_dtype")))}), true;
    default: return false;
  }
}

// Shapes, reductions, products, indexing, convolution and pooling.
bool GraphWriter::structural(const Eqn& e, const std::vector<std::string>& in, const std::vector<std::string>& out) {
  const Params& ps = e.params;
  switch (e.prim) {
    case Prim::broadcast_in_dim: {
      const IntList& shape = ps.get_ints("shape");
      const IntList& bdims = ps.get_ints("broadcast_dimensions");
      IntList ones(shape.size(), 1);
      for (size_t k = 0; k < bdims.size(); ++k) ones[size_t(bdims[k])] = p_.aval(e.inputs[0]).shape[k];
      const std::string t = fresh();
      node("Reshape", {in[0], ints(ones)}, {t});
      return node("Expand", {t, ints(shape)}, out), true;
    }
    case Prim::reshape: return node("Reshape", {in[0], ints(ps.get_ints("new_sizes"))}, out), true;
    case Prim::squeeze: return node("Squeeze", {in[0], ints(ps.get_ints("dimensions"))}, out), true;
    case Prim::transpose: return node("Transpose", in, out, {ints_attr("perm", ps.get_ints("permutation"))}), true;
    case Prim::reduce_sum:
      return node("ReduceSum", {in[0], ints(ps.get_ints("axes"))}, out, {int_attr("keepdims", 0)}), true;
    case Prim::reduce_max: case Prim::reduce_min: case Prim::reduce_prod:
      return node(e.prim == Prim::reduce_max ? "ReduceMax" : e.prim == Prim::reduce_min ? "ReduceMin" : "ReduceProd", in, out,
                  {ints_attr("axes", ps.get_ints("axes")), int_attr("keepdims", 0)}), true;
    case Prim::concatenate: return node("Concat", in, out, {int_attr("axis", ps.get_int("dimension"))}), true;
    case Prim::slice: {
      const int64_t rank = p_.aval(e.inputs[0]).ndim();
      IntList axes, steps = ps.has("strides") ? ps.get_ints("strides") : IntList(size_t(rank), 1);
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
      return node("Slice", {in[0], ints(ps.get_ints("start_indices")), ints(ps.get_ints("limit_indices")), ints(axes), ints(steps)}, out), true;
    }
    case Prim::rev: {  // a slice with step -1 from the last element past the first, on each axis
      // Any end below -size means "past the first element" (ONNX clamps it); not INT64_MIN, which
      // ints() would read as a symbolic dim's code.
      const int64_t past_first = -(int64_t(1) << 61);
      const IntList& dims = ps.get_ints("dimensions");
      const IntList starts(dims.size(), -1), ends(dims.size(), past_first), steps(dims.size(), -1);
      return node("Slice", {in[0], ints(starts), ints(ends), ints(dims), ints(steps)}, out), true;
    }
    case Prim::cumsum:  // CumSum's axis is a 0-d tensor; `reverse` runs it from the end, as ours
      return node("CumSum", {in[0], scalar(double(ps.get_int("axis")), DType::int64)}, out,
                  {int_attr("reverse", ps.get_bool("reverse") ? 1 : 0)}), true;
    case Prim::gather:
      if (ps.has("batch_dims") && ps.get_int("batch_dims") != 0) return false;
      return node("Gather", in, out, {int_attr("axis", ps.get_int("axis"))}), true;
    case Prim::dot_general: {
      const bool plain = ps.get_ints("lhs_batch").empty() && p_.aval(e.inputs[0]).ndim() == 2 && p_.aval(e.inputs[1]).ndim() == 2 &&
                         ps.get_ints("lhs_contracting") == IntList{1} && ps.get_ints("rhs_contracting") == IntList{0};
      if (plain) return node("MatMul", in, out), true;
      return node("Einsum", in, out, {string_attr("equation", einsum(e))}), true;
    }
    case Prim::iota: {  // a constant: computed now
      const Array v = bind1(Prim::iota, std::span<const Array>{}, ps, e.loc);
      const std::string t = initializer(v.aval(), v.data());
      return node("Identity", {t}, out), true;
    }
    case Prim::conv_general_dilated: return conv(e, in, out);
    case Prim::reduce_window_max: case Prim::reduce_window_sum: return pool(e, in, out);
    default: return false;
  }
}

void write_model(const Message& graph, const std::string& path) {
  Message model;
  model.varint(proto::model::ir_version, 8).bytes(proto::model::producer_name, "fluxion");
  model.message(proto::model::opset_import, Message().bytes(proto::opset::domain, "").varint(proto::opset::version, 17));
  model.message(proto::model::graph, graph);
  std::ofstream out(path, std::ios::binary);
  out << model.str();
  out.close();
  if (!out) throw ValueError("ValueError: fx::onnx::export_: cannot write " + path);
}

}  // namespace

void export_program(Program p, const std::string& path) {
  if (is_tracing()) throw ValueError("ValueError: fx::onnx::export_ was called inside a transformation");
  const std::string stem = jit_dump_stem(p);
  p = jit_passes(std::move(p), stem);
  // ONNX has complex types, but none of the operators written here takes them: such a model would not load.
  refuse_complex(p, "fx::onnx::export_", "complex values have no ONNX form Fluxion writes");
  write_model(GraphWriter(p).graph(), path);
}

void export_quantized(const quant::Quantized& q, const AbstractArray& x, const std::string& path) {
  if (is_tracing()) throw ValueError("ValueError: fx::onnx::export_ was called inside a transformation");
  Program p = q.program(x);
  const std::string stem = jit_dump_stem(p);
  p = jit_passes(std::move(p), stem);
  refuse_complex(p, "fx::onnx::export_", "complex values have no ONNX form Fluxion writes");
  Qdq qdq{q.param_leaves(), &q.float_params(), q.layers_in(p)};
  if (qdq.layers.size() != q.layer_count())
    throw CompileError("CompileError: fx::onnx::export_ of a quantized function: " + std::to_string(qdq.layers.size()) +
                       " of its " + std::to_string(q.layer_count()) +
                       " quantized layers are in the program after the jit's passes; the rest cannot be written");
  write_model(GraphWriter(p, &qdq).graph(), path);
}

}  // namespace fluxion::onnx
