#pragma once
#include "api/elementwise.h"
