#include "train/optim.h"

#include <cmath>
#include <string>

#include "api/creation.h"
#include "api/elementwise.h"
#include "api/operands.h"
#include "api/reductions.h"
#include "ir/error.h"

namespace fluxion::optim {

namespace {

[[noreturn]] void state_mismatch(const std::string& detail) {
  throw ValueError("ValueError: optim: the state does not match this optimizer and these parameters (" + detail +
                   "): was it made by this optimizer's init for these parameters?");
}

Leaves full_like_all(const Leaves& params, double fill = 0.0) {
  Leaves out;
  out.reserve(params.size());
  for (const Array& p : params) out.push_back(full_like(p, fill));
  return out;
}

Array zero_count() { return scalar(int32_t(0)); }
Array next_count(const Array& count) { return add(count, scalar(int32_t(1))); }
Array as_dtype_of(const Array& x, const Array& like) { return astype(x, like.dtype()); }

// A stage with no state and nothing shared: a function of each leaf's update (and parameter).
Stage stateless(std::function<void(Array& update, const Array& param)> f) {
  return Stage{0, 0, false, [](const Leaves&) { return State{}; },
               [](const Leaves&, const Leaves&) { return std::pair<Leaves, Leaves>{}; },
               [f](Array& u, const Leaves&, const Array& p, const Leaves&, size_t, size_t) {
                 f(u, p);
                 return Leaves{};
               }};
}

GradientTransformation one(Stage s) { return GradientTransformation{{std::move(s)}}; }

}  // namespace

int GradientTransformation::parts() const {
  int n = 0;
  for (const Stage& s : stages) n += s.scalar_parts + s.leaf_parts;
  return n;
}

State GradientTransformation::init_leaves(const Leaves& params) const {
  State out;
  for (const Stage& s : stages) {
    State part = s.init(params);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

State GradientTransformation::update_leaves(Leaves& updates, const State& state, const Leaves& params,
                                            Leaves* new_params) const {
  const size_t n = updates.size();
  if (state.size() != size_t(parts()))
    state_mismatch(std::to_string(state.size()) + " parts, expected " + std::to_string(parts()));
  if (!params.empty() && params.size() != n)
    state_mismatch(std::to_string(params.size()) + " parameters for " + std::to_string(n) + " updates");
  std::vector<size_t> offset;  // where each stage's parts start
  for (size_t at = 0; const Stage& s : stages) {
    for (int k = 0; k < s.scalar_parts + s.leaf_parts; ++k)
      if (state[at + size_t(k)].size() != (k < s.scalar_parts ? 1 : n))
        state_mismatch("part " + std::to_string(at + size_t(k)) + " holds " + std::to_string(state[at + size_t(k)].size()) +
                       " arrays for " + std::to_string(n) + " parameters");
    offset.push_back(at);
    at += size_t(s.scalar_parts + s.leaf_parts);
  }
  State next(state.size());
  for (size_t at = 0; at < state.size(); ++at) next[at].resize(state[at].size());
  if (new_params) new_params->assign(n, Array());
  // Segments of stages run leaf by leaf; a global stage starts a new segment.
  for (size_t begin = 0; begin < stages.size();) {
    size_t end = begin + 1;
    while (end < stages.size() && !stages[end].global) ++end;
    std::vector<Leaves> shared(end - begin);
    for (size_t s = begin; s < end; ++s) {
      const Stage& st = stages[s];
      Leaves scalars;
      for (int k = 0; k < st.scalar_parts; ++k) scalars.push_back(state[offset[s] + size_t(k)][0]);
      auto [values, new_scalars] = st.prepare(scalars, updates);
      shared[s - begin] = std::move(values);
      for (int k = 0; k < st.scalar_parts; ++k) next[offset[s] + size_t(k)][0] = new_scalars.at(size_t(k));
    }
    for (size_t i = 0; i < n; ++i) {
      const Array param = params.empty() ? Array() : params[i];
      for (size_t s = begin; s < end; ++s) {
        const Stage& st = stages[s];
        const size_t first = offset[s] + size_t(st.scalar_parts);
        Leaves leaf_state;
        for (int k = 0; k < st.leaf_parts; ++k) leaf_state.push_back(state[first + size_t(k)][i]);
        Leaves out = st.leaf(updates[i], leaf_state, param, shared[s - begin], i, n);
        for (int k = 0; k < st.leaf_parts; ++k) next[first + size_t(k)][i] = out.at(size_t(k));
      }
      if (new_params && end == stages.size()) (*new_params)[i] = apply_update(param, updates[i]);
    }
    begin = end;
  }
  return next;
}

bool Mask::selects(size_t index, size_t count, const Array& param) const {
  if (has_flags_) {
    if (flags_.size() != count)
      throw ValueError("ValueError: optim::Mask: " + std::to_string(flags_.size()) + " flags for " +
                       std::to_string(count) + " parameters");
    return flags_[index];
  }
  return !pred_ || pred_(param);
}

Mask matrices_only() {
  return Mask([](const Array& p) { return p.ndim() >= 2; });
}

Array apply_update(const Array& param, const Array& update) { return add(param, astype(update, param.dtype())); }

Array global_norm(const Leaves& leaves) {
  Array total = scalar(0.f);
  for (const Array& l : leaves) total = add(total, sum(square(astype(l, float32))));
  return sqrt(total);
}

GradientTransformation chain(std::vector<GradientTransformation> ts) {
  GradientTransformation out;
  for (auto& t : ts) out.stages.insert(out.stages.end(), t.stages.begin(), t.stages.end());
  return out;
}

GradientTransformation scale(double factor) {
  return one(stateless([factor](Array& u, const Array&) { u = multiply(u, factor); }));
}

GradientTransformation scale_by_learning_rate(Schedule learning_rate) {
  return one(Stage{1, 0, false, [](const Leaves&) { return State{{zero_count()}}; },
                   [learning_rate](const Leaves& count, const Leaves&) {
                     return std::pair{Leaves{negative(learning_rate(count[0]))}, Leaves{next_count(count[0])}};
                   },
                   [](Array& u, const Leaves&, const Array&, const Leaves& step, size_t, size_t) {
                     u = multiply(u, as_dtype_of(step[0], u));
                     return Leaves{};
                   }});
}

GradientTransformation trace(double decay, bool nesterov) {
  return one(Stage{0, 1, false, [](const Leaves& p) { return State{full_like_all(p)}; },
                   [](const Leaves&, const Leaves&) { return std::pair<Leaves, Leaves>{}; },
                   [=](Array& u, const Leaves& t, const Array&, const Leaves&, size_t, size_t) {
                     Array next = add(u, multiply(t[0], decay));
                     u = nesterov ? add(u, multiply(next, decay)) : next;
                     return Leaves{next};
                   }});
}

GradientTransformation scale_by_adam(double b1, double b2, double eps) {
  return one(Stage{1, 2, false,
                   [](const Leaves& p) { return State{{zero_count()}, full_like_all(p), full_like_all(p)}; },
                   [=](const Leaves& count, const Leaves&) {
                     // Bias corrections 1 / (1 - b^t), one scalar each for the whole step.
                     Array c = next_count(count[0]), t = astype(c, float32);
                     Array c1 = divide(1.f, subtract(1.f, power(scalar(float(b1)), t)));
                     Array c2 = divide(1.f, subtract(1.f, power(scalar(float(b2)), t)));
                     return std::pair{Leaves{c1, c2}, Leaves{c}};
                   },
                   [=](Array& g, const Leaves& mv, const Array&, const Leaves& c, size_t, size_t) {
                     Array mu = add(multiply(mv[0], b1), multiply(g, 1.0 - b1));
                     Array nu = add(multiply(mv[1], b2), multiply(square(g), 1.0 - b2));
                     Array m_hat = multiply(mu, as_dtype_of(c[0], g)), v_hat = multiply(nu, as_dtype_of(c[1], g));
                     g = divide(m_hat, add(sqrt(v_hat), eps));
                     return Leaves{mu, nu};
                   }});
}

GradientTransformation scale_by_rms(double decay, double eps, double initial_scale) {
  return one(Stage{0, 1, false, [initial_scale](const Leaves& p) { return State{full_like_all(p, initial_scale)}; },
                   [](const Leaves&, const Leaves&) { return std::pair<Leaves, Leaves>{}; },
                   [=](Array& g, const Leaves& s, const Array&, const Leaves&, size_t, size_t) {
                     Array nu = add(multiply(s[0], decay), multiply(square(g), 1.0 - decay));
                     g = multiply(g, rsqrt(add(nu, eps)));
                     return Leaves{nu};
                   }});
}

GradientTransformation scale_by_rss(double initial_accumulator, double eps) {
  return one(Stage{0, 1, false,
                   [initial_accumulator](const Leaves& p) { return State{full_like_all(p, initial_accumulator)}; },
                   [](const Leaves&, const Leaves&) { return std::pair<Leaves, Leaves>{}; },
                   [=](Array& g, const Leaves& s, const Array&, const Leaves&, size_t, size_t) {
                     Array sos = add(s[0], square(g));
                     g = multiply(g, where(greater(sos, 0.0), rsqrt(add(sos, eps)), zeros_like(sos)));
                     return Leaves{sos};
                   }});
}

GradientTransformation scale_by_lion(double b1, double b2) {
  return one(Stage{0, 1, false, [](const Leaves& p) { return State{full_like_all(p)}; },
                   [](const Leaves&, const Leaves&) { return std::pair<Leaves, Leaves>{}; },
                   [=](Array& g, const Leaves& m, const Array&, const Leaves&, size_t, size_t) {
                     Array mu = add(multiply(m[0], b2), multiply(g, 1.0 - b2));
                     g = sign(add(multiply(m[0], b1), multiply(g, 1.0 - b1)));
                     return Leaves{mu};
                   }});
}

GradientTransformation add_decayed_weights(double weight_decay, Mask mask) {
  return one(Stage{0, 0, false, [](const Leaves&) { return State{}; },
                   [](const Leaves&, const Leaves&) { return std::pair<Leaves, Leaves>{}; },
                   [=](Array& u, const Leaves&, const Array& p, const Leaves&, size_t index, size_t count) {
                     if (weight_decay == 0) return Leaves{};
                     if (!p.valid())
                       throw ValueError("ValueError: optim::add_decayed_weights needs the parameters: call "
                                        "update(grads, state, params)");
                     if (mask.selects(index, count, p)) u = add(u, multiply(astype(p, u.dtype()), weight_decay));
                     return Leaves{};
                   }});
}

GradientTransformation clip_by_global_norm(double max_norm) {
  return one(Stage{0, 0, true, [](const Leaves&) { return State{}; },
                   [=](const Leaves&, const Leaves& updates) {
                     // One factor for every leaf: 1 below the threshold, max_norm / norm above it.
                     Array norm = global_norm(updates);
                     Array factor = where(less(norm, max_norm), scalar(1.f), divide(float(max_norm), norm));
                     return std::pair{Leaves{factor}, Leaves{}};
                   },
                   [](Array& u, const Leaves&, const Array&, const Leaves& factor, size_t, size_t) {
                     u = multiply(u, as_dtype_of(factor[0], u));
                     return Leaves{};
                   }});
}

GradientTransformation clip(double max_delta) {
  return one(stateless([max_delta](Array& u, const Array&) { u = fluxion::clip(u, -max_delta, max_delta); }));
}

GradientTransformation sgd(Schedule learning_rate, double momentum, bool nesterov) {
  if (momentum == 0) return scale_by_learning_rate(std::move(learning_rate));
  return chain(trace(momentum, nesterov), scale_by_learning_rate(std::move(learning_rate)));
}

GradientTransformation adam(Schedule learning_rate, double b1, double b2, double eps) {
  return chain(scale_by_adam(b1, b2, eps), scale_by_learning_rate(std::move(learning_rate)));
}

GradientTransformation adamw(Schedule learning_rate, double weight_decay, double b1, double b2, double eps, Mask mask) {
  return chain(scale_by_adam(b1, b2, eps), add_decayed_weights(weight_decay, std::move(mask)),
               scale_by_learning_rate(std::move(learning_rate)));
}

GradientTransformation rmsprop(Schedule learning_rate, double decay, double eps, double momentum, bool nesterov) {
  if (momentum == 0) return chain(scale_by_rms(decay, eps), scale_by_learning_rate(std::move(learning_rate)));
  return chain(scale_by_rms(decay, eps), trace(momentum, nesterov), scale_by_learning_rate(std::move(learning_rate)));
}

GradientTransformation adagrad(Schedule learning_rate, double initial_accumulator, double eps) {
  return chain(scale_by_rss(initial_accumulator, eps), scale_by_learning_rate(std::move(learning_rate)));
}

GradientTransformation lion(Schedule learning_rate, double b1, double b2, double weight_decay, Mask mask) {
  return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay, std::move(mask)),
               scale_by_learning_rate(std::move(learning_rate)));
}

}  // namespace fluxion::optim
