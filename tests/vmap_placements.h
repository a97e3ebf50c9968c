// Batch placements for vmap tests: every assignment of a batch position to each operand.
#pragma once
#include <vector>

namespace vmap_test {

/// An operand that is not batched.
inline constexpr int kNone = -1;

/// Every assignment of batch positions (kNone or 0..rank) to operands of the given per-example
/// ranks, except all-unmapped; `only_front` operands can be batched only at 0 or not at all.
inline std::vector<std::vector<int>> placements(const std::vector<int>& ranks, const std::vector<bool>& only_front = {}) {
  std::vector<std::vector<int>> out{{}};
  for (size_t i = 0; i < ranks.size(); ++i) {
    std::vector<std::vector<int>> next;
    const int top = (i < only_front.size() && only_front[i]) ? 0 : ranks[i];
    for (const auto& prefix : out)
      for (int a = kNone; a <= top; ++a) {
        auto p = prefix;
        p.push_back(a);
        next.push_back(p);
      }
    out = next;
  }
  std::vector<std::vector<int>> mapped;
  for (const auto& p : out)
    for (int a : p)
      if (a != kNone) {
        mapped.push_back(p);
        break;
      }
  return mapped;
}

}  // namespace vmap_test
