// First of two translation units that include all of strata; test_two_tus.cpp links them.
#include "strata/strata.hpp"
#include "strata/detail/registry.hpp"
#include "two_tus.hpp"

namespace two_tus {

void record_in_a() {
  STRATA_SCOPE("from translation unit a");
  STRATA_SCOPE_DYNAMIC(strata::layer::runtime, std::string("dynamic from a"));
}

const void* registry_in_a() { return &strata::detail::registry::instance(); }
const void* state_in_a() { return &strata::detail::state; }
const strata::site* interned_in_a() { return strata::intern(strata::layer::user, "shared name"); }

}  // namespace two_tus
