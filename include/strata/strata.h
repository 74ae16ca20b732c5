/* strata/strata.h: strata's C API, for C11 engines and kernels.
 *
 *   strata_push("decode");  ...  strata_pop();        nested ranges on the calling thread
 *
 * Header-only in the stb style: exactly one C++ file of the program defines
 * STRATA_IMPLEMENTATION before including this header (or <strata/profiler.hpp>), which compiles
 * strata's implementation (C++20, so that file needs -std=c++20) into that file; the program
 * is then linked with g++ (or with gcc plus -lstdc++ -lm -pthread):
 *
 *   // strata_impl.cpp
 *   #define STRATA_IMPLEMENTATION
 *   #include <strata/strata.h>
 *
 *   gcc -std=c11 -Iinclude -c engine.c
 *   g++ -std=c++20 -Iinclude -c strata_impl.cpp
 *   g++ engine.o strata_impl.o -pthread -o engine
 *
 * Names: a push's name is interned by its text, so it need not be a literal nor outlive the
 * call. A name in read-only memory (a string literal) seen before by the thread costs one
 * look-up by address; any other name seen before at the same address costs that and one
 * compare of the text.
 * Unbalanced calls: a pop with no open range is ignored (and said once on stderr); ranges still
 * open when the session stops are not recorded (as C++ scopes still open at stop()); nesting
 * deeper than 256 ranges on a thread records the outer 256 and keeps the pairs matched.
 * Sessions: one records at a time in the process (a C session, a C++ strata::profiler, the
 * environment's STRATA_PROFILE=1 capture or an on-demand capture). The session calls
 * (strata_start* to strata_table) may be called from any thread; concurrent calls take turns.
 * Status: the session calls return a strata_status; every error also prints one line on
 * stderr saying what to do.
 * Compiled out: with STRATA_ENABLED defined to 0 every call below is an empty inline function
 * (the session calls return STRATA_OK, strata_table writes an empty string and returns 0).
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <stddef.h>

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

/** The bit of `layer` in strata_config.layers: STRATA_LAYER_BIT(STRATA_LAYER_USER) | ... */
#define STRATA_LAYER_BIT(layer) (1u << (unsigned)(layer))
/** Every layer (what strata_config.layers = 0 means too). */
#define STRATA_LAYERS_ALL 0xfu

/** The device of a memory event, numbered as torch's c10::DeviceType (as strata::device_type):
 *  the host, or a Neuron device (torch's PrivateUse1). */
typedef enum strata_device_type {
  STRATA_DEVICE_CPU = 0,
  STRATA_DEVICE_NEURON = 20
} strata_device_type;

/** What the session calls return; a message is on stderr for every error. */
enum strata_status {
  STRATA_OK = 0,
  /** Another session records: this C session (call strata_stop first), a C++
   *  strata::profiler, STRATA_PROFILE=1 or an on-demand capture; or, for strata_export and
   *  strata_table, the C session is still recording. */
  STRATA_ERROR_RUNNING = 1,
  STRATA_ERROR_CONFIG = 2,      /**< a bad argument, configuration field or output directory */
  STRATA_ERROR_NOT_RUNNING = 3, /**< strata_stop*, strata_snapshot: no C session is recording */
  STRATA_ERROR_EXPORT = 4,      /**< a trace could not be written (disk full, directory gone) */
  STRATA_ERROR_INTERNAL = 5,    /**< anything else (out of memory) */
  STRATA_ERROR_NO_TRACE = 6     /**< strata_export, strata_table: no C session has stopped yet */
};

/** Which steps a session records, as torch.profiler.schedule: after `skip_first` steps,
 *  cycles of `wait` idle steps, `warmup` steps (nothing recorded) and `active` recorded steps,
 *  `repeat` times (0: forever); `skip_first_wait` non-zero drops the first cycle's wait.
 *  `active` 0 (all zero) is no schedule: everything from start to stop is recorded. */
typedef struct strata_schedule {
  int skip_first;
  int wait;
  int warmup;
  int active;
  int repeat;
  int skip_first_wait;
} strata_schedule;

/** A session's configuration for strata_start_ex. Every field's zero is its default, so
 *  `strata_config c = {0};` (or STRATA_CONFIG_INIT) then setting a few fields is enough. */
