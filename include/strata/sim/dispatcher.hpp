// strata/sim/dispatcher.hpp: the op registry and the dispatch of one op to the simulated
// device, in the role of PyTorch's dispatcher with a PrivateUse1 backend.
//
//   op call ─ new_correlation_id ─ framework scope "aten::add" (id; input shapes with
//   record_shapes) ─ output allocated in HBM ─ runtime::load(op + shapes) (compiled once per
//   key: eager mode's NEFF per op) ─ runtime::submit(id): async, to_host() waits
//
// Custom NKI-style kernels register under a name (`custom::softmax`) with an output-shape rule
// and dispatch exactly like an aten op.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/hana/define_struct.hpp>
#include <fmt/format.h>

#include "strata/args/op_args.hpp"
#include "strata/args/shape.hpp"
#include "strata/error.hpp"
#include "strata/scope.hpp"
#include "strata/sim/codegen.hpp"
#include "strata/sim/runtime.hpp"
#include "strata/sim/tensor.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// The output shape of a custom op from its input shapes.
using shape_rule = std::function<shape2(std::span<const shape2> inputs)>;

/// A registered op: its name and its framework-layer descriptor (interned once).
struct op_entry {
  std::string name;
  const ::strata::site* site = nullptr;
  kernel_fn body = {};   ///< custom ops only
  shape_rule rule = {};  ///< custom ops only
};

namespace detail {

// Argument structs for the op scopes' Input Shapes (torch's names: self, other).
struct op_args_1 {
  BOOST_HANA_DEFINE_STRUCT(op_args_1, (strata::shape, self));
};
struct op_args_2 {
  BOOST_HANA_DEFINE_STRUCT(op_args_2, (strata::shape, self), (strata::shape, other));
};
struct op_args_scalar {
  BOOST_HANA_DEFINE_STRUCT(op_args_scalar, (strata::shape, self), (float, other));
};
struct op_args_3 {
  BOOST_HANA_DEFINE_STRUCT(op_args_3, (strata::shape, input0), (strata::shape, input1),
                           (strata::shape, input2));
};
struct op_args_4 {
  BOOST_HANA_DEFINE_STRUCT(op_args_4, (strata::shape, input0), (strata::shape, input1),
                           (strata::shape, input2), (strata::shape, input3));
};

inline strata::shape dims(shape2 s) {
  return {static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.cols)};
}

/// The framework scope of one dispatch: `where` with `id`, and the input shapes when the
/// session records shapes (up to four inputs; more record none).
inline scope op_scope(const site* where, std::span<const shape2> in, std::optional<float> scalar,
                      std::uint64_t id) {
  if (scalar && in.size() == 1)
    return scope_with_args(where, [&] { return op_args_scalar{dims(in[0]), *scalar}; }, id);
  switch (in.size()) {
    case 1: return scope_with_args(where, [&] { return op_args_1{dims(in[0])}; }, id);
    case 2: return scope_with_args(where, [&] { return op_args_2{dims(in[0]), dims(in[1])}; }, id);
    case 3:
      return scope_with_args(where, [&] { return op_args_3{dims(in[0]), dims(in[1]), dims(in[2])}; }, id);
    case 4:
      return scope_with_args(
          where, [&] { return op_args_4{dims(in[0]), dims(in[1]), dims(in[2]), dims(in[3])}; }, id);
    default: return scope(where, id);
  }
}

/// The device all of `in` live on; they must be concrete tensors of one device.
inline device common_device(std::string_view op, std::span<const tensor> in) {
  if (in.empty()) throw error(fmt::format("sim: {}: no inputs", op));
  for (const tensor& t : in)
    if (!t.is_concrete())
      throw error(fmt::format("sim: {}: an input is empty or a placeholder of a graph under capture", op));
  for (const tensor& t : in)
    if (!(t.dev() == in[0].dev()))
      throw error(fmt::format("sim: {}: inputs are on different devices", op));
  return in[0].dev();
}

}  // namespace detail

