// strata/sim/tensor.hpp: the framework's view of the simulated device, in the role of a
// PyTorch PrivateUse1 backend: a `device` (a runtime and one of its cores) and a `tensor`, a
// [rows, cols] float array in that core's HBM. A tensor can also be a placeholder of a graph
// being captured (sim/graph.hpp): ops on placeholders record nodes instead of dispatching.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/sim/hbm_tensor.hpp"
#include "strata/sim/runtime.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

namespace detail {
struct graph_state;  // sim/codegen.hpp
}  // namespace detail

/// A simulated NeuronCore as the framework sees it: core `core` of runtime `rt`, which must
/// outlive every tensor and op that uses the device.
struct device {
  runtime* rt = nullptr;
  std::uint32_t core = 0;
  friend bool operator==(const device&, const device&) = default;
};

/// A 2-D float tensor on a device (a shared handle: copies refer to the same HBM tensor), or a
/// placeholder for a value of a graph under capture.
///
/// **Example**
/// ```cpp
/// sim::runtime rt;
/// sim::device dev{&rt, 0};
/// auto x = sim::tensor::from_host(dev, data, {256, 64});
/// auto y = sim::exp(x);              // dispatched: aten::exp, one submission
/// std::vector<float> v = y.to_host();  // waits for the core
/// ```
class tensor {
 public:
  tensor() = default;

  /// A new tensor on `dev` holding `data` (row-major, rows * cols values).
  static tensor from_host(device dev, std::span<const float> data, shape2 shape,
                          std::string name = "tensor") {
    check_device(dev, "from_host");
    if (data.size() != shape.rows * shape.cols)
      throw error(fmt::format("sim: tensor::from_host: {} values for a [{}, {}] tensor", data.size(),
                              shape.rows, shape.cols));
    return tensor(dev, dev.rt->to_device(dev.core, std::move(name), data, shape));
  }

  /// A new zero-filled tensor on `dev`.
  static tensor zeros(device dev, shape2 shape, std::string name = "tensor") {
    check_device(dev, "zeros");
    return tensor(dev, dev.rt->empty(dev.core, std::move(name), shape));
  }

  /// Wraps an existing HBM tensor of `dev`.
  static tensor wrap(device dev, hbm_tensor storage) { return tensor(dev, std::move(storage)); }

  /// The values, row-major, once the work queued on the device so far is done.
  std::vector<float> to_host() const {
    if (!is_concrete()) throw error("sim: tensor::to_host: a graph placeholder has no values");
    return dev_.rt->to_host(storage_);
  }

  bool valid() const noexcept { return storage_.valid() || graph_ != nullptr; }
  /// True for a tensor in HBM; false for a placeholder or an empty tensor.
  bool is_concrete() const noexcept { return storage_.valid(); }
  bool is_placeholder() const noexcept { return graph_ != nullptr; }
  shape2 shape() const noexcept { return shape_; }
  std::size_t rows() const noexcept { return shape_.rows; }
  std::size_t cols() const noexcept { return shape_.cols; }
  const device& dev() const noexcept { return dev_; }
  /// The HBM tensor (empty for a placeholder).
  const hbm_tensor& storage() const noexcept { return storage_; }

  /// The graph and node a placeholder stands for.
  const std::shared_ptr<detail::graph_state>& graph() const noexcept { return graph_; }
  std::size_t node() const noexcept { return node_; }

  /// A placeholder for node `node` of a captured graph.
  static tensor placeholder(std::shared_ptr<detail::graph_state> g, std::size_t node, shape2 shape) {
    tensor t;
    t.graph_ = std::move(g);
    t.node_ = node;
    t.shape_ = shape;
    return t;
  }

 private:
  tensor(device dev, hbm_tensor storage) : dev_(dev), storage_(std::move(storage)) {
    shape_ = storage_.shape();
  }

  static void check_device(const device& dev, const char* what) {
    if (dev.rt == nullptr) throw error(fmt::format("sim: tensor::{}: the device has no runtime", what));
  }

  device dev_ = {};
  hbm_tensor storage_ = {};
  shape2 shape_ = {};
  std::shared_ptr<detail::graph_state> graph_ = {};
  std::size_t node_ = 0;
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
