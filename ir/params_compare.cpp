// Params' hash and equality (ir/params.h): a sub-program param is hashed and compared by
// its content.
#include "ir/params.h"

#include <cstring>
#include <functional>

#include "ir/program.h"

namespace fluxion {

namespace {
size_t hash_value(const ParamValue& v) {
  size_t h = v.index();
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, IntList>) {
          for (int64_t i : x) h = hash_combine(h, std::hash<int64_t>()(i));
        } else if constexpr (std::is_same_v<T, ProgramRef>) {
          h = hash_combine(h, x ? x->hash() : 0);
        } else if constexpr (std::is_same_v<T, ProgramList>) {
          for (const ProgramRef& p : x) h = hash_combine(h, p ? p->hash() : 0);
        } else if constexpr (std::is_same_v<T, DType>) {
          h = hash_combine(h, size_t(x));
        } else {
          h = hash_combine(h, std::hash<T>()(x));
        }
      },
      v);
  return h;
}

bool programs_equal(const ProgramRef& a, const ProgramRef& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

bool values_equal(const ParamValue& a, const ParamValue& b) {
  if (a.index() != b.index()) return false;
  if (auto* pa = std::get_if<ProgramRef>(&a)) return programs_equal(*pa, std::get<ProgramRef>(b));
  if (auto* la = std::get_if<ProgramList>(&a)) {
    const ProgramList& lb = std::get<ProgramList>(b);
    if (la->size() != lb.size()) return false;
    for (size_t i = 0; i < la->size(); ++i)
      if (!programs_equal((*la)[i], lb[i])) return false;
    return true;
  }
  if (auto* da = std::get_if<double>(&a)) {  // bitwise, so that NaN equals itself (as Literal does)
    double db = std::get<double>(b);
    return std::memcmp(da, &db, sizeof(double)) == 0;
  }
  return a == b;
}
}  // namespace

size_t Params::hash() const {
  size_t h = entries_.size();
  for (const Entry& e : entries_) h = hash_combine(hash_combine(h, std::hash<std::string>()(e.first)), hash_value(e.second));
  return h;
}

bool operator==(const Params& a, const Params& b) {
  if (a.entries_.size() != b.entries_.size()) return false;
  for (size_t i = 0; i < a.entries_.size(); ++i)
    if (a.entries_[i].first != b.entries_[i].first || !values_equal(a.entries_[i].second, b.entries_[i].second))
      return false;
  return true;
}

}  // namespace fluxion
