#include "api/linalg.h"
