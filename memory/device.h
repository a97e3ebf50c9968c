// Which device a buffer lives on. The identity is a value (platform + index), kept at the memory
// floor because every buffer carries one: eager ops read their operands' devices to decide where
// the result goes (ir/trace.cpp), and a later GPU allocator hands out buffers whose bytes the host
// cannot read (MemoryKind::device). What a device *does* -- its worker thread or stream, its
// compile target -- lives in runtime/devices.h.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

namespace fluxion {

enum class Platform : uint8_t { cpu, cuda };

/// Where a buffer's bytes are addressable. CPU devices share host memory (a CPU device is a
/// worker, not a memory); a GPU's buffers are in device memory and are copied to the host to be
/// read (printing, to_vector).
enum class MemoryKind : uint8_t { host, device };

/// A device: its platform and its index among that platform's devices (global across processes
/// after fx::distributed::initialize). Prints as "cpu:0".
struct Device {
  Platform platform = Platform::cpu;
  int id = 0;
  std::string str() const;
  MemoryKind memory_kind() const { return platform == Platform::cpu ? MemoryKind::host : MemoryKind::device; }
  friend bool operator==(const Device&, const Device&) = default;
};
std::ostream& operator<<(std::ostream& os, const Device& d);

std::string_view platform_name(Platform p);
/// "cpu:1" (or "cpu", meaning index 0) as a Device; nullopt when the text is not of that form.
std::optional<Device> parse_device(std::string_view text);

/// The device that new arrays, and eager ops none of whose operands is committed to a device, go
/// to: the innermost default_device_scope of this thread, else FLUXION_DEFAULT_DEVICE, else cpu:0.
/// (runtime/devices.cpp checks that the device exists when the scope is opened or the device list
/// is first read.)
Device default_device();
/// The thread's scoped override (runtime's default_device_scope pushes and pops it).
void push_default_device(Device d);
void pop_default_device();

}  // namespace fluxion
