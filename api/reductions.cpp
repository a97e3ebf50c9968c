#include "api/reductions.h"