/// The op registry. One per process (a function-local static); thread-safe.
///
/// **Example**
/// ```cpp
/// sim::dispatcher::instance().register_kernel("custom::softmax", softmax_body,
///     [](std::span<const sim::shape2> in) { return in[0]; });
/// sim::tensor y = sim::dispatcher::instance().call("custom::softmax", {x});
/// ```
class dispatcher {
 public:
  static dispatcher& instance() {
    static dispatcher d;
    return d;
  }

  /// The entry of `name`, made on first use (its framework descriptor is interned once).
  const op_entry& op(std::string_view name) {
    std::lock_guard lock(mutex_);
    return entry(name);
  }

  /// Registers (or replaces) a custom kernel: `body` reads the op's inputs and writes its one
  /// output, whose shape `rule` gives.
  void register_kernel(std::string_view name, kernel_fn body, shape_rule rule) {
    if (!body || !rule) throw error(fmt::format("sim: register_kernel: '{}' needs a body and a shape rule", name));
    std::lock_guard lock(mutex_);
    op_entry& e = entry(name);
    e.body = std::move(body);
    e.rule = std::move(rule);
  }

  /// Dispatches the custom kernel `name` on `inputs`: one framework scope, one load (compiled
  /// once per input shapes), one submission.
  tensor call(std::string_view name, std::vector<tensor> inputs) {
    kernel_fn body;
    shape_rule rule;
    const op_entry* e = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = ops_.find(name);
      if (it == ops_.end() || !it->second->body)
        throw error(fmt::format("sim: dispatcher::call: no kernel registered as '{}'", name));
      e = it->second.get();
      body = e->body;
      rule = e->rule;
    }
    std::vector<shape2> shapes;
    for (const tensor& t : inputs) shapes.push_back(t.shape());
    const shape2 out = rule(shapes);
    return launch(*e, inputs, out, std::nullopt, std::move(body));
  }

  /// Dispatches one op: takes a correlation id, opens the op's framework scope, allocates the
  /// output, loads the program keyed by the op and its input shapes (and `scalar`), and
  /// submits it. `body` is only compiled on the key's first use.
  tensor launch(const op_entry& e, std::span<const tensor> inputs, shape2 out_shape,
                std::optional<float> scalar, kernel_fn body) {
    const device dev = detail::common_device(e.name, inputs);
    std::vector<shape2> shapes;
    std::vector<hbm_tensor> in;
    for (const tensor& t : inputs) {
      shapes.push_back(t.shape());
      in.push_back(t.storage());
    }
    const std::uint64_t id = new_correlation_id();
    scope op = detail::op_scope(e.site, shapes, scalar, id);
    tensor out = tensor::zeros(dev, out_shape, e.name);
    std::string key = e.name + detail::shapes_text(shapes);
    std::string name = detail::kernel_name(e.name, shapes);
    if (scalar) {
      key += fmt::format("{{{}}}", *scalar);
      name += fmt::format(" scalar {}", *scalar);
    }
    program_ptr p = dev.rt->load(key, std::move(name), std::move(body), shapes, {out_shape});
    dev.rt->submit(dev.core, p, std::move(in), {out.storage()}, id);
    dispatches_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  /// Ops dispatched to a device since the process started (compiled graphs count one each).
  std::uint64_t dispatches() const noexcept { return dispatches_.load(std::memory_order_relaxed); }
  void count_dispatch() noexcept { dispatches_.fetch_add(1, std::memory_order_relaxed); }

 private:
  dispatcher() = default;

  op_entry& entry(std::string_view name) {
    auto it = ops_.find(name);
    if (it == ops_.end()) {
      auto e = std::make_unique<op_entry>();
      e->name = std::string(name);
      e->site = intern(layer::framework, name);
      it = ops_.emplace(e->name, std::move(e)).first;
    }
    return *it->second;
  }

  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<op_entry>, std::less<>> ops_;
  std::atomic<std::uint64_t> dispatches_{0};
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
