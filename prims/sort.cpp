// (filled by the sort family work)
#include "prims/registry.h"

namespace fluxion {

void register_sort_prims(RuleTable&) {}

}  // namespace fluxion
