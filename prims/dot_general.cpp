// (filled by the dot_general family work)
#include "prims/registry.h"

namespace fluxion {

void register_dot_general_prims(RuleTable&) {}

}  // namespace fluxion
