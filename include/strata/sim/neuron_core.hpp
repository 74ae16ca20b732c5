// strata/sim/neuron_core.hpp: a simulated NeuronCore: HBM tensors and kernel runs, each run
// giving a deterministic execution timeline (sim/execution.hpp). Not thread-safe: one thread
// drives a core at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/sim/core_params.hpp"
#include "strata/sim/cost_model.hpp"
#include "strata/sim/execution.hpp"
#include "strata/sim/hbm_tensor.hpp"
#include "strata/sim/kernel.hpp"
#include "strata/sim/scheduler.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

namespace detail {
// Tells kernel runs apart (a tile or an HBM access log from another run). Only identity
// matters, never the value, so timelines stay deterministic.
inline std::uint64_t next_run_id() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace detail

/// A simulated NeuronCore of one generation.
///
/// **Example**
/// ```cpp
/// sim::neuron_core core{sim::core_generation::trn1};
/// sim::hbm_tensor x = core.upload("x", data, {128, 512});
/// sim::hbm_tensor y = core.alloc_hbm("y", {128, 512});
/// sim::execution ex = core.run("relu", [&](sim::kernel& k) {
///   k.store(y, {0, 0}, k.activation(k.load(x, {0, 0}, {128, 512}), sim::act::relu));
/// });
/// ```
class neuron_core {
 public:
  explicit neuron_core(core_generation g, const cost_params& costs = {})
      : neuron_core(params_for(g), costs) {}
  explicit neuron_core(const core_params& p, const cost_params& costs = {})
      : params_(p), costs_(costs), hbm_(std::make_shared<detail::hbm_account>()) {}

  const core_params& params() const noexcept { return params_; }
  const cost_params& costs() const noexcept { return costs_; }
  /// Bytes held by live HBM tensors of this core.
  std::uint64_t hbm_used() const noexcept { return hbm_->used.load(); }
  /// Most bytes held by live HBM tensors of this core at once, since it was made.
  std::uint64_t hbm_peak() const noexcept { return hbm_->peak.load(); }
  /// Its HBM tensors' allocations and frees are memory events of device `NEURON:<index>` (a
  /// session with `profile_memory` records them on the runtime layer of the allocating thread);
  /// a core alone is 0, a runtime numbers its cores; -1 records none.
  void set_memory_index(int index) noexcept { hbm_->memory_index.store(index); }
  int memory_index() const noexcept { return hbm_->memory_index.load(); }
  /// Whether `t` lives in this core's HBM.
  bool owns(const hbm_tensor& t) const noexcept { return t.s_ != nullptr && t.s_->account == hbm_; }

  /// A new HBM tensor holding `data` (row-major, rows * cols values).
  hbm_tensor upload(std::string name, std::span<const float> data, shape2 shape,
                    dtype type = dtype::fp32) {
    if (data.size() != shape.rows * shape.cols)
      throw error(fmt::format("sim: upload: '{}' has {} values, shape [{}, {}] needs {}", name,
                              data.size(), shape.rows, shape.cols, shape.rows * shape.cols));
    return make_hbm(std::move(name), shape, type, std::vector<float>(data.begin(), data.end()));
  }

  /// A new zero-filled HBM tensor.
  hbm_tensor alloc_hbm(std::string name, shape2 shape, dtype type = dtype::fp32) {
    return make_hbm(std::move(name), shape, type, std::vector<float>(shape.rows * shape.cols, 0.0f));
  }

  /// Runs `body(kernel&)` and returns its timeline. Values are computed as instructions are
  /// issued; an error raised by an instruction propagates and no timeline is returned.
  template <class Body>
  execution run(std::string kernel_name, Body&& body) {
    detail::scheduler sched(params_, std::move(kernel_name), detail::next_run_id(), hbm_->used.load());
    {
      kernel k(params_, costs_, sched);
      std::forward<Body>(body)(k);
    }
    return sched.finish();
  }

 private:
  hbm_tensor make_hbm(std::string name, shape2 shape, dtype type, std::vector<float> values) {
    const std::uint64_t bytes = shape.rows * shape.cols * size_of(type);
    const std::uint64_t used = hbm_->used.load();
    if (used + bytes > params_.hbm_bytes)
      throw error(fmt::format("sim: alloc_hbm: HBM overflow: '{}' needs {} bytes, {} of {} in use",
                              name, bytes, used, params_.hbm_bytes));
    return hbm_tensor(std::make_shared<detail::hbm_storage>(std::move(name), shape, type,
                                                            std::move(values), hbm_));
  }

  core_params params_;
  cost_params costs_;
  std::shared_ptr<detail::hbm_account> hbm_;
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
