// strata/detail/impl/device.hpp: the device layer's definitions (strata/device.hpp). Part of
// strata's implementation (strata/implementation.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "strata/device.hpp"
#include "strata/detail/intern.hpp"
#include "strata/detail/json_escape.hpp"
#include "strata/detail/registry.hpp"

namespace strata {
inline namespace v1 {

bool device_core_captured(std::uint32_t core) {
  return detail::registry::instance().captures_device_core(static_cast<int>(core));
}

std::size_t append_device_records(const device_track& track, std::span<const record> records) {
  if (!device_core_captured(track.core)) return 0;
  return detail::registry::instance().append_device_records(
      device_pid(track.core), track.core_name, track.track, track.track_name, records,
      track.peak_flops_per_s, track.peak_hbm_bytes_per_s);
}

const site* intern_site(const site& like, std::string_view name, std::string_view args_json) {
  return detail::intern_like_cached(like, name, args_json);
}

std::string json_string(std::string_view text) {
  fmt::memory_buffer b;
  detail::append_json_string(b, text);
  return fmt::to_string(b);
}

std::uint32_t recording_session() noexcept { return detail::registry::recording_epoch(); }

}  // namespace v1
}  // namespace strata
