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

// A state that does not fit the transformation (another optimizer's, or another model's) is a
// ValueError rather than a misread.
void check_state(std::string_view who, const State& state, size_t parts, const Leaves& updates, size_t per_leaf) {
  bool ok = state.size() == parts;
  for (size_t i = 0; ok && i < per_leaf; ++i) ok = state[state.size() - 1 - i].size() == updates.size();
  if (!ok)
    throw ValueError("ValueError: optim::" + std::string(who) + ": the state does not match (expected " +
                     std::to_string(parts) + " parts for " + std::to_string(updates.size()) +
                     " parameters, got " + std::to_string(state.size()) + " parts): was it made by this optimizer's "
                     "init for these parameters?");
}

Leaves zeros_like_all(const Leaves& params, double fill = 0.0) {
  Leaves out;
  out.reserve(params.size());
  for (const Array& p : params) out.push_back(full_like(p, fill));
  return out;
}

Array zero_count() { return scalar(int32_t(0)); }

Array as_dtype_of(const Array& x, const Array& like) { return astype(x, like.dtype()); }

}  // namespace

std::vector<bool> Mask::resolve(const Leaves& params) const {
  if (has_flags_) {
    if (flags_.size() != params.size())
      throw ValueError("ValueError: optim::Mask: " + std::to_string(flags_.size()) + " flags for " +
                       std::to_string(params.size()) + " parameters");
    return flags_;
  }
  std::vector<bool> out(params.size(), true);
  if (pred_)
    for (size_t i = 0; i < params.size(); ++i) out[i] = pred_(params[i]);
  return out;
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
  int parts = 0;
  for (const auto& t : ts) parts += t.parts;
  GradientTransformation out;
  out.parts = parts;
  out.init_leaves = [ts](const Leaves& params) {
    State s;
    for (const auto& t : ts) {
      State part = t.init_leaves(params);
      s.insert(s.end(), part.begin(), part.end());
    }
    return s;
  };
  out.update_leaves = [ts, parts](Leaves& updates, const State& state, const Leaves& params) {
    if (state.size() != size_t(parts))
      throw ValueError("ValueError: optim::chain: the state has " + std::to_string(state.size()) + " parts, the chain " +
                       std::to_string(parts));
    State next;
    size_t at = 0;
    for (const auto& t : ts) {
      State mine(state.begin() + long(at), state.begin() + long(at + size_t(t.parts)));
      State part = t.update_leaves(updates, mine, params);
      next.insert(next.end(), part.begin(), part.end());
      at += size_t(t.parts);
    }
    return next;
  };
  return out;
}

GradientTransformation scale(double factor) {
  return {0, [](const Leaves&) { return State{}; },
          [factor](Leaves& u, const State&, const Leaves&) {
            for (Array& x : u) x = multiply(x, factor);
            return State{};
          }};
}

GradientTransformation scale_by_learning_rate(Schedule learning_rate) {
  return {1, [](const Leaves&) { return State{{zero_count()}}; },
          [learning_rate](Leaves& u, const State& s, const Leaves&) {
            if (s.size() != 1 || s[0].size() != 1)
              throw ValueError("ValueError: optim::scale_by_learning_rate: the state must be one part holding the step "
                               "count: was it made by this optimizer's init?");
            const Array& count = s[0][0];
            Array step = negative(learning_rate(count));
            for (Array& x : u) x = multiply(x, as_dtype_of(step, x));
            return State{{add(count, scalar(int32_t(1)))}};
          }};
}

GradientTransformation trace(double decay, bool nesterov) {
  return {1, [](const Leaves& p) { return State{zeros_like_all(p)}; },
          [=](Leaves& u, const State& s, const Leaves&) {
            check_state("trace", s, 1, u, 1);
            Leaves t(u.size());
            for (size_t i = 0; i < u.size(); ++i) {
              t[i] = add(u[i], multiply(s[0][i], decay));
              u[i] = nesterov ? add(u[i], multiply(t[i], decay)) : t[i];
            }
            return State{t};
          }};
}

