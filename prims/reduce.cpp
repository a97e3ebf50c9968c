// (filled by the reduce family work)
#include "prims/registry.h"

namespace fluxion {

void register_reduce_prims(RuleTable&) {}

}  // namespace fluxion
