#include "ir/spmd.h"

#include <utility>
#include <vector>

namespace fluxion {

int64_t axis_key(std::string_view axis_name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : axis_name) h = (h ^ c) * 1099511628211ull;
  return int64_t(h >> 1);  // non-negative: it prints as a plain integer param
}

int64_t perm_key(const std::vector<int64_t>& pairs) {
  std::string text;
  for (int64_t v : pairs) text += std::to_string(v) + ",";
  return axis_key(text);
}

namespace {
thread_local std::vector<std::pair<int64_t, Communicator*>> t_bound;
thread_local std::optional<std::string> t_failure;
}  // namespace

AxisBinding::AxisBinding(int64_t key, Communicator* comm) { t_bound.emplace_back(key, comm); }
AxisBinding::~AxisBinding() { t_bound.pop_back(); }

Communicator* bound_communicator(int64_t key) {
  for (auto it = t_bound.rbegin(); it != t_bound.rend(); ++it)
    if (it->first == key) return it->second;
  return nullptr;
}

void record_collective_failure(std::string why) {
  if (!t_failure) t_failure = std::move(why);
}
std::optional<std::string> take_collective_failure() { return std::exchange(t_failure, std::nullopt); }

}  // namespace fluxion
