// (filled by the random family work)
#include "prims/registry.h"

namespace fluxion {

void register_random_prims(RuleTable&) {}

}  // namespace fluxion