typedef struct strata_config {
  /** The trace file strata_stop_and_export and strata_export write by default; its name says
   *  the format: `.json` (Chrome trace JSON), `.pftrace` (Perfetto protobuf), either followed
   *  by `.gz` (gzip-compressed). Its directory (created if missing) also receives window
   *  traces, snapshots, crash dumps and the spill file. NULL or "": "strata-out/trace.json". */
  const char* output;
  /** The layers recorded, STRATA_LAYER_BIT()s or'ed together; 0: all (STRATA_LAYERS_ALL). */
  unsigned layers;
  /** Which strata_step()s are recorded; all zero: no schedule. With a schedule each recorded
   *  step is a `ProfilerStep#N` range, and each window of recorded steps is written when it
   *  ends, in the background, to `trace_step<first>-<last>.json` in the output's directory
   *  (`.1`, `.2`, ... before `.json` if the name exists), as the C++ profiler writes them. */
  strata_schedule schedule;
  /** Non-zero: while recording, a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) writes every
   *  thread's buffered records to `strata-crash-<pid>.dump` in the output's directory
   *  (`strata-report convert` turns it into a trace). 0: off. */
  int crash_dump;
  /** Bytes of records held in memory before further ones are spilled to a file in the output's
   *  directory; at least 65536. 0: 256 MiB. */
  size_t memory_limit;
  /** Bytes of memory made ready at the start of a lossless session (at most memory_limit), so
   *  that recording threads never wait for the kernel to fault fresh pages in; past it, memory
   *  is taken as the session needs it. 0: 256 MiB; STRATA_PREALLOCATE_NONE: none made ready. */
  size_t preallocate;
  /** Non-zero: a flight recorder, each thread keeping exactly its newest `flight_recorder`
   *  records (a power of two, at least 2; 32 bytes each, in 64 KiB blocks) in constant memory.
   *  0: a lossless session. */
  size_t flight_recorder;
  /** Non-zero: record allocations and frees (strata_alloc, strata_free): the tables' memory
   *  columns and the trace's `[memory]` events. 0: off (a memory call costs a branch). */
  int profile_memory;
  /** Non-zero: record the FLOP counts set with strata_set_flops: the tables' FLOPs column and
   *  the trace's `args.flops`. 0: off. */
  int with_flops;
  /** Which rank of a distributed job this process is (torch.distributed's numbering): every
   *  trace then carries Kineto's `distributedInfo` and its process is named `rank R: ...` in a
   *  `.pftrace`. `world_size` 0: not set here; the environment a launcher sets decides
   *  (STRATA_RANK, STRATA_WORLD_SIZE, STRATA_LOCAL_RANK, STRATA_BACKEND, then torchrun's RANK,
   *  WORLD_SIZE, LOCAL_RANK), as for the C++ profiler. `rank` must be below `world_size`. */
  int world_size;
  /** The global rank, from 0 (read when `world_size` is not 0). */
  int rank;
  /** The rank on its host plus one (0: not known; read when `world_size` is not 0). */
  int local_rank_plus_one;
  /** The collective backend, e.g. "ccom" (Neuron), "nccl", "gloo"; NULL or "": none named. */
  const char* backend;
} strata_config;

/** strata_config.preallocate: no memory made ready at the start; it is taken as needed. */
#define STRATA_PREALLOCATE_NONE ((size_t)-1)

/** A strata_config with every field at its default (zero). */
#ifdef __cplusplus
#define STRATA_CONFIG_INIT {}
#else
#define STRATA_CONFIG_INIT {0}
#endif

#if !defined(STRATA_ENABLED) || STRATA_ENABLED

/* --- recording: any thread, any time; nothing is recorded unless a session records ------- */

/** Opens a range named `name` on the calling thread, user layer; closed by strata_pop(). */
void strata_push(const char* name);
/** Opens a range of `layer`. */
void strata_push_layer(strata_layer layer, const char* name);
/** Closes the calling thread's innermost open range. */
void strata_pop(void);
/** Sets the FLOP count of the calling thread's innermost open range (the last call wins; 0:
 *  none), recorded when the session has strata_config.with_flops: the table's FLOPs column and
 *  the trace event's args.flops. Without an open range, or FLOPs not recorded, it does nothing. */
void strata_set_flops(unsigned long long flops);
/** Records a point in time on the user layer. */
void strata_instant(const char* name);
/** Records a point in time on `layer`. */
void strata_instant_layer(strata_layer layer, const char* name);
/** Records a sample of the counter `name`, user layer (a Chrome counter track). */
void strata_counter(const char* name, double value);
/** Records a sample of the counter `name` on `layer`. */
void strata_counter_layer(strata_layer layer, const char* name, double value);
/** Names the calling thread in traces. */
void strata_set_thread_name(const char* name);
/** Marks a step boundary (one iteration of the engine's loop) for the session recording now,
 *  whichever started it (C++ profiler::step()): with a schedule it moves the schedule on (and
 *  may end a window, whose trace is then written in the background); without one it counts. */
