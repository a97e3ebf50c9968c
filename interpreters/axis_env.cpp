#include "interpreters/axis_env.h"

#include <utility>

namespace fluxion {

namespace {
thread_local std::vector<std::pair<std::string, int64_t>> t_axes;
thread_local std::string t_batched;
}  // namespace

AxisEnvScope::AxisEnvScope(std::string name, int64_t size) { t_axes.emplace_back(std::move(name), size); }
AxisEnvScope::~AxisEnvScope() { t_axes.pop_back(); }

std::optional<int64_t> bound_axis_size(std::string_view name) {
  for (auto it = t_axes.rbegin(); it != t_axes.rend(); ++it)
    if (it->first == name) return it->second;
  return std::nullopt;
}

std::vector<std::string> bound_axis_names() {
  std::vector<std::string> names;
  for (const auto& a : t_axes) names.push_back(a.first);
  return names;
}

BatchedAxisScope::BatchedAxisScope(std::string name) : saved_(std::exchange(t_batched, std::move(name))) {}
BatchedAxisScope::~BatchedAxisScope() { t_batched = std::move(saved_); }
const std::string& batched_axis_name() { return t_batched; }

bool over_batched_axis(const Params& params) {
  return !t_batched.empty() && params.has("axis_name") && params.get<std::string>("axis_name") == t_batched;
}
bool over_batched_axis(const Eqn& e) { return over_batched_axis(e.params); }

}  // namespace fluxion