GradientTransformation scale_by_adam(double b1, double b2, double eps) {
  return {3, [](const Leaves& p) { return State{{zero_count()}, zeros_like_all(p), zeros_like_all(p)}; },
          [=](Leaves& u, const State& s, const Leaves&) {
            check_state("scale_by_adam", s, 3, u, 2);
            Array count = add(s[0][0], scalar(int32_t(1)));
            Array t = astype(count, float32);
            // Bias corrections 1 / (1 - b^t), one scalar each for the whole step.
            Array c1 = divide(1.f, subtract(1.f, power(scalar(float(b1)), t)));
            Array c2 = divide(1.f, subtract(1.f, power(scalar(float(b2)), t)));
            Leaves mu(u.size()), nu(u.size());
            for (size_t i = 0; i < u.size(); ++i) {
              const Array& g = u[i];
              mu[i] = add(multiply(s[1][i], b1), multiply(g, 1.0 - b1));
              nu[i] = add(multiply(s[2][i], b2), multiply(square(g), 1.0 - b2));
              Array m_hat = multiply(mu[i], as_dtype_of(c1, g)), v_hat = multiply(nu[i], as_dtype_of(c2, g));
              u[i] = divide(m_hat, add(sqrt(v_hat), eps));
            }
            return State{{count}, mu, nu};
          }};
}

GradientTransformation scale_by_rms(double decay, double eps, double initial_scale) {
  return {1, [initial_scale](const Leaves& p) { return State{zeros_like_all(p, initial_scale)}; },
          [=](Leaves& u, const State& s, const Leaves&) {
            check_state("scale_by_rms", s, 1, u, 1);
            Leaves nu(u.size());
            for (size_t i = 0; i < u.size(); ++i) {
              nu[i] = add(multiply(s[0][i], decay), multiply(square(u[i]), 1.0 - decay));
              u[i] = multiply(u[i], rsqrt(add(nu[i], eps)));
            }
            return State{nu};
          }};
}

GradientTransformation scale_by_rss(double initial_accumulator, double eps) {
  return {1, [initial_accumulator](const Leaves& p) { return State{zeros_like_all(p, initial_accumulator)}; },
          [=](Leaves& u, const State& s, const Leaves&) {
            check_state("scale_by_rss", s, 1, u, 1);
            Leaves sos(u.size());
            for (size_t i = 0; i < u.size(); ++i) {
              sos[i] = add(s[0][i], square(u[i]));
              Array inv = where(greater(sos[i], 0.0), rsqrt(add(sos[i], eps)), zeros_like(sos[i]));
              u[i] = multiply(u[i], inv);
            }
            return State{sos};
          }};
}

GradientTransformation scale_by_lion(double b1, double b2) {
  return {1, [](const Leaves& p) { return State{zeros_like_all(p)}; },
          [=](Leaves& u, const State& s, const Leaves&) {
            check_state("scale_by_lion", s, 1, u, 1);
            Leaves mu(u.size());
            for (size_t i = 0; i < u.size(); ++i) {
              const Array g = u[i];
              u[i] = sign(add(multiply(s[0][i], b1), multiply(g, 1.0 - b1)));
              mu[i] = add(multiply(s[0][i], b2), multiply(g, 1.0 - b2));
            }
            return State{mu};
          }};
}

GradientTransformation add_decayed_weights(double weight_decay, Mask mask) {
  return {0, [](const Leaves&) { return State{}; },
          [=](Leaves& u, const State&, const Leaves& params) {
            if (weight_decay == 0) return State{};
            if (params.size() != u.size())
              throw ValueError("ValueError: optim::add_decayed_weights needs the parameters: call "
                               "update(grads, state, params)");
            std::vector<bool> on = mask.resolve(params);
            for (size_t i = 0; i < u.size(); ++i)
              if (on[i]) u[i] = add(u[i], multiply(astype(params[i], u[i].dtype()), weight_decay));
            return State{};
          }};
}

GradientTransformation clip_by_global_norm(double max_norm) {
  return {0, [](const Leaves&) { return State{}; },
          [=](Leaves& u, const State&, const Leaves&) {
            Array norm = global_norm(u);
            // One factor for every leaf: 1 below the threshold, max_norm / norm above it.
            Array factor = where(less(norm, max_norm), scalar(1.f), divide(float(max_norm), norm));
            for (Array& x : u) x = multiply(x, as_dtype_of(factor, x));
            return State{};
          }};
}

GradientTransformation clip(double max_delta) {
  return {0, [](const Leaves&) { return State{}; },
          [=](Leaves& u, const State&, const Leaves&) {
            for (Array& x : u) x = fluxion::clip(x, -max_delta, max_delta);
            return State{};
          }};
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
