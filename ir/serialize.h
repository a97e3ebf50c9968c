// A Program with its constants as one stable text: the program's text form (ir/printer.cpp,
// docs/ir.md) followed by each constant's type and bytes in hex. deserialize reads it back, so a
// traced (or exported) program can be stored and compiled later, in another process:
//
//   fluxion-program 1
//   { lambda a:f32[2] ; b:f32[2]. let ... in (c) }
//   consts 1
//   f32[2] 0000803f00000040
//
// Debug callbacks name host functions of the process that traced them; serialize refuses them.
#pragma once
#include <string>
#include <string_view>

#include "ir/program.h"

namespace fluxion {

/// The text above. A ValueError if a constant is not concrete or the program has a debug callback.
std::string serialize(const Program& p);
/// The program back, with its constants. ParseError on malformed text.
Program deserialize(std::string_view text);

}  // namespace fluxion
