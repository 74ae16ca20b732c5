// tests/compile/two_tus.hpp: what the two translation units of the ODR check export.
#pragma once

#include "strata/record.hpp"

namespace two_tus {
void record_in_a();
const void* registry_in_a();
const void* state_in_a();
const strata::site* interned_in_a();

void record_in_b();
const void* registry_in_b();
const void* state_in_b();
const strata::site* interned_in_b();
}  // namespace two_tus
