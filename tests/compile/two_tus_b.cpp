// Second of two translation units that include all of strata; test_two_tus.cpp links them.
#include "strata/strata.hpp"
#include "strata/detail/registry.hpp"
#include "two_tus.hpp"

namespace two_tus {

void record_in_b() {
  STRATA_SCOPE("from translation unit b");
  STRATA_SCOPE_DYNAMIC(strata::layer::runtime, std::string("dynamic from b"));
}

const void* registry_in_b() { return &strata::detail::registry::instance(); }
const void* state_in_b() { return &strata::detail::state; }
const strata::site* interned_in_b() { return strata::intern(strata::layer::user, "shared name"); }

}  // namespace two_tus
