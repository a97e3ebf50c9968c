// The small JSON subset file headers use (safetensors): objects, arrays, strings, integers, true,
// false, null. Reading only what those headers hold keeps the checkpoint code free of a dependency.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fluxion::json {

struct Value {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  bool boolean = false;
  int64_t number = 0;  // integers only: sizes and offsets
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;
};

/// Parses `text`; a malformed document is an IOError naming `what` (the file) and the offset.
Value parse(std::string_view text, const std::string& what);
/// A JSON string literal (quotes and escapes).
std::string quote(std::string_view s);

}  // namespace fluxion::json