void strata_step(void);

/* --- memory events: recorded when the session profiles memory (strata_config.profile_memory);
 *     otherwise each costs a branch. They go on the user layer of the calling thread. ------- */

/** Records that `bytes` were allocated at `ptr` in host memory. */
void strata_alloc(const void* ptr, size_t bytes);
/** Records that the host memory at `ptr` was freed (the session knows its size). */
void strata_free(const void* ptr);
/** Records an allocation on device `index` (-1: the host) of type `device`. */
void strata_alloc_device(strata_device_type device, int index, const void* ptr, size_t bytes);
/** Records a free on a device. */
void strata_free_device(strata_device_type device, int index, const void* ptr);
/** Records that a device's reserved (pool) memory changed by `delta_bytes` (negative: given
 *  back): the trace's `Total Reserved`. */
void strata_reserve_device(strata_device_type device, int index, long long delta_bytes);

/* --- sessions --------------------------------------------------------------------------- */

/** Starts a session recording every layer, writing into `output_dir` (created if missing):
 *  strata_start_ex with `output` = output_dir/trace.json. Errors: STRATA_ERROR_CONFIG (NULL,
 *  "" or not a writable directory), STRATA_ERROR_RUNNING (a session records already). */
int strata_start(const char* output_dir);
/** Starts a session configured by `config` (NULL: every default). Errors:
 *  STRATA_ERROR_CONFIG (a field out of range or an output that cannot be written; the message
 *  names the field), STRATA_ERROR_RUNNING (a session records already), STRATA_ERROR_INTERNAL. */
int strata_start_ex(const strata_config* config);
/** Stops the C session and keeps its records for strata_export and strata_table (with a
 *  schedule, waits for the window traces being written). Errors: STRATA_ERROR_NOT_RUNNING (no
 *  C session records), STRATA_ERROR_EXPORT (a window's trace could not be written; the
 *  session is stopped all the same). */
int strata_stop(void);
/** Writes the stopped C session's trace (with a schedule: its last window) to `path`, whose
 *  name says the format as strata_config.output's does (NULL: the configured output). Errors:
 *  STRATA_ERROR_NO_TRACE (no C session has stopped), STRATA_ERROR_RUNNING (it still records:
 *  strata_stop first), STRATA_ERROR_CONFIG (a name of no known format), STRATA_ERROR_EXPORT. */
int strata_export(const char* path);
/** strata_stop, then (without a schedule) strata_export(NULL); one line on stderr says what
 *  was written. With a schedule the windows are already written: it names them. Errors:
 *  those of strata_stop and strata_export. */
int strata_stop_and_export(void);
/** Writes what the recording C session holds so far to `path` (NULL: snapshot-<pid>-<n>.json
 *  in the output's directory; `.pftrace` for Perfetto, `.gz` compressed), without stopping it:
 *  recording threads go on meanwhile. Once stopped, the last collected trace. Errors:
 *  STRATA_ERROR_NOT_RUNNING (no C session was started), STRATA_ERROR_EXPORT. */
int strata_snapshot(const char* path);
/** Asks for an on-demand capture (strata::request_capture): a session of its own that records
 *  the next `steps` steps (from the next strata_step()) or, with `steps` 0, the next
 *  `duration_ms` milliseconds; both 0: the on-demand defaults (10 steps). Its trace goes to
 *  strata-out/ondemand-<pid>-<n>.json (or where STRATA_ONDEMAND's settings say), written by
 *  strata's own thread; the call returns at once. Errors: STRATA_ERROR_RUNNING (a capture or
 *  another session records), STRATA_ERROR_CONFIG (negative, or both set). */
int strata_request_capture(int steps, int duration_ms);
/** The key_averages table (torch.profiler's format) of the stopped C session (with a
 *  schedule: its last window), sorted by `sort_by` (NULL: "self_cpu_time_total"; also
 *  "cpu_time_total", "self_device_time_total", "device_time_total", "count", ...) and cut
 *  after `row_limit` rows (0 or negative: every row). snprintf-style: writes at most
 *  `size - 1` characters and a NUL into `buf` (which may be NULL when `size` is 0) and returns
 *  the table's length, so a call with (NULL, 0) tells the size to allocate. Call it after
 *  strata_stop or strata_stop_and_export, until the next start. Returns a negative
 *  strata_status on error: -STRATA_ERROR_NO_TRACE (no C session has stopped),
 *  -STRATA_ERROR_RUNNING (it still records), -STRATA_ERROR_CONFIG (an unknown `sort_by`). */
