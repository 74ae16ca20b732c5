// examples/strata_implementation.cpp: strata's implementation, in a file of its own, as an
// engine of many files would have it. Every other file includes only the headers it uses
// (<strata/strata.hpp> to record, <strata/profiler.hpp> to run a session); this is the one file
// that defines STRATA_IMPLEMENTATION. The build compiles it once and links it into the examples,
// the benchmarks, strata-report and the tests; a single-file program (examples/quickstart.cpp)
// defines STRATA_IMPLEMENTATION itself instead.
#define STRATA_IMPLEMENTATION
#include "strata/profiler.hpp"
