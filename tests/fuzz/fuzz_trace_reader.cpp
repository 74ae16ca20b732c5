// libFuzzer target: the saved-trace reader. Any bytes in (seeded with real strata and Kineto
// traces, which libFuzzer mutates): the result is a trace or a strata::error, never a crash, a
// hang or an allocation out of proportion to the input (libFuzzer's -malloc_limit_mb); read in
// pieces on two threads, the same trace or the same error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "report/trace_reader.hpp"

namespace {

/// The input a few bytes a read, so that the pieces of a split parse end anywhere.
class trickle_source {
 public:
  explicit trickle_source(std::string_view bytes) : rest_(bytes) {}
  std::size_t read(char* into, std::size_t n) {
    n = std::min({n, std::size_t{7}, rest_.size()});
    std::copy_n(rest_.data(), n, into);
    rest_.remove_prefix(n);
    return n;
  }
  const std::string& failure() const noexcept { return failure_; }

 private:
  std::string_view rest_;
  std::string failure_;
};

/// The same input split into pieces and chunks of a few bytes on two threads
/// (report/parallel_parse.hpp) must give what one parser gives: the same table or the same error.
void check_split(std::string_view input, const strata::report::saved_trace* serial, const std::string& serial_error) {
  const strata::report::detail::split_options split{.piece_bytes = 48, .chunk_bytes = 16, .parallel_bytes = 0, .threads = 2};
  try {
    const strata::report::saved_trace t =
        strata::report::detail::read_trace_from([&] { return trickle_source(input); }, "fuzz input", {}, &split);
    if (serial == nullptr || t.events.size() != serial->events.size() || t.skipped != serial->skipped ||
        t.tracks != serial->tracks || t.format != serial->format)
      std::abort();
    if (strata::report::key_averages(t).to_json() != strata::report::key_averages(*serial).to_json()) std::abort();
  } catch (const strata::error& e) {
    if (serial != nullptr || e.what() != serial_error) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  strata::report::saved_trace t;
  try {
    t = strata::report::read_trace_bytes(input, "fuzz input");
  } catch (const strata::error& e) {
    check_split(input, nullptr, e.what());
    return 0;  // a refusal, with a message: what a bad trace should get
  }
  check_split(input, &t, {});
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
