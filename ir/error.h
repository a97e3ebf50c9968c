// The error kinds users catch, and the source location every API call records.
#pragma once
#include <cstdint>
#include <source_location>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ir/shape.h"

namespace fluxion {

/// The user's call site, captured with std::source_location at the API boundary and carried on
/// every eqn, so that errors raised later (in a transform, in compilation) still name it.
struct SourceLoc {
  const char* file = nullptr;
  uint32_t line = 0;
  SourceLoc() = default;
  SourceLoc(const std::source_location& l) : file(l.file_name()), line(l.line()) {}  // NOLINT
  bool known() const { return file != nullptr; }
  /// "file.cpp:12" (the file's base name), or "<unknown>".
  std::string str() const;
};

enum class ErrorKind : uint8_t { Shape, Type, Concretization, TracerLeak, Compile, Device, Parse, Value, FloatingPoint, IO };

/// Base of every user-facing error. `what()` holds the whole message.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};
#define FLUXION_ERROR_KIND(Name, Kind) \
  class Name : public Error {          \
   public:                             \
    explicit Name(const std::string& msg) : Error(ErrorKind::Kind, msg) {} \
  };
FLUXION_ERROR_KIND(ShapeError, Shape)
FLUXION_ERROR_KIND(TypeError, Type)
FLUXION_ERROR_KIND(ConcretizationError, Concretization)
FLUXION_ERROR_KIND(TracerLeakError, TracerLeak)
FLUXION_ERROR_KIND(CompileError, Compile)
FLUXION_ERROR_KIND(DeviceError, Device)
FLUXION_ERROR_KIND(ParseError, Parse)
FLUXION_ERROR_KIND(ValueError, Value)
FLUXION_ERROR_KIND(FloatingPointError, FloatingPoint)  // a NaN or Inf under debug_nans (ir/debug_checks.h)
FLUXION_ERROR_KIND(IOError, IO)  // files: checkpoints, datasets (open, read, write, format)
#undef FLUXION_ERROR_KIND

std::string_view error_kind_name(ErrorKind k);

/// Throws the error class of `kind` with `msg` as its whole message.
[[noreturn]] void throw_error(ErrorKind kind, const std::string& msg);

/// The one formatter of op errors:  "ShapeError: add(f32[3], f32[4]) at main.cpp:12: <detail>".
[[noreturn]] void op_error(ErrorKind kind, std::string_view op, std::span<const AbstractArray> operands,
                           SourceLoc loc, std::string_view detail);

/// Thrown by shape rules, which know neither the user's line nor the operands' names; the caller
/// (bind) turns it into a full op_error.
struct RuleError {
  ErrorKind kind;
  std::string detail;
};
[[noreturn]] inline void rule_error(ErrorKind kind, std::string detail) { throw RuleError{kind, std::move(detail)}; }

}  // namespace fluxion
