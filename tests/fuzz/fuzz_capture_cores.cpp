// libFuzzer target: capture_cores parsing (core_set::parse). Any text in: a set or a
// strata::error. A set written back as its plain list of indices must parse to the same set.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "strata/device.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  strata::core_set cores;
  try {
    cores = strata::core_set::parse(text);
  } catch (const strata::error&) {
    return 0;
  }
  if (cores.is_all()) return 0;
  std::string listed;
  std::size_t count = 0;
  for (int c = -1; c <= strata::core_set::max_core + 1; ++c) {
    if (!cores.contains(c)) continue;
    if (c < 0 || c > strata::core_set::max_core) std::abort();
    listed += (listed.empty() ? "" : ",") + std::to_string(c);
    ++count;
  }
  if (count != cores.count() || count == 0) std::abort();
  if (!(strata::core_set::parse(listed) == cores)) std::abort();
  return 0;
}
