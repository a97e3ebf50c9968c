// Post-training quantization of a traced function (train/quant.h): which equations are quantized,
// calibration (observing their activations), and the quantized function's interpreter, which
// runs every other equation through bind as it was -- so it traces under jit/vmap/grad like any
// Fluxion code.
#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <tuple>

#include "api/creation.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "ir/interpret.h"
#include "ir/trace.h"
#include "transforms/quant.h"

namespace fluxion::quant {

namespace {


// The parameter leaf an atom is (its index), or -1.
int64_t param_index(const Program& p, size_t param_leaves, const Atom& a) {
  if (a.is_literal()) return -1;
  for (size_t i = 0; i < param_leaves; ++i)
    if (p.invars[i] == a.var) return int64_t(i);
  return -1;
}

// Whether eqn `e` is quantized, and why not: float32 matrix products (no batch dims, a 2-D weight)
// and ungrouped convolutions whose weight (rhs) is a parameter.
bool quantizable(const Program& p, size_t param_leaves, const Eqn& e, std::string* why) {
  if (e.prim != Prim::dot_general && e.prim != Prim::conv_general_dilated) return false;
  const AbstractArray lhs = p.aval(e.inputs[0]), rhs = p.aval(e.inputs[1]);
  if (param_index(p, param_leaves, e.inputs[1]) < 0) return *why = "its weight (rhs) is not a parameter", false;
  if (lhs.dtype != DType::float32 || rhs.dtype != DType::float32) return *why = "not float32", false;
  if (e.params.has("preferred_element_type")) return *why = "it has a preferred_element_type", false;
  if (e.prim == Prim::dot_general) {
    const IntList& lc = e.params.get_ints("lhs_contracting");
    if (!e.params.get_ints("lhs_batch").empty() || rhs.ndim() != 2 || lc.size() != 1 || lc[0] != lhs.ndim() - 1)
      return *why = "a batched product, a weight that is not a matrix, or a contraction not over the input's last axis",
             false;
    return true;
  }
  if (e.params.get_int("feature_group_count") != 1 || e.params.get_int("batch_group_count") != 1)
    return *why = "a grouped convolution", false;
  return true;
}

// The weight's output-channel axis and the output's.
std::pair<int64_t, int64_t> channel_axes(const Program& p, const Eqn& e) {
  if (e.prim == Prim::dot_general)
    return {1 - e.params.get_ints("rhs_contracting")[0], p.type(e.outputs[0]).ndim() - 1};
  return {e.params.get_ints("rhs_spec")[0], e.params.get_ints("out_spec")[1]};
}

// Host copy of an activation; NaN or Inf is a ValueError naming the batch and the equation.
std::vector<float> observed(const Array& x, int64_t batch, size_t k, const Eqn& e) {
  std::vector<float> v = astype(x, float32).to_vector<float>();
  for (float f : v)
    if (!std::isfinite(f))
      throw ValueError("ValueError: quant::calibrate: calibration batch " + std::to_string(batch) + ": the input of " +
                       std::string(prim_name(e.prim)) + " (equation " + std::to_string(k) + ", " + x.aval().str() +
                       ") holds a NaN or Inf");
  return v;
}

std::pair<double, double> batch_range(std::vector<float> v, const Observer& o) {
  if (o.kind == Observer::minmax) {
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return {*lo, *hi};
  }
  const double q = std::clamp(o.percent, 50.0, 100.0) / 100.0;
  const size_t hi_i = std::min(v.size() - 1, size_t(std::floor(q * double(v.size() - 1))));
  const size_t lo_i = v.size() - 1 - hi_i;
  std::nth_element(v.begin(), v.begin() + long(hi_i), v.end());
  const double hi = v[hi_i];
  std::nth_element(v.begin(), v.begin() + long(lo_i), v.end());
  return {v[lo_i], hi};
}

// A convolution padded by >= 0 without input dilation: quantized, its int8 input is padded with the
// zero point explicitly and the convolution pads nothing, so the zero point's term is the same at
// every output position (z x each output channel's weight sum): a vector, where padding with zeros
// would make it differ along the borders (an array of the output's size).
bool pads_zero_point(const Eqn& e) {
  if (e.prim != Prim::conv_general_dilated) return false;
  for (int64_t d : e.params.get_ints("lhs_dilation"))
    if (d != 1) return false;
  for (int64_t p : e.params.get_ints("padding"))
    if (p < 0) return false;
  return true;
}

// The int8 input padded with the zero point as the convolution would pad it, and the convolution's
// params without padding.
std::pair<Array, Params> padded_with_zero_point(const Array& q, const Params& conv, int32_t zero_point, SourceLoc loc) {
  const IntList& lhs_spec = conv.get_ints("lhs_spec");
  const IntList& padding = conv.get_ints("padding");
  std::vector<std::pair<int64_t, int64_t>> widths(size_t(q.ndim()), {0, 0});
  for (size_t i = 0; i + 2 < lhs_spec.size(); ++i) widths[size_t(lhs_spec[i + 2])] = {padding[2 * i], padding[2 * i + 1]};
  Params unpadded = conv;
  unpadded.set("padding", IntList(padding.size(), 0));
  return {pad(q, widths, float(zero_point), loc), unpadded};
}

// Whether a convolution's precomputed correction (batch 1) broadcasts against its output here.
bool correction_fits(const Array& c, const Array& out) {
  if (c.ndim() != out.ndim()) return false;
  for (int64_t d = 0; d < c.ndim(); ++d)
    if (c.shape()[size_t(d)] != 1 && c.shape()[size_t(d)] != out.shape()[size_t(d)]) return false;
  return true;
}

}  // namespace

namespace detail {

Stats calibrate(Program program, size_t param_leaves, const std::vector<Array>& param_values,
                const std::vector<Array>& batches, const Observer& observer) {
  Stats stats;
  stats.param_leaves = param_leaves;
  for (size_t b = 0; b < batches.size(); ++b) {
    std::vector<Array> args = param_values;
    args.push_back(batches[b]);
    std::map<size_t, std::pair<double, double>> seen;
    interpret(program, args, [&](size_t k, const Eqn& e, const std::vector<Array>& ins) -> std::optional<Array> {
      std::string why;
      if (quantizable(program, param_leaves, e, &why)) seen[k] = batch_range(observed(ins[0], int64_t(b), k, e), observer);
      return std::nullopt;
    });
    for (const auto& [k, r] : seen) {
      auto [it, fresh] = stats.ranges.try_emplace(k, r);
      if (fresh) continue;
      if (observer.kind == Observer::minmax)
        it->second = {std::min(it->second.first, r.first), std::max(it->second.second, r.second)};
      else  // the running mean of the batches' percentiles
        it->second = {it->second.first + (r.first - it->second.first) / double(b + 1),
                      it->second.second + (r.second - it->second.second) / double(b + 1)};
    }
  }
  stats.batches = int64_t(batches.size());
  stats.program = std::move(program);
  return stats;
}

Quantized quantize(const Stats& stats, const std::vector<Array>& param_values,
                   std::function<Program(const AbstractArray&)> trace) {
  auto s = std::make_shared<Quantized::State>();
  s->trace = std::move(trace);
  s->param_leaves = stats.param_leaves;
  const Program& p = stats.program;
  size_t ordinal = 0;
  if (param_values.size() != stats.param_leaves)
    throw ValueError("ValueError: quant::quantize: the parameters have " + std::to_string(param_values.size()) +
                     " leaves, calibration saw " + std::to_string(stats.param_leaves));
  std::vector<bool> float_use(stats.param_leaves, false);
  for (size_t k = 0; k < p.eqns.size(); ++k) {
    const Eqn& e = p.eqns[k];
    std::string why;
    const bool can = quantizable(p, stats.param_leaves, e, &why);
    const bool q = can && stats.ranges.count(k);
    if (!q && (e.prim == Prim::dot_general || e.prim == Prim::conv_general_dilated))
      s->notes.push_back("equation " + std::to_string(k) + " " + std::string(prim_name(e.prim)) + ": float (" +
                         (why.empty() ? "not calibrated" : why) + ")");
    for (size_t j = 0; j < e.inputs.size(); ++j)
      if (int64_t i = param_index(p, stats.param_leaves, e.inputs[j]); i >= 0 && !(q && j == 1)) float_use[size_t(i)] = true;
    const size_t this_ordinal = can ? ordinal++ : 0;
    if (!q) continue;
    Quantized::Layer L;
    L.prim = e.prim;
    const auto [lo, hi] = stats.ranges.at(k);
    L.activation = affine_for_range(lo, hi);
    const Array w = param_values[size_t(param_index(p, stats.param_leaves, e.inputs[1]))];
    const auto [w_axis, out_axis] = channel_axes(p, e);
    L.weight_channel_axis = w_axis;
    L.out_channel_axis = out_axis;
    std::vector<int64_t> others;
    for (int64_t d = 0; d < w.ndim(); ++d)
      if (d != w_axis) others.push_back(d);
    const Array amax = max(abs(w), others);
    L.weight_scale = where(amax > 0.f, amax / 127.f, 1.f);
    L.weight = quantize_array(w, L.weight_scale, zeros({w.shape()[size_t(w_axis)]}), int8, w_axis);
    // zero_point x (the products of an all-ones input with the int8 weight): the term the affine
    // zero point adds to every output, border-aware for a convolution padded with zeros.
    L.pads_zero_point = pads_zero_point(e);
    if (L.pads_zero_point) {
      L.correction = astype(sum(astype(L.weight, int32), others), float32) * float(L.activation.zero_point);
      s->layers.emplace(this_ordinal, std::move(L));
      continue;
    }
    AbstractArray ones_type = p.aval(e.inputs[0]);
    if (e.prim == Prim::conv_general_dilated) ones_type.shape[size_t(e.params.get_ints("lhs_spec")[0])] = 1;
    else ones_type.shape = Shape{1, ones_type.shape[size_t(ones_type.ndim() - 1)]};
    Params wide = e.params;
    wide.set("preferred_element_type", DType::int32);
    const Array ones_in = astype(ones(ones_type.shape), int8);
    Array sums = astype(bind(e.prim, {ones_in, L.weight}, wide, e.loc)[0], float32);
    if (e.prim == Prim::dot_general) sums = reshape(sums, {sums.shape()[size_t(sums.ndim() - 1)]});
    L.correction = sums * float(L.activation.zero_point);
    s->layers.emplace(this_ordinal, std::move(L));
  }
  for (const Atom& a : p.outvars)
    if (int64_t i = param_index(p, stats.param_leaves, a); i >= 0) float_use[size_t(i)] = true;
  for (size_t i = 0; i < param_values.size(); ++i) s->params.push_back(float_use[i] ? param_values[i] : Array());
  s->programs.emplace(p.in_avals().back().str(), std::make_shared<const Program>(p));
  return Quantized(std::move(s));
}

}  // namespace detail

std::shared_ptr<const Program> Quantized::traced(const AbstractArray& x) const {
  const State& s = *s_;
  std::lock_guard<std::mutex> lock(s.mu);
  std::shared_ptr<const Program>& slot = s.programs[x.str()];
  if (!slot) slot = std::make_shared<const Program>(s.trace(x));
  return slot;
}

std::map<size_t, const Quantized::Layer*> Quantized::layers_in(const Program& p) const {
  std::map<size_t, const Layer*> found;
  for (size_t k = 0, n = 0; k < p.eqns.size(); ++k) {
    const Eqn& e = p.eqns[k];
    std::string why;
    if (!quantizable(p, s_->param_leaves, e, &why)) continue;
    auto it = s_->layers.find(n++);
    if (it == s_->layers.end()) continue;
    const AbstractArray w = p.aval(e.inputs[1]);
    if (!(w.shape == it->second.weight.shape()) || channel_axes(p, e).first != it->second.weight_channel_axis)
      throw ValueError("ValueError: quant::Quantized: the weight of " + std::string(prim_name(e.prim)) + " is " +
                       w.str() + " here, " + it->second.weight.aval().str() + " at calibration");
    found.emplace(k, &it->second);
  }
  return found;
}

Array Quantized::operator()(const Array& x) const {
  const State& s = *s_;
  const std::shared_ptr<const Program> program = traced(x.aval());
  const Program& p = *program;
  const std::map<size_t, const Layer*> layers = layers_in(p);
  std::vector<Array> args = s.params;
  args.push_back(x);
  std::vector<Array> out = interpret(p, args, [&](size_t k, const Eqn& e, const std::vector<Array>& ins) -> std::optional<Array> {
    auto it = layers.find(k);
    if (it == layers.end()) return std::nullopt;
    const Layer& L = *it->second;
    Array qa = quantize_array(ins[0], L.activation.scale, float(L.activation.zero_point), int8, std::nullopt, e.loc);
    Params wide = e.params;
    if (L.pads_zero_point) std::tie(qa, wide) = padded_with_zero_point(qa, e.params, L.activation.zero_point, e.loc);
    wide.set("preferred_element_type", DType::int32);
    const Array acc = astype(bind(e.prim, {qa, L.weight}, wide, e.loc)[0], float32);
    Array correction = L.correction;
    if (e.prim == Prim::conv_general_dilated && !L.pads_zero_point && !correction_fits(correction, acc)) {
      // Another spatial size than calibration's: the border terms for this one.
      Shape ones_shape = ins[0].shape();
      ones_shape[size_t(e.params.get_ints("lhs_spec")[0])] = 1;
      correction = astype(bind(e.prim, {astype(ones(ones_shape), int8), L.weight}, wide, e.loc)[0], float32) *
                   float(L.activation.zero_point);
    }
    Shape along(std::vector<int64_t>(size_t(acc.ndim()), 1));
    along[size_t(L.out_channel_axis)] = acc.shape()[size_t(L.out_channel_axis)];
    if (correction.ndim() == 1) correction = reshape(correction, along);  // one per output channel
    return (acc - correction) * reshape(L.weight_scale * L.activation.scale, along);
  });
  if (out.size() != 1)
    throw ValueError("ValueError: quant::Quantized: the function returns " + std::to_string(out.size()) +
                     " arrays; a quantized function returns one");
  return out[0];
}

int64_t Quantized::parameter_bytes() const {
  int64_t n = 0;
  for (const Array& a : s_->params)
    if (a.valid()) n += int64_t(a.aval().nbytes());
  for (const auto& [k, L] : s_->layers)
    n += int64_t(L.weight.aval().nbytes() + L.weight_scale.aval().nbytes() + L.correction.aval().nbytes());
  return n;
}

std::string Quantized::report() const {
  std::ostringstream os;
  for (const auto& [k, L] : s_->layers)
    os << "layer " << k << " " << prim_name(L.prim) << ": int8 x int8 -> int32, weight "
       << L.weight.aval().str() << " per channel, activation scale " << L.activation.scale << " zero point "
       << L.activation.zero_point << "\n";
  for (const std::string& n : s_->notes) os << n << "\n";
  return os.str();
}

}  // namespace fluxion::quant