int strata_table(char* buf, size_t size, const char* sort_by, int row_limit);
/** Writes the stopped C session's collapsed stacks for flame graphs (profiler::export_stacks:
 *  one line `outer;inner;leaf <microseconds>` per nesting path, for flamegraph.pl or
 *  speedscope) to `path`, atomically. `metric`: "self_cpu_time_total" (NULL) or
 *  "self_device_time_total" ("self_cuda_time_total" too). Errors: STRATA_ERROR_NO_TRACE (no C
 *  session has stopped), STRATA_ERROR_RUNNING (it still records), STRATA_ERROR_CONFIG (no
 *  path, or an unknown metric), STRATA_ERROR_EXPORT (the file cannot be written; none is left). */
int strata_export_stacks(const char* path, const char* metric);
/** Writes the stopped C session's report, one self-contained HTML page (profiler::export_html:
 *  summary with ranked recommendations, timeline overview, the key_averages table, the device's
 *  engines and memory), to `path` atomically (NULL: strata-out/report.html, or the session's
 *  output directory's). Errors: STRATA_ERROR_NO_TRACE (no C session has stopped),
 *  STRATA_ERROR_RUNNING (it still records), STRATA_ERROR_EXPORT (the file cannot be written;
 *  none is left). */
int strata_export_html(const char* path);

#else /* compiled out */

static inline void strata_push(const char* name) { (void)name; }
static inline void strata_push_layer(strata_layer layer, const char* name) { (void)layer; (void)name; }
static inline void strata_pop(void) {}
static inline void strata_set_flops(unsigned long long flops) { (void)flops; }
static inline void strata_instant(const char* name) { (void)name; }
static inline void strata_instant_layer(strata_layer layer, const char* name) { (void)layer; (void)name; }
static inline void strata_counter(const char* name, double value) { (void)name; (void)value; }
static inline void strata_counter_layer(strata_layer layer, const char* name, double value) {
  (void)layer; (void)name; (void)value;
}
static inline void strata_set_thread_name(const char* name) { (void)name; }
static inline void strata_step(void) {}
static inline void strata_alloc(const void* ptr, size_t bytes) { (void)ptr; (void)bytes; }
static inline void strata_free(const void* ptr) { (void)ptr; }
static inline void strata_alloc_device(strata_device_type device, int index, const void* ptr, size_t bytes) {
  (void)device; (void)index; (void)ptr; (void)bytes;
}
static inline void strata_free_device(strata_device_type device, int index, const void* ptr) {
  (void)device; (void)index; (void)ptr;
}
static inline void strata_reserve_device(strata_device_type device, int index, long long delta_bytes) {
  (void)device; (void)index; (void)delta_bytes;
}
static inline int strata_start(const char* output_dir) { (void)output_dir; return STRATA_OK; }
static inline int strata_start_ex(const strata_config* config) { (void)config; return STRATA_OK; }
static inline int strata_stop(void) { return STRATA_OK; }
static inline int strata_export(const char* path) { (void)path; return STRATA_OK; }
static inline int strata_stop_and_export(void) { return STRATA_OK; }
static inline int strata_snapshot(const char* path) { (void)path; return STRATA_OK; }
static inline int strata_request_capture(int steps, int duration_ms) {
  (void)steps; (void)duration_ms; return STRATA_OK;
}
static inline int strata_table(char* buf, size_t size, const char* sort_by, int row_limit) {
  (void)sort_by; (void)row_limit;
  if (buf != NULL && size > 0) buf[0] = '\0';
  return 0;
}
static inline int strata_export_stacks(const char* path, const char* metric) {
  (void)path; (void)metric; return STRATA_OK;
}
static inline int strata_export_html(const char* path) { (void)path; return STRATA_OK; }

#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#if !defined(STRATA_ENABLED) || STRATA_ENABLED
#include "strata/detail/link_check.h" /* names STRATA_IMPLEMENTATION when the linker misses it */
#endif

#if defined(STRATA_IMPLEMENTATION)
#if !defined(__cplusplus)
#error "define STRATA_IMPLEMENTATION in a C++ file: strata's implementation is C++20"
#elif __cplusplus < 202002L
#error "strata's implementation needs C++20 (-std=c++20)"
#else
#include "strata/implementation.hpp"
#endif
#endif

#endif /* STRATA_STRATA_H */
