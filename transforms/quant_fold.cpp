// Batch-norm folding (transforms/quant.h, fold_batch_norm): conv then inference-mode batch norm is
// y = (conv(x, w) + b - mean) * k + beta with k = scale / sqrt(var + eps) per output channel, which
// is conv(x, w * k) + (b - mean) * k + beta -- one convolution, the form quantization wants (its
// per-channel weight scales then cover the weights the model really multiplies by).
#include <string>
#include <vector>

#include "api/elementwise.h"
#include "api/shape_ops.h"
#include "ir/error.h"
#include "transforms/quant.h"

namespace fluxion::quant {

nn::Conv fold_batch_norm(const nn::Conv& conv, const nn::BatchNorm& bn, const nn::BatchNorm::State& state, double eps,
                         SourceLoc loc) {
  const int64_t rank = conv.weight.ndim();
  const int64_t out_axis = conv.channels_last ? rank - 1 : 0;
  const int64_t out = rank >= 3 ? conv.weight.shape()[size_t(out_axis)] : -1;
  const Shape features{out};
  if (rank < 3 || bn.scale.shape() != features || bn.bias.shape() != features || state.mean.shape() != features ||
      state.var.shape() != features || conv.bias.shape() != features)
  {
    const std::vector<AbstractArray> operands{conv.weight.aval(), conv.bias.aval(), bn.scale.aval(), state.mean.aval()};
    op_error(ErrorKind::Shape, "quant::fold_batch_norm", operands, loc,
             "the batch norm's scale, bias, mean and variance need one entry per output channel of the convolution");
  }
  // In float64, rounded once to the weights' dtype: the folded product differs from conv + batch
  // norm only by float32 rounding.
  const Array k = astype(bn.scale, float64) * rsqrt(astype(state.var, float64) + eps);
  Shape along(std::vector<int64_t>(size_t(rank), 1));
  along[size_t(out_axis)] = out;
  nn::Conv folded = conv;
  folded.weight = astype(astype(conv.weight, float64) * reshape(k, along), conv.weight.dtype());
  folded.bias = astype((astype(conv.bias, float64) - astype(state.mean, float64)) * k + astype(bn.bias, float64),
                       conv.bias.dtype());
  return folded;
}

}  // namespace fluxion::quant
