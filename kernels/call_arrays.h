// Reading back the arrays of a library call's argument array (lowering/library_arrays.h writes
// them): per array its dtype, rank, dims and address, as the views a reference kernel takes.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/eval_rules.h"

namespace fluxion::runtime {

/// `count` arrays described from `p` on (`p` advances past them). The views point into `avals`:
/// keep the struct where it was returned.
struct CallArrays {
  std::vector<AbstractArray> avals;
  std::vector<View> views;
};
CallArrays read_call_arrays(const int64_t*& p, int64_t count);

}  // namespace fluxion::runtime
