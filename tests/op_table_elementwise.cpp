#include "op_table.h"
namespace optable {
void add_elementwise_ops(std::vector<OpInfo>&) {}
}  // namespace optable
