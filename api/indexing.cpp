#include "api/indexing.h"
