// The one C++ file of tests/c_env_child.c: strata's implementation, and nothing else.
#define STRATA_IMPLEMENTATION
#include <strata/strata.h>
