#include "api/nn.h"
