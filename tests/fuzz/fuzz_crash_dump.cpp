// libFuzzer target: the crash dump reader (read_crash_dump). Any bytes in: a session or a
// strata::error, never a crash. A session read back must be exportable: every record points at
// a site with a name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "strata/crash_dump.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<strata::crash_dump> dump;
  try {
    dump = strata::read_crash_dump(std::span(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const strata::error&) {
    return 0;
  }
  for (const strata::thread_track& t : dump->data.threads)
    for (const strata::record& r : t.records)
      if (r.site == nullptr || r.site->name == nullptr) std::abort();
  static_cast<void>(dump->missing());
  return 0;
}
