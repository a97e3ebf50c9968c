// fx::onnx::export_: an inference function as an ONNX model (opset 17), for runtimes such as
// onnxruntime:
//
//   fx::onnx::export_(model, x_example, "model.onnx");   // inputs in0, in1, ...; outputs out0, ...
//   fx::onnx::export_(model, fx::polymorphic_shapes("b, 784"), "model.onnx");   // dim_param "b"
//
// The function is traced on the examples' types (Arrays or AbstractArrays) and goes through the
// jit's Program-level passes (custom derivatives inlined); closed-over arrays become initializers.
// Primitives map to ONNX operators one to one where ONNX has them (elementwise math and
// comparisons, Where, Cast, MatMul or Einsum for dot_general, Reduce*, Reshape, Expand,
// Transpose, Squeeze, Concat, Slice (rev too, with step -1), Gather, CumSum); any other is a
// CompileError naming it and the user's line. See docs/export.md.
//
// A quantized function (fx::quant::Quantized) is written in QDQ form: each quantized product's
// activation through QuantizeLinear/DequantizeLinear, its int8 weight through DequantizeLinear
// (per output channel), the rest as above (docs/quantization.md, "ONNX").
#pragma once
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ir/program.h"
#include "transforms/export.h"

namespace fluxion::quant {
class Quantized;
}

namespace fluxion::onnx {

/// Writes `p` as an ONNX model file.
void export_program(Program p, const std::string& path);
/// Writes a quantized function for an input of type x, in QDQ form.
void export_quantized(const quant::Quantized& q, const AbstractArray& x, const std::string& path);

/// export_(f, examples..., path).
template <class F, class... Args>
void export_(const F& f, const Args&... args_then_path) {
  static_assert(sizeof...(Args) >= 1, "fx::onnx::export_(f, examples..., path)");
  constexpr size_t n = sizeof...(Args) - 1;
  auto all = std::forward_as_tuple(args_then_path...);
  const std::string path = std::get<n>(all);
  if constexpr (std::is_same_v<F, quant::Quantized>) {
    static_assert(n == 1, "fx::onnx::export_(quantized, x_example, path): a quantized function takes one array");
    export_quantized(f, export_detail::example(std::get<0>(all)).aval(), path);
  } else {
    [&]<size_t... I>(std::index_sequence<I...>) {
      export_program(detail::trace_to_program(f, export_detail::example(std::get<I>(all))...).first, path);
    }(std::make_index_sequence<n>{});
  }
}

/// export_(f, fx::polymorphic_shapes("b, 784"), path): symbolic dims become ONNX dim_params, and
/// the shapes the graph computes read the symbols' sizes from its inputs (docs/shape_polymorphism.md).
/// f takes one float32 Array per shape, as fx::export_ with polymorphic_shapes and no examples.
template <class F, class P>
  requires std::is_convertible_v<P, std::string>
void export_(const F& f, const PolymorphicShapes& shapes, const P& path) {
  if constexpr (std::is_same_v<F, quant::Quantized>)
    export_quantized(f, export_detail::spec_avals(shapes).at(0), std::string(path));
  else
    export_program(export_detail::trace_on_specs<1>(f, export_detail::spec_avals(shapes)), std::string(path));
}

}  // namespace fluxion::onnx
