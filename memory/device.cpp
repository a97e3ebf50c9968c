#include "memory/device.h"

#include <charconv>
#include <cstdlib>
#include <ostream>
#include <vector>

namespace fluxion {

std::string_view platform_name(Platform p) { return p == Platform::cpu ? "cpu" : "cuda"; }

std::string Device::str() const { return std::string(platform_name(platform)) + ":" + std::to_string(id); }

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

std::optional<Device> parse_device(std::string_view text) {
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  Device d;
  if (name == "cpu") d.platform = Platform::cpu;
  else if (name == "cuda") d.platform = Platform::cuda;
  else return std::nullopt;
  if (colon == std::string_view::npos) return d;
  const std::string_view index = text.substr(colon + 1);
  auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), d.id);
  if (ec != std::errc() || end != index.data() + index.size() || index.empty() || d.id < 0) return std::nullopt;
  return d;
}

namespace {
thread_local std::vector<Device> t_scopes;

Device env_default() {
  static const Device d = [] {
    const char* s = std::getenv("FLUXION_DEFAULT_DEVICE");
    std::optional<Device> parsed = s ? parse_device(s) : std::nullopt;
    return parsed.value_or(Device{});  // a malformed value is reported by runtime's device list
  }();
  return d;
}
}  // namespace

Device default_device() { return t_scopes.empty() ? env_default() : t_scopes.back(); }
void push_default_device(Device d) { t_scopes.push_back(d); }
void pop_default_device() {
  if (!t_scopes.empty()) t_scopes.pop_back();
}

}  // namespace fluxion
