// strata/core/record.hpp: the fixed-size record that the hot path stores (instrumentation header:
// <cstdint> and <cstddef> only).
#pragma once

#include <cstddef>
#include <cstdint>

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
  double counter_value() const noexcept { return __builtin_bit_cast(double, end); }
};

static_assert(sizeof(record) == 32, "strata::record must stay 32 bytes: two fit a cache line");
// Compiler builtins rather than <type_traits>: this header is part of the instrumentation header.
static_assert(__is_trivially_copyable(record) && __is_standard_layout(record),
              "strata::record must be a POD so the ring buffer can copy it field by field");
static_assert(offsetof(record, begin) == 0 && offsetof(record, end) == 8 &&
                  offsetof(record, where) == 16 && offsetof(record, payload) == 24,
              "strata::record's layout is part of the ring-buffer protocol");

}  // namespace v1
}  // namespace strata
