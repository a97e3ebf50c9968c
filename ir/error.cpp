#include "ir/error.h"

#include <cstring>

namespace fluxion {

std::string SourceLoc::str() const {
  if (!file) return "<unknown>";
  const char* base = std::strrchr(file, '/');
  return std::string(base ? base + 1 : file) + ":" + std::to_string(line);
}

std::string_view error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::Shape: return "ShapeError";
    case ErrorKind::Type: return "TypeError";
    case ErrorKind::Concretization: return "ConcretizationError";
    case ErrorKind::TracerLeak: return "TracerLeakError";
    case ErrorKind::Compile: return "CompileError";
    case ErrorKind::Device: return "DeviceError";
    case ErrorKind::Parse: return "ParseError";
    case ErrorKind::Value: return "ValueError";
    case ErrorKind::FloatingPoint: return "FloatingPointError";
    case ErrorKind::IO: return "IOError";
  }
  return "Error";
}

void throw_error(ErrorKind kind, const std::string& msg) {
  switch (kind) {
    case ErrorKind::Shape: throw ShapeError(msg);
    case ErrorKind::Type: throw TypeError(msg);
    case ErrorKind::Concretization: throw ConcretizationError(msg);
    case ErrorKind::TracerLeak: throw TracerLeakError(msg);
    case ErrorKind::Compile: throw CompileError(msg);
    case ErrorKind::Device: throw DeviceError(msg);
    case ErrorKind::Parse: throw ParseError(msg);
    case ErrorKind::Value: throw ValueError(msg);
    case ErrorKind::FloatingPoint: throw FloatingPointError(msg);
    case ErrorKind::IO: throw IOError(msg);
  }
  throw Error(kind, msg);
}

void op_error(ErrorKind kind, std::string_view op, std::span<const AbstractArray> operands, SourceLoc loc,
              std::string_view detail) {
  std::string msg(error_kind_name(kind));
  msg += ": ";
  msg += op;
  msg += '(';
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i) msg += ", ";
    msg += operands[i].str();
  }
  msg += ") at ";
  msg += loc.str();
  msg += ": ";
  msg += detail;
  throw_error(kind, msg);
}

}  // namespace fluxion
