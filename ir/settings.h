// Fluxion's environment settings, read one way wherever they are read. One table (settings.cpp)
// names every FLUXION_* variable, the values it takes and what unsetting it gives; a value outside
// them is a ValueError naming the setting, the value and what it takes -- never silently the
// default. docs/settings.md is the user's copy of the table (scripts/check_settings.py keeps the
// two, and the getenv calls of the sources, in step).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fluxion {

enum class SettingKind {
  count,        // an integer >= 1
  nonnegative,  // an integer >= 0
  level,        // an integer in the range `values` spells "lo..hi"
  seconds,      // a positive number
  choice,       // one of `values`, separated by '|'
  toggle,       // 1/0, true/false, on/off
  text,         // checked where it is used (a CPU name, a device name, an LLVM pass list)
  path,         // a file or directory
  tool,         // read by the tests, scripts or notebooks, not by the library
};

struct Setting {
  const char* name;
  SettingKind kind;
  const char* values;    // choice: "a|b|c"; level: "lo..hi"; else ""
  const char* if_unset;  // what leaving it unset gives, as "unset it <if_unset>" reads
  const char* what;      // what it does, one line
};

/// Every setting Fluxion knows, in the order of docs/settings.md.
std::span<const Setting> settings();

/// The table's entry for `name`, or nullptr.
const Setting* find_setting(std::string_view name);

/// The value of setting `name` when it is set (and not empty), checked against its table entry:
/// std::nullopt when unset, ValueError when the value is not one the setting takes.
std::optional<std::string> setting_value(std::string_view name);

/// A choice setting's value (one of its `values`), or std::nullopt when unset.
std::optional<std::string> choice_setting(std::string_view name);

/// A toggle's value, or `if_unset`.
bool toggle_setting(std::string_view name, bool if_unset);

/// A count, nonnegative or level setting's value, or `if_unset`.
int64_t integer_setting(std::string_view name, int64_t if_unset);

/// A seconds setting's value, or `if_unset`.
double seconds_setting(std::string_view name, double if_unset);

/// The known setting closest to an unknown name (a near miss: a typo), or nullptr.
const Setting* closest_setting(std::string_view name);

/// Checks every FLUXION_* variable of the environment: a known setting's value against the table
/// (ValueError), an unknown name with a one-time warning on stderr naming the closest known one.
/// Called where a device is first made, at every compile and (check_settings_once) at the first
/// eager op, so that a kernel running in a library call (where an exception cannot cross) never
/// meets an unchecked value.
void check_settings();

/// check_settings() until it first passes, then nothing (one atomic load): what every eager op
/// calls, so that a program that never compiles nor makes a device meets a bad value too.
void check_settings_once();

/// FLUXION_NUM_THREADS, or the number of cores when it is unset; ValueError when it is not a
/// positive integer.
int thread_setting();

/// FLUXION_CPU_DEVICES: the CPU devices of each process (default 1); ValueError when it is not a
/// positive integer.
int cpu_devices_setting();

}  // namespace fluxion
