// Params: the small typed map each eqn carries (axes, shapes, dtypes, sub-programs, ...).
// Keys are kept sorted, so two Params with the same entries compare and hash equal whatever order
// they were built in; sub-programs compare and hash structurally.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/dtype.h"

namespace fluxion {

class Program;
using ProgramRef = std::shared_ptr<const Program>;

using IntList = std::vector<int64_t>;
using ProgramList = std::vector<ProgramRef>;
using ParamValue = std::variant<bool, int64_t, double, IntList, DType, std::string, ProgramRef, ProgramList>;

class Params {
 public:
  using Entry = std::pair<std::string, ParamValue>;
  Params() = default;
  Params(std::initializer_list<Entry> entries);

  bool has(std::string_view key) const { return find(key) != nullptr; }
  void set(std::string key, ParamValue value);
  /// Typed access; a missing key or a wrong type is an internal error (std::logic_error).
  template <class T>
  const T& get(std::string_view key) const {
    const ParamValue* v = find(key);
    if (!v || !std::holds_alternative<T>(*v)) missing(key);
    return std::get<T>(*v);
  }
  int64_t get_int(std::string_view key) const { return get<int64_t>(key); }
  const IntList& get_ints(std::string_view key) const { return get<IntList>(key); }
  DType get_dtype(std::string_view key) const { return get<DType>(key); }
  bool get_bool(std::string_view key) const { return get<bool>(key); }

  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  size_t hash() const;
  friend bool operator==(const Params& a, const Params& b);

 private:
  const ParamValue* find(std::string_view key) const;
  [[noreturn]] static void missing(std::string_view key);
  std::vector<Entry> entries_;
};

/// Combines hashes (boost's recipe, 64-bit).
inline size_t hash_combine(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2)); }

}  // namespace fluxion
