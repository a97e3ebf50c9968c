// Params' storage: set, find. Their hash and equality, which reach into sub-programs, are
// ir/params_compare.cpp (so the AOT runtime, which decodes params, links no Program).
#include "ir/params.h"

#include <algorithm>
#include <stdexcept>

namespace fluxion {

Params::Params(std::initializer_list<Entry> entries) {
  for (const Entry& e : entries) set(e.first, e.second);
}

void Params::set(std::string key, ParamValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, const std::string& k) { return e.first < k; });
  if (it != entries_.end() && it->first == key)
    it->second = std::move(value);
  else
    entries_.insert(it, Entry{std::move(key), std::move(value)});
}

const ParamValue* Params::find(std::string_view key) const {
  for (const Entry& e : entries_)
    if (e.first == key) return &e.second;
  return nullptr;
}

void Params::missing(std::string_view key) {
  throw std::logic_error("fluxion internal error: param '" + std::string(key) + "' missing or of the wrong type");
}

}  // namespace fluxion
