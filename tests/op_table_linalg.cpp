#include "op_table.h"

namespace optable {

void add_linalg_ops(std::vector<OpInfo>&) {}

}  // namespace optable
