#include "api/debug.h"

#include <atomic>
#include <iostream>
#include <sstream>

#include "ir/trace.h"

namespace fluxion::debug {

namespace {
std::atomic<std::ostream*> g_output{nullptr};
}

void set_output(std::ostream* os) { g_output.store(os); }

std::string format_arrays(std::string_view format, std::span<const Array> args, SourceLoc loc) {
  std::ostringstream out;
  size_t next = 0;
  auto fail = [&](const std::string& why) {
    throw ValueError("ValueError: debug::print at " + loc.str() + ": " + why + " in \"" + std::string(format) + "\"");
  };
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      out << c;
      ++i;
    } else if (c == '{') {
      if (i + 1 >= format.size() || format[i + 1] != '}') fail("'{' not followed by '}' (write '{{' for a brace)");
      if (next >= args.size()) fail("more '{}' than the " + std::to_string(args.size()) + " values given");
      out << args[next++];
      ++i;
    } else if (c == '}') {
      fail("a lone '}' (write '}}' for a brace)");
    } else {
      out << c;
    }
  }
  if (next != args.size())
    fail(std::to_string(args.size()) + " values given for " + std::to_string(next) + " '{}'");
  return out.str();
}

void print_arrays(std::string_view format, std::span<const Array> args, SourceLoc loc) {
  for (const Array& a : args)
    if (!a.valid()) throw ValueError("ValueError: debug::print at " + loc.str() + ": a value is an empty Array handle");
  // A bad format fails now, at the line that wrote it, not later inside compiled code (tracers
  // print as Traced<...>: only the counts matter here).
  if (is_tracing()) format_arrays(format, args, loc);
  std::string text(format);
  DebugCallbackFn fn = [text, loc](std::span<const Array> xs, std::span<const int64_t> index) {
    std::string line;
    if (!index.empty()) {
      line = "[batch ";
      for (size_t i = 0; i < index.size(); ++i) line += (i ? "," : "") + std::to_string(index[i]);
      line += "] ";
    }
    line += format_arrays(text, xs, loc);
    line += '\n';
    std::ostream* os = g_output.load();
    (os ? *os : std::cout) << line << std::flush;
  };
  bind_debug_callback(std::move(fn), args, loc);
}

void check_index_bounds(std::string_view op, std::span<const AbstractArray> operands, const Array& indices,
                        int64_t limit, const std::string& what, SourceLoc loc) {
  std::vector<AbstractArray> types(operands.begin(), operands.end());
  DebugCallbackFn fn = [op = std::string(op), types, limit, what, loc](std::span<const Array> xs,
                                                                      std::span<const int64_t> index) {
    const std::vector<int64_t> v = xs[0].to_vector<int64_t>();
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] >= 0 && v[i] < limit) continue;
      std::string example;
      for (size_t k = 0; k < index.size(); ++k) example += (k ? "," : " (batch ") + std::to_string(index[k]);
      if (!example.empty()) example += ")";
      op_error(ErrorKind::Value, op, types, loc,
               "index " + std::to_string(v[i]) + " (entry " + std::to_string(i) + example + ") is out of bounds for " +
                   what + " (check_bounds is on; without it the index would be clamped)");
    }
  };
  const Array args[] = {indices};
  bind_debug_callback(std::move(fn), args, loc);
}

}  // namespace fluxion::debug
