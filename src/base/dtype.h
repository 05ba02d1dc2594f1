#pragma once
#include "onyx/dtype.h"
