// strata/sim/graph.hpp: graph capture and compile ("compiled" mode). The eager API called on a
// graph's placeholder inputs records nodes instead of dispatching; compiling turns the captured
// chain into ONE program of generated instructions (sim/codegen.hpp: per 128-row block, each
// input loaded once, every node on SBUF/PSUM tiles, only the outputs stored), and running it
// is one framework scope `CompiledGraph[<name>]` and one submission.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/scope.hpp"
#include "strata/sim/codegen.hpp"
#include "strata/sim/dispatcher.hpp"
#include "strata/sim/runtime.hpp"
#include "strata/sim/tensor.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// A compiled graph: one program on one device.
class compiled_graph {
 public:
  /// Runs the graph on `inputs` (tensors of the device it was compiled for, of the captured
  /// shapes): one framework scope `CompiledGraph[<name>]` with a new correlation id, one
  /// submission. Returns the outputs, in the order they were marked.
  std::vector<tensor> run(const std::vector<tensor>& inputs) const {
    if (inputs.size() != g_->inputs.size())
      throw error(fmt::format("sim: graph '{}' takes {} inputs, got {}", g_->name, g_->inputs.size(),
                              inputs.size()));
    const device d = detail::common_device(where_->name, inputs);
    if (!(d == dev_)) throw error(fmt::format("sim: graph '{}': inputs are not on the device it was compiled for", g_->name));
    std::vector<shape2> shapes;
    std::vector<hbm_tensor> in;
    for (const tensor& t : inputs) {
      shapes.push_back(t.shape());
      in.push_back(t.storage());
    }
    const std::uint64_t id = new_correlation_id();
    scope op = detail::op_scope(where_, shapes, std::nullopt, id);
    std::vector<tensor> outs;
    std::vector<hbm_tensor> out;
    for (const shape2& s : prog_->output_shapes()) {
      outs.push_back(tensor::zeros(dev_, s, g_->name));
      out.push_back(outs.back().storage());
    }
    dev_.rt->submit(dev_.core, prog_, std::move(in), std::move(out), id);
    dispatcher::instance().count_dispatch();
    return outs;
  }

  const program_ptr& program() const noexcept { return prog_; }
  const std::string& name() const noexcept { return g_->name; }

 private:
  friend class graph;
  device dev_;
  std::shared_ptr<const detail::graph_state> g_;
  program_ptr prog_;
  const site* where_ = nullptr;
};

/// A graph under capture: placeholder inputs, the eager API on them, marked outputs.
///
/// **Example**
/// ```cpp
/// sim::graph g("softmax");
/// sim::tensor x = g.input({256, 64});
/// sim::tensor m = sim::max(x);                          // recorded, not submitted
/// sim::tensor e = sim::exp(sim::sub(x, m));
/// g.output(sim::div(e, sim::sum(e)));
/// sim::compiled_graph c = g.compile(dev);               // one program
/// sim::tensor y = c.run({x_on_device})[0];              // one submission
/// ```
class graph {
 public:
  explicit graph(std::string name) : g_(std::make_shared<detail::graph_state>()) { g_->name = std::move(name); }

  /// Captures `f` (the eager API on the placeholders of `input_shapes`) into a graph whose
  /// output is what `f` returns.
  static graph capture(std::string name, const std::vector<shape2>& input_shapes,
                       const std::function<tensor(const std::vector<tensor>&)>& f) {
    graph g(std::move(name));
    std::vector<tensor> in;
    for (const shape2& s : input_shapes) in.push_back(g.input(s));
    g.output(f(in));
    return g;
  }

  /// A new placeholder input of shape `shape`.
  tensor input(shape2 shape) {
    op_node n;
    n.kind = node_kind::input;
    n.op = "input";
    n.input_index = g_->inputs.size();
    n.shape = shape;
    g_->nodes.push_back(n);
    g_->inputs.push_back(g_->nodes.size() - 1);
    return tensor::placeholder(g_, g_->nodes.size() - 1, shape);
  }

  /// Marks `t` (a value of this graph) as an output.
  void output(const tensor& t) {
    if (t.graph() != g_) throw error(fmt::format("sim: graph '{}': output() takes a value of this graph", g_->name));
    g_->outputs.push_back(t.node());
  }

  std::size_t node_count() const noexcept { return g_->nodes.size(); }
  /// The text that keys the compiled program: nodes, their shapes and the outputs.
  std::string describe() const { return detail::describe(*g_); }

  /// Compiles the graph for `dev` (once per graph structure and shapes: the runtime caches it).
  compiled_graph compile(device dev) const {
    if (dev.rt == nullptr) throw error(fmt::format("sim: graph '{}': compile: the device has no runtime", g_->name));
    const core_params& p = dev.rt->params();
    detail::validate(*g_, p.partitions, p.max_moving_free);
    auto frozen = std::make_shared<const detail::graph_state>(*g_);  // later captures don't change it
    std::vector<shape2> in, out;
    for (std::size_t i : frozen->inputs) in.push_back(frozen->nodes[i].shape);
    for (std::size_t o : frozen->outputs) out.push_back(frozen->nodes[o].shape);
    compiled_graph c;
    c.dev_ = dev;
    c.g_ = frozen;
    c.where_ = dispatcher::instance().op(fmt::format("CompiledGraph[{}]", frozen->name)).site;
    const std::string key = fmt::format("CompiledGraph[{}]{{{}}}", frozen->name, describe());
    c.prog_ = dev.rt->load(key, detail::kernel_name(fmt::format("CompiledGraph[{}]", frozen->name), in),
                           [frozen](kernel& k, std::span<const hbm_tensor> i, std::span<const hbm_tensor> o) {
                             detail::emit_fused(k, *frozen, i, o);
                           },
                           in, out);
    return c;
  }

 private:
  std::shared_ptr<detail::graph_state> g_;
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
