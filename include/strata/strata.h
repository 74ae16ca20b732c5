/* strata/strata.h: strata's C API, for C11 engines and kernels.
 *
 *   strata_push("decode");  ...  strata_pop();        nested ranges on the calling thread
 *
 * Header-only in the stb style: exactly one C++ file of the program defines
 * STRATA_IMPLEMENTATION before including this header (or <strata/profiler.hpp>), which compiles
 * strata's implementation (C++20) into that file:
 *
 *   // strata_impl.cpp
 *   #define STRATA_IMPLEMENTATION
 *   #include <strata/strata.h>
 *
 * Names: a push's name is interned by its text, so it need not be a literal nor outlive the
 * call; a name at a new address costs one look-up the first time it is seen there.
 * Unbalanced calls: a pop with no open range is ignored (and said once on stderr); ranges still
 * open when the session stops are not recorded (as C++ scopes still open at stop()); nesting
 * deeper than 256 ranges on a thread records the outer 256 and keeps the pairs matched.
 * Compiled out: with STRATA_ENABLED defined to 0 every call below is an empty inline function.
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#ifdef __cplusplus
extern "C" {
#endif

/** Where in the stack a range comes from (as strata::layer). */
typedef enum strata_layer {
  STRATA_LAYER_FRAMEWORK = 0, /**< op dispatch */
  STRATA_LAYER_RUNTIME = 1,   /**< submit, load, execute, copies */
  STRATA_LAYER_DEVICE = 2,    /**< device work */
  STRATA_LAYER_USER = 3       /**< the application's own ranges (strata_push) */
} strata_layer;

/** What strata_start and strata_stop_and_export return; a message is on stderr. */
enum strata_status {
  STRATA_OK = 0,
  STRATA_ERROR_RUNNING = 1,     /**< a session is already running */
  STRATA_ERROR_CONFIG = 2,      /**< bad argument or output directory */
  STRATA_ERROR_NOT_RUNNING = 3, /**< strata_stop_and_export without strata_start */
  STRATA_ERROR_EXPORT = 4,      /**< the trace could not be written */
  STRATA_ERROR_INTERNAL = 5     /**< anything else (out of memory) */
};

#if !defined(STRATA_ENABLED) || STRATA_ENABLED

/** Opens a range named `name` on the calling thread, user layer; closed by strata_pop(). */
void strata_push(const char* name);
/** Opens a range of `layer`. */
void strata_push_layer(strata_layer layer, const char* name);
/** Closes the calling thread's innermost open range. */
void strata_pop(void);
/** Records a point in time on the user layer. */
void strata_instant(const char* name);
/** Records a sample of the counter `name` (a Chrome counter track). */
void strata_counter(const char* name, double value);
/** Names the calling thread in traces. */
void strata_set_thread_name(const char* name);
/** Marks a step boundary (one iteration of the engine's loop) for the running session. */
void strata_step(void);
/** Starts a session recording every layer, writing into `output_dir` (created if missing). */
int strata_start(const char* output_dir);
/** Stops the session and writes output_dir/trace.json; one line on stderr says what. */
int strata_stop_and_export(void);

#else /* compiled out */

static inline void strata_push(const char* name) { (void)name; }
static inline void strata_push_layer(strata_layer layer, const char* name) { (void)layer; (void)name; }
static inline void strata_pop(void) {}
static inline void strata_instant(const char* name) { (void)name; }
static inline void strata_counter(const char* name, double value) { (void)name; (void)value; }
static inline void strata_set_thread_name(const char* name) { (void)name; }
static inline void strata_step(void) {}
static inline int strata_start(const char* output_dir) { (void)output_dir; return STRATA_OK; }
static inline int strata_stop_and_export(void) { return STRATA_OK; }

#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#if !defined(STRATA_ENABLED) || STRATA_ENABLED
#include "strata/core/link_check.h" /* names STRATA_IMPLEMENTATION when the linker misses it */
#endif

#if defined(STRATA_IMPLEMENTATION)
#if defined(__cplusplus)
#include "strata/implementation.hpp"
#else
#error "define STRATA_IMPLEMENTATION in a C++ file: strata's implementation is C++20"
#endif
#endif

#endif /* STRATA_STRATA_H */
