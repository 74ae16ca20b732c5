// strata/sim/tile.hpp: a tile, the operand of every simulated instruction: [partitions, free]
// float values living in SBUF or PSUM. A tile holds its space in its memory until it is
// destroyed (RAII); kernel instructions create tiles.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/sim/dtype.hpp"
#include "strata/sim/memory_pool.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// The on-chip memory a tile lives in.
enum class memory : std::uint8_t { sbuf, psum };

constexpr std::string_view to_string(memory m) noexcept { return m == memory::sbuf ? "SBUF" : "PSUM"; }

namespace detail {

/// A tile's values, shape and timing state. Instructions take operand tiles by const
/// reference yet record on them who read them last: that bookkeeping lives here, behind a
/// pointer, so moving a tile keeps it.
struct tile_state {
  memory buffer = memory::sbuf;
  dtype type = dtype::fp32;
  std::size_t partitions = 0;
  std::size_t free = 0;
  std::vector<float> values = {};  ///< row-major [partition][free]

  // Timing, in ps from the kernel's start.
  std::int64_t ready_ps = 0;          ///< its last writer's end
  std::int64_t last_writer = -1;      ///< instruction id
  std::int64_t readers_done_ps = 0;   ///< the latest end of any reader
  std::vector<std::uint32_t> readers = {};  ///< readers since the last write
  std::int64_t space_ready_ps = 0;    ///< its memory is free from then on
  std::int64_t first_use_ps = -1;     ///< -1: never written by an instruction

  // Accounting.
  std::shared_ptr<memory_pool> pool = {};
  std::uint64_t reserved_per_partition = 0;
  std::uint64_t run = 0;  ///< the kernel run it belongs to

  float& at(std::size_t p, std::size_t f) noexcept { return values[p * free + f]; }
  float at(std::size_t p, std::size_t f) const noexcept { return values[p * free + f]; }
};

}  // namespace detail

/// A [partitions, free] tile in SBUF or PSUM. Move-only; destroying it frees its space.
///
/// **Example**
/// ```cpp
/// sim::tile t = k.load(x, {0, 0}, {128, 512});
/// float first = t.at(0, 0);
/// ```
class tile {
 public:
  tile() = default;
  tile(tile&&) noexcept = default;
  tile& operator=(tile&& other) noexcept {
    if (this != &other) {
      release();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  tile(const tile&) = delete;
  tile& operator=(const tile&) = delete;
  ~tile() { release(); }

  bool valid() const noexcept { return state_ != nullptr; }
  std::size_t partitions() const noexcept { return state_ ? state_->partitions : 0; }
  std::size_t free_size() const noexcept { return state_ ? state_->free : 0; }
  memory buffer() const noexcept { return state_ ? state_->buffer : memory::sbuf; }
  dtype type() const noexcept { return state_ ? state_->type : dtype::fp32; }

  float at(std::size_t p, std::size_t f) const noexcept { return state_->at(p, f); }
  /// Row-major [partition][free].
  std::span<const float> values() const noexcept {
    return state_ ? std::span<const float>(state_->values) : std::span<const float>();
  }

 private:
  friend class kernel;
  explicit tile(std::unique_ptr<detail::tile_state> s) noexcept : state_(std::move(s)) {}

  void release() noexcept {
    if (!state_ || !state_->pool) return;
    const auto& s = *state_;
    const std::int64_t release_ps =
        std::max({s.ready_ps, s.readers_done_ps, s.space_ready_ps});
    s.pool->release(s.reserved_per_partition, s.first_use_ps >= 0, release_ps);
    state_.reset();
  }

  std::unique_ptr<detail::tile_state> state_ = {};
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
