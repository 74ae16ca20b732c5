// strata's implementation, compiled once per build and linked into every test program, as the
// one file of a program that defines STRATA_IMPLEMENTATION would be. Built a second time with
// STRATA_ENABLED=0 for the compiled-out programs.
#include "strata/implementation.hpp"
