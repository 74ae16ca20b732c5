// libFuzzer target: the saved-trace reader. Any bytes in (seeded with real strata and Kineto
// traces, which libFuzzer mutates): the result is a trace or a strata::error, never a crash, a
// hang or an allocation out of proportion to the input (libFuzzer's -malloc_limit_mb).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "report/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  strata::report::saved_trace t;
  try {
    t = strata::report::read_trace_bytes(input, "fuzz input");
  } catch (const strata::error&) {
    return 0;  // a refusal, with a message: what a bad trace should get
  }
  if (t.format != "strata" && t.format != "kineto" && t.format != "chrome") std::abort();
  if (t.tracks > t.events.size()) std::abort();
  // What strata-report does next must hold up on whatever the reader accepted.
  const strata::averages avg = strata::report::key_averages(t, {.group_by_input_shape = true});
  std::uint64_t calls = 0;
  for (const auto& r : avg.rows) calls += r.count;
  // A call is an event, or a [memory] event that no op holds (torch's [memory] row).
  if (calls > t.events.size() + t.memory.size()) std::abort();
  static_cast<void>(avg.table({.sort_by = "self_cpu_time_total"}));
  static_cast<void>(avg.to_json());
  return 0;
}
