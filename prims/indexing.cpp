// (filled by the indexing family work)
#include "prims/registry.h"

namespace fluxion {

void register_indexing_prims(RuleTable&) {}

}  // namespace fluxion
