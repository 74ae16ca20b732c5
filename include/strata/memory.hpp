// strata/memory.hpp: memory events: allocations, frees and reserved (pool) memory, recorded on a
// layer of the calling thread as one 32-byte record each (record_kind::memory).
//
// Off (no session, or a session without `profile_memory`): one relaxed load of the state word
// and a branch. On: what an instant costs, the record path's one push. A free carries no size:
// the session pairs it with its allocation by (device, address) when it reads the records
// (strata/analysis/memory.hpp). Part of the instrumentation header: <cstdint> and <cstddef> only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/config.hpp"
#include "strata/record.hpp"
#include "strata/detail/record_path.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// The descriptor of every memory record of a layer: the operation, device and size travel in
/// the record's payload, so one static site per layer serves all of them.
inline constexpr site memory_sites[layer_count] = {
    {"[memory]", "", 0, layer::framework, record_kind::memory},
    {"[memory]", "", 0, layer::runtime, record_kind::memory},
    {"[memory]", "", 0, layer::device, record_kind::memory},
    {"[memory]", "", 0, layer::user, record_kind::memory},
};

/// Records one memory event: the state word's `profile_memory` bit first (the whole cost when
/// off), then the record path's decision for the layer, then one push.
STRATA_FORCE_INLINE void emit_memory(layer l, std::uint64_t address, memory_fields fields) noexcept {
#if STRATA_ENABLED
  if (!profiles_memory(load_state())) [[likely]]
    return;
  const record_mode mode = open_mode(l);
  if (mode != record_mode::off) push_record(ticks_for(mode), address, &memory_sites[static_cast<unsigned>(l) & 3u], fields.pack());
#else
  static_cast<void>(l);
  static_cast<void>(address);
  static_cast<void>(fields);
#endif
}

STRATA_FORCE_INLINE std::uint64_t address_of(const void* p) noexcept {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

STRATA_FORCE_INLINE std::int64_t clamp_bytes(std::size_t bytes) noexcept {
  return bytes > static_cast<std::size_t>(memory_fields::max_bytes) ? memory_fields::max_bytes
                                                                     : static_cast<std::int64_t>(bytes);
}

}  // namespace detail

/// Records that `bytes` were allocated at `ptr` on `device` (default: host memory), on layer
/// `l` of the calling thread, when the running session profiles memory. The allocation counts
/// in the memory columns of the innermost op open on this thread (docs/key-averages.md).
///
/// **Example**
/// ```cpp
/// void* p = std::malloc(4096);
/// strata::record_alloc(p, 4096);
/// strata::record_free(p);
/// std::free(p);
/// ```
STRATA_FORCE_INLINE void record_alloc(const void* ptr, std::size_t bytes, memory_device device = {},
                                      layer l = layer::user) noexcept {
  detail::emit_memory(l, detail::address_of(ptr), {memory_op::alloc, device, detail::clamp_bytes(bytes)});
}

/// Records that `ptr` on `device` was freed; its size is the one its allocation recorded (a
/// free of memory allocated before the session is counted, not sized: docs/key-averages.md).
STRATA_FORCE_INLINE void record_free(const void* ptr, memory_device device = {}, layer l = layer::user) noexcept {
  detail::emit_memory(l, detail::address_of(ptr), {memory_op::free, device, 0});
}

/// Records that the reserved (pool) memory of `device` changed by `delta_bytes` (negative: given
/// back): the trace's `Total Reserved` and the reserved counter track.
STRATA_FORCE_INLINE void record_reserve(std::int64_t delta_bytes, memory_device device,
                                        layer l = layer::user) noexcept {
  detail::emit_memory(l, 0, {memory_op::reserve, device, delta_bytes});
}

}  // namespace v1
}  // namespace strata
