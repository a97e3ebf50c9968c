// Fluxion: composable function transformations for C++ (JAX for C++).
//
//   #include <fluxion.h>
//   namespace fx = fluxion;
//
// This umbrella header pulls in the whole user API and no MLIR, LLVM or CUDA header.
#pragma once

#include "api/creation.h"
#include "api/elementwise.h"
#include "api/indexing.h"
#include "api/linalg.h"
#include "api/linalg_decomp.h"
#include "api/nn.h"
#include "api/operands.h"
#include "api/random.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "api/subscript.h"
#include "ir/array.h"
#include "ir/dtype.h"
#include "ir/error.h"
#include "ir/program.h"
#include "ir/shape.h"
#include "ir/tree.h"
#include "transforms/autodiff.h"
#include "transforms/control_flow.h"
#include "transforms/custom_derivatives.h"
#include "transforms/jacobian.h"
#include "transforms/jit.h"
#include "transforms/make_ir.h"
#include "transforms/vmap_api.h"
