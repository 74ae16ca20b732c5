// strata/sim/eager_ops.hpp: the aten ops of the simulated device. On tensors in HBM each call is
// one eager dispatch (sim/dispatcher.hpp) of a generated kernel (sim/codegen.hpp); on the
// placeholders of a graph under capture (sim/graph.hpp) it records a node and submits nothing,
// so one function serves both modes.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/sim/codegen.hpp"
#include "strata/sim/dispatcher.hpp"
#include "strata/sim/ops.hpp"
#include "strata/sim/tensor.hpp"

namespace strata {
inline namespace v1 {
namespace sim {
namespace detail {

/// Runs node `n` on `operands`: records it when they are placeholders of a graph under
/// capture, dispatches a one-node graph otherwise.
inline tensor apply_node(op_node n, std::initializer_list<const tensor*> operands) {
  std::vector<const tensor*> ops(operands);
  const bool captured = ops[0]->is_placeholder();
  for (const tensor* t : ops) {
    if (!t->valid()) throw error(fmt::format("sim: {}: an operand is an empty tensor", n.op));
    if (t->is_placeholder() != captured || (captured && t->graph() != ops[0]->graph()))
      throw error(fmt::format("sim: {}: mixes a graph's placeholders with other tensors; make every "
                              "tensor the graph reads a graph input", n.op));
  }
  if (captured) {
    graph_state& g = *ops[0]->graph();
    n.a = ops[0]->node();
    if (ops.size() > 1) n.b = ops[1]->node();
    g.nodes.push_back(n);
    return tensor::placeholder(ops[0]->graph(), g.nodes.size() - 1, n.shape);
  }
  // Eager: the op as a graph of its inputs and one node.
  auto g = std::make_shared<graph_state>();
  g->name = std::string(n.op);
  std::vector<tensor> inputs;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    op_node in;
    in.kind = node_kind::input;
    in.op = "input";
    in.input_index = i;
    in.shape = ops[i]->shape();
    g->nodes.push_back(in);
    g->inputs.push_back(i);
    inputs.push_back(*ops[i]);
  }
  n.a = 0;
  n.b = ops.size() > 1 ? 1 : 0;
  g->nodes.push_back(n);
  g->outputs.push_back(g->nodes.size() - 1);
  kernel_fn body;
  if (n.kind == node_kind::matmul) {
    body = [](kernel& k, std::span<const hbm_tensor> in, std::span<const hbm_tensor> out) {
      emit_matmul(k, in[0], in[1], out[0]);
    };
  } else {
    body = [g](kernel& k, std::span<const hbm_tensor> in, std::span<const hbm_tensor> out) {
      emit_fused(k, *g, in, out);
    };
  }
  dispatcher& d = dispatcher::instance();
  const std::optional<float> scalar =
      n.kind == node_kind::scalar ? std::optional<float>(n.value) : std::nullopt;
  return d.launch(d.op(n.op), inputs, n.shape, scalar, std::move(body));
}

inline op_node binary_node(std::string_view name, alu op, const tensor& a, const tensor& b) {
  if (!(b.shape() == a.shape()) && !(b.rows() == a.rows() && b.cols() == 1))
    throw error(fmt::format("sim: {}: shapes [{}, {}] and [{}, {}]: the second operand must have "
                            "the first's shape or be [{}, 1] (broadcast along the row)",
                            name, a.rows(), a.cols(), b.rows(), b.cols(), a.rows()));
  op_node n;
  n.kind = node_kind::binary;
  n.op = name;
  n.alu_op = op;
  n.shape = a.shape();
  return n;
}

inline tensor binary(std::string_view name, alu op, const tensor& a, const tensor& b) {
  return apply_node(binary_node(name, op, a, b), {&a, &b});
}

inline tensor with_scalar(std::string_view name, alu op, const tensor& a, float s) {
  op_node n;
  n.kind = node_kind::scalar;
  n.op = name;
  n.alu_op = op;
  n.value = s;
  n.shape = a.shape();
  return apply_node(n, {&a});
}

inline tensor unary(std::string_view name, act f, const tensor& a) {
  op_node n;
  n.kind = node_kind::unary;
  n.op = name;
  n.act_op = f;
  n.shape = a.shape();
  return apply_node(n, {&a});
}

inline tensor reduce_rows(std::string_view name, alu op, const tensor& a, int dim, bool keepdim) {
  if (dim != 1 && dim != -1)
    throw error(fmt::format("sim: {}: only dim 1 (along the row) is supported, got {}", name, dim));
  if (!keepdim) throw error(fmt::format("sim: {}: only keepdim=true ([rows, 1] results) is supported", name));
  op_node n;
  n.kind = node_kind::reduce;
  n.op = name;
  n.alu_op = op;
  n.shape = {a.rows(), 1};
  return apply_node(n, {&a});
}

}  // namespace detail

/// a + b; `b` has a's shape or is [rows, 1] (added to every element of its row).
inline tensor add(const tensor& a, const tensor& b) { return detail::binary("aten::add", alu::add, a, b); }
/// a - b (b as in `add`).
inline tensor sub(const tensor& a, const tensor& b) { return detail::binary("aten::sub", alu::subtract, a, b); }
/// a * b (b as in `add`).
inline tensor mul(const tensor& a, const tensor& b) { return detail::binary("aten::mul", alu::multiply, a, b); }
/// a / b (b as in `add`).
inline tensor div(const tensor& a, const tensor& b) { return detail::binary("aten::div", alu::divide, a, b); }

/// a + s.
inline tensor add(const tensor& a, float s) { return detail::with_scalar("aten::add", alu::add, a, s); }
/// a - s.
inline tensor sub(const tensor& a, float s) { return detail::with_scalar("aten::sub", alu::subtract, a, s); }
/// a * s.
inline tensor mul(const tensor& a, float s) { return detail::with_scalar("aten::mul", alu::multiply, a, s); }
/// a / s.
inline tensor div(const tensor& a, float s) { return detail::with_scalar("aten::div", alu::divide, a, s); }

/// e^a.
inline tensor exp(const tensor& a) { return detail::unary("aten::exp", act::exp, a); }
/// max(a, 0).
inline tensor relu(const tensor& a) { return detail::unary("aten::relu", act::relu, a); }
/// GELU, tanh approximation (torch's approximate="tanh"), as the Scalar engine's act::gelu.
inline tensor gelu(const tensor& a) { return detail::unary("aten::gelu", act::gelu, a); }
/// 1 / sqrt(a).
inline tensor rsqrt(const tensor& a) { return detail::unary("aten::rsqrt", act::rsqrt, a); }

/// The maximum of each row: [rows, 1]. Only dim = 1 with keepdim = true.
inline tensor max(const tensor& a, int dim = 1, bool keepdim = true) {
  return detail::reduce_rows("aten::max", alu::max, a, dim, keepdim);
}
/// The sum of each row: [rows, 1]. Only dim = 1 with keepdim = true.
inline tensor sum(const tensor& a, int dim = 1, bool keepdim = true) {
  return detail::reduce_rows("aten::sum", alu::add, a, dim, keepdim);
}

/// a [M, K] @ b [K, N] = [M, N]. Eager: tiled over M and K in blocks of 128 and N in blocks of
/// 512, accumulating over K in PSUM. In a graph, b must be a graph input and N <= 512.
inline tensor matmul(const tensor& a, const tensor& b) {
  if (a.cols() != b.rows())
    throw error(fmt::format("sim: aten::matmul: [{}, {}] @ [{}, {}]: inner dimensions differ",
                            a.rows(), a.cols(), b.rows(), b.cols()));
  op_node n;
  n.kind = node_kind::matmul;
  n.op = "aten::matmul";
  n.shape = {a.rows(), b.cols()};
  return detail::apply_node(n, {&a, &b});
}

}  // namespace sim
}  // namespace v1
}  // namespace strata
