// The standard headers the library's files include most, precompiled once for libfluxion
// (meson.build: cpp_pch). Parsing them was about a fifth of a typical file's compile time; only the
// standard library is here, so a file that forgets a project include still fails to compile and
// the floors check (scripts/check_layers.py) still sees every include (docs/architecture.md,
// "How long a fresh build takes"). The files still include what they use.
#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>
