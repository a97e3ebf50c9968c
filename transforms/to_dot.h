// fx::to_dot: a program as a Graphviz graph, for looking at rather than reading.
//
//   fx::Program p = fx::make_ir(f)(x);
//   std::ofstream("f.dot") << fx::to_dot(p);     // then: dot -Tsvg f.dot -o f.svg
//
// One box per equation, labelled with its primitive, its parameters that are not programs, and its
// output types; an edge from each value to every equation that reads it, labelled with the value's
// type. The program's inputs (and closed-over constants) are green ellipses at the top, its outputs
// red ellipses at the bottom; an inline literal operand is a small grey node of its own. Each
// sub-program (a cond's branches, a scan's or while's body and condition, a custom_jvp's rule, a
// jit or checkpoint body) is drawn inside a dashed cluster beside the equation that holds it, with
// its own inputs and outputs, and a dotted edge from that equation to the cluster.
#pragma once
#include <string>

#include "ir/program.h"

namespace fluxion {

/// The program as a Graphviz dot digraph named `name` (an identifier or any text; it is quoted).
std::string to_dot(const Program& program, const std::string& name = "program");

}  // namespace fluxion
