// examples/c_engine_strata.cpp: the one C++ file of the C engine: strata's implementation
// (C API included) is compiled here; c_engine.c only includes <strata/strata.h>.
#define STRATA_IMPLEMENTATION
#include <strata/strata.h>
