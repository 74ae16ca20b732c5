// strata/sim/hbm_tensor.hpp: a tensor in the simulated device memory (HBM): a host-visible
// [rows, cols] float array that kernels load tiles from and store tiles to.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strata/memory.hpp"
#include "strata/sim/dtype.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// A row and column of a 2-D tensor.
struct index2 {
  std::size_t row = 0;
  std::size_t col = 0;
};

/// The extent of a 2-D tensor or region.
struct shape2 {
  std::size_t rows = 0;
  std::size_t cols = 0;
  friend constexpr bool operator==(shape2, shape2) noexcept = default;
};

namespace detail {

/// HBM bytes in use on one core, shared with the tensors that count against it. Atomic: a
/// tensor's last handle may go on any thread while the core runs a kernel.
struct hbm_account {
  std::atomic<std::uint64_t> used{0};
  std::atomic<std::uint64_t> peak{0};  ///< most bytes in use at once
  /// The device index of its memory events (`NEURON:<index>`, on the runtime layer of the thread
  /// that allocates or frees); -1: none recorded (a runtime's scratch core).
  std::atomic<int> memory_index{0};

  void add(std::uint64_t bytes, const void* what) noexcept {
    const std::uint64_t now = used.fetch_add(bytes) + bytes;
    std::uint64_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    const int index = memory_index.load(std::memory_order_relaxed);
    if (index >= 0)
      record_alloc(what, bytes, {device_type::neuron, static_cast<std::int8_t>(index)}, layer::runtime);
  }
  void remove(std::uint64_t bytes, const void* what) noexcept {
    const int index = memory_index.load(std::memory_order_relaxed);
    if (index >= 0) record_free(what, {device_type::neuron, static_cast<std::int8_t>(index)}, layer::runtime);
    used -= bytes;
  }
};

/// One DMA access to an HBM region during a run, for ordering loads and stores that overlap.
struct hbm_access {
  index2 at;
  shape2 size;
  bool write;
  std::uint32_t instruction;
  std::int64_t end_ps;
};

struct hbm_storage {
  std::string name;
  shape2 shape;
  dtype type = dtype::fp32;
  std::vector<float> values;  ///< row-major
  std::shared_ptr<hbm_account> account;
  std::uint64_t run = 0;  ///< the run the access log belongs to
  std::vector<hbm_access> accesses = {};

  hbm_storage(std::string n, shape2 s, dtype t, std::vector<float> v,
              std::shared_ptr<hbm_account> a)
      : name(std::move(n)), shape(s), type(t), values(std::move(v)), account(std::move(a)) {
    account->add(bytes(), this);
  }
  hbm_storage(const hbm_storage&) = delete;
  hbm_storage& operator=(const hbm_storage&) = delete;
  ~hbm_storage() { account->remove(bytes(), this); }

  std::uint64_t bytes() const noexcept { return shape.rows * shape.cols * size_of(type); }
};

}  // namespace detail

namespace detail {
struct hbm_tensor_writer;
}  // namespace detail

/// A handle to an HBM tensor; copies refer to the same tensor. Made by neuron_core::upload and
/// neuron_core::alloc_hbm; its bytes count as HBM used until the last handle goes.
class hbm_tensor {
 public:
  hbm_tensor() = default;

  bool valid() const noexcept { return s_ != nullptr; }
  const std::string& name() const noexcept { return s_->name; }
  shape2 shape() const noexcept { return s_->shape; }
  std::size_t rows() const noexcept { return s_->shape.rows; }
  std::size_t cols() const noexcept { return s_->shape.cols; }
  dtype type() const noexcept { return s_->type; }
  std::uint64_t bytes() const noexcept { return s_->bytes(); }

  float at(std::size_t r, std::size_t c) const noexcept { return s_->values[r * s_->shape.cols + c]; }
  /// Row-major [rows][cols].
  std::span<const float> values() const noexcept { return s_->values; }
  std::vector<float> to_vector() const { return s_->values; }

 private:
  friend class kernel;
  friend class neuron_core;
  friend struct detail::hbm_tensor_writer;
  explicit hbm_tensor(std::shared_ptr<detail::hbm_storage> s) noexcept : s_(std::move(s)) {}

  std::shared_ptr<detail::hbm_storage> s_ = {};
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
