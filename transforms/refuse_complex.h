// The check both exporters (transforms/export.cpp, transforms/onnx.cpp) make before writing: their
// formats declare every value by a real element type, so a program with complex values is refused
// rather than written wrong.
#pragma once

#include <string_view>

#include "ir/program.h"

namespace fluxion {

/// Throws CompileError "<who>: argument i is c64[...]; <why>" for a complex argument, else an
/// op_error (the op, its operand types, the user's line) for the first equation -- sub-programs
/// included -- that reads or makes a complex value.
void refuse_complex(const Program& p, std::string_view who, std::string_view why);

}  // namespace fluxion
