#pragma once
// What the kernel families' builders share: the registry's declarations and the reducing
// families' params and partition checks.

#include "kernels/families/reducing_params.hpp"
#include "kernels/spec/registry.hpp"
