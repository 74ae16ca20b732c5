// strata/core/record.hpp: the fixed-size record that the hot path stores.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "strata/core/site.hpp"

namespace strata {
inline namespace v1 {

/// One event as stored in a thread's ring buffer: 32 bytes, trivially copyable, no pointers
/// to anything but static (or interned, never freed) descriptors.
struct record {
  std::uint64_t begin;          ///< ticks when the scope opened (instant and counter: when)
  std::uint64_t end;            ///< ticks when the scope closed; counter: the value's bits
  const site* where;            ///< name, layer, source location, kind
  std::uint64_t payload;        ///< correlation id (0: none) or a small payload

  record_kind kind() const noexcept { return where->kind; }
  layer layer_of() const noexcept { return where->where; }
  double counter_value() const noexcept { return std::bit_cast<double>(end); }
};

static_assert(sizeof(record) == 32, "strata::record must stay 32 bytes: two fit a cache line");
static_assert(std::is_trivially_copyable_v<record> && std::is_standard_layout_v<record>,
              "strata::record must be a POD so the ring buffer can copy it field by field");
static_assert(offsetof(record, begin) == 0 && offsetof(record, end) == 8 &&
                  offsetof(record, where) == 16 && offsetof(record, payload) == 24,
              "strata::record's layout is part of the ring-buffer protocol");

}  // namespace v1
}  // namespace strata
