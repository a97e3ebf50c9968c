#include "api/shape_ops.h"
