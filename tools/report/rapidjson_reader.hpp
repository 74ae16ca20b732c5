// tools/report/rapidjson_reader.hpp: RapidJSON's SAX reader (rapidjson-dev), included the
// one way strata includes it.
//
// RapidJSON 1.1.0 (Debian 12's) grows its internal stack with `stackTop_ + n > stackEnd_`
// while the stack is still null, which clang's UndefinedBehaviorSanitizer reports as a pointer
// overflow on the first string of every parse; later RapidJSON compares sizes instead. The check
// is turned off for RapidJSON's own functions only, so sanitized builds of strata (the fuzzers,
// the tests) still check strata's code.
#pragma once

#if defined(__clang__)
#pragma clang attribute push(__attribute__((no_sanitize("pointer-overflow"))), apply_to = function)
#endif
#include <rapidjson/encodings.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stream.h>
#if defined(__clang__)
#pragma clang attribute pop
#endif
