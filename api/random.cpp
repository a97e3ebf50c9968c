#include "api/random.h"
