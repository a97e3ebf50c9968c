// A program as a TensorFlow GraphDef, for TensorBoard's Graphs tab (train/summary.h, writer::graph).
#pragma once
#include <string>

#include "ir/program.h"

namespace fluxion::summary {

/// The serialized GraphDef: a node per input ("in_<k>"), constant ("const_<k>"), equation
/// ("<prim>_<k>"), inline literal ("lit_<k>_<j>") and output ("out_<k>"); a node's inputs are the
/// nodes of its operands ("<node>:<j>" for an equation's output j > 0). Sub-programs are under the
/// name scope "<prim>_<k>_<param>/" and their inputs list the equation that holds them. Every node
/// carries its output types as the string attribute "type".
std::string graph_def(const Program& program);

}  // namespace fluxion::summary
