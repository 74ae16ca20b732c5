// strata/sim/codegen.hpp: the instructions the framework generates for its ops. Ops are nodes
// of a small graph (one node for an eager op, a captured chain for a compiled graph); the
// generator turns a graph into one NKI-style kernel that walks the rows in blocks of up to 128
// partitions, loads each input once per block, evaluates every node on SBUF/PSUM tiles and
// stores only the outputs. A stand-alone matmul gets a fully tiled kernel of its own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/sim/hbm_tensor.hpp"
#include "strata/sim/kernel.hpp"
#include "strata/sim/ops.hpp"
#include "strata/sim/tile.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// What a node computes.
enum class node_kind : std::uint8_t {
  input,   ///< a graph input (placeholder)
  binary,  ///< a op b: same shapes (tensor_tensor) or b of [rows, 1] (tensor_scalar, per row)
  scalar,  ///< a op value (tensor_scalar)
  unary,   ///< func(a) (activation)
  reduce,  ///< a reduced along dim 1, keepdim: [rows, 1] (reduce)
  matmul,  ///< a [rows, K] @ b [K, N]: b is a whole graph input (weights)
};

/// One op of a graph. `op` names it (static text such as "aten::add").
struct op_node {
  node_kind kind = node_kind::input;
  std::string_view op = {};
  alu alu_op = alu::add;
  act act_op = act::identity;
  float value = 0.0f;  ///< the scalar of node_kind::scalar
  std::size_t a = 0, b = 0;  ///< operand nodes
  std::size_t input_index = 0;  ///< node_kind::input: which graph input
  shape2 shape = {};
};

namespace detail {

/// A graph: nodes in program order (operands before their users), its inputs and outputs.
struct graph_state {
  std::string name;
  std::vector<op_node> nodes;
  std::vector<std::size_t> inputs;   ///< node index of each input, in order
  std::vector<std::size_t> outputs;  ///< node index of each output, in order
};

inline std::size_t operand_count(node_kind k) noexcept {
  switch (k) {
    case node_kind::input: return 0;
    case node_kind::binary:
    case node_kind::matmul: return 2;
    default: return 1;
  }
}

/// A text that identifies the graph's computation and shapes: the program cache key.
inline std::string describe(const graph_state& g) {
  std::string out;
  auto it = std::back_inserter(out);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const op_node& n = g.nodes[i];
    if (i != 0) out += ';';
    switch (n.kind) {
      case node_kind::input: fmt::format_to(it, "in{}", n.input_index); break;
      case node_kind::binary: fmt::format_to(it, "{}({},{})", to_string(n.alu_op), n.a, n.b); break;
      case node_kind::scalar: fmt::format_to(it, "{}({},{})", to_string(n.alu_op), n.a, n.value); break;
      case node_kind::unary: fmt::format_to(it, "{}({})", to_string(n.act_op), n.a); break;
      case node_kind::reduce: fmt::format_to(it, "reduce_{}({})", to_string(n.alu_op), n.a); break;
      case node_kind::matmul: fmt::format_to(it, "matmul({},{})", n.a, n.b); break;
    }
    fmt::format_to(it, "[{}x{}]", n.shape.rows, n.shape.cols);
  }
  out += "->";
  for (std::size_t o : g.outputs) fmt::format_to(it, "{},", o);
  return out;
}

inline std::string shapes_text(std::span<const shape2> shapes) {
  std::string out = "[";
  for (std::size_t i = 0; i < shapes.size(); ++i)
    out += fmt::format("{}{}x{}", i == 0 ? "" : ",", shapes[i].rows, shapes[i].cols);
  return out + "]";
}

/// The name of the program that runs op `op` on inputs `shapes`: its Kernel-track record and its
/// key_averages row, e.g. "aten::sub kernel 512x1024,512x1". It reads as a kernel, never as
/// torch's group-by-input-shape row of the op ("aten::sub" with Input Shapes [[512, 1024], ...]).
inline std::string kernel_name(std::string_view op, std::span<const shape2> shapes) {
  std::string out = fmt::format("{} kernel ", op);
  for (std::size_t i = 0; i < shapes.size(); ++i)
    out += fmt::format("{}{}x{}", i == 0 ? "" : ",", shapes[i].rows, shapes[i].cols);
  return out;
}

/// Whether input node `i` is the right operand of a matmul (loaded whole, not per row block).
inline bool is_weight(const graph_state& g, std::size_t i) {
  return std::any_of(g.nodes.begin(), g.nodes.end(),
                     [&](const op_node& n) { return n.kind == node_kind::matmul && n.b == i; });
}

/// Checks what the fused kernel needs, with messages that say what to change.
inline void validate(const graph_state& g, std::size_t partitions, std::size_t max_moving_free) {
  const auto fail = [&](const std::string& what) {
    throw error(fmt::format("sim: graph '{}': {}", g.name, what));
  };
  if (g.outputs.empty()) fail("no outputs: mark the results with graph::output()");
  std::optional<std::size_t> rows;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const op_node& n = g.nodes[i];
    if (n.kind == node_kind::matmul) {
      const op_node& w = g.nodes[n.b];
      if (w.kind != node_kind::input)
        fail(fmt::format("node {} ({}): the right operand of a matmul in a graph must be a graph "
                         "input (weights)", i, n.op));
      if (w.shape.cols > max_moving_free)
        fail(fmt::format("node {} ({}): N = {} exceeds {} (one PSUM bank); run it eagerly", i, n.op,
                         w.shape.cols, max_moving_free));
      const op_node& lhs = g.nodes[n.a];
      if (lhs.kind != node_kind::input && lhs.shape.cols > partitions)
        fail(fmt::format("node {} ({}): K = {} exceeds {} for a computed left operand (a graph "
                         "input may have any K)", i, n.op, lhs.shape.cols, partitions));
    }
    for (std::size_t o = 0; o < operand_count(n.kind); ++o) {
      const std::size_t operand = o == 0 ? n.a : n.b;
      if (g.nodes[operand].kind == node_kind::input && is_weight(g, operand) &&
          !(n.kind == node_kind::matmul && o == 1))
        fail(fmt::format("node {} ({}): input {} is a matmul's weights and cannot also be used "
                         "row by row", i, n.op, g.nodes[operand].input_index));
    }
    if (n.kind == node_kind::input && is_weight(g, i)) continue;
    if (rows && *rows != n.shape.rows)
      fail(fmt::format("node {} ({}) has {} rows, the graph {}: every row-wise value needs the "
                       "same rows", i, n.op, n.shape.rows, *rows));
    rows = n.shape.rows;
  }
  for (std::size_t o : g.outputs)
    if (g.nodes[o].kind == node_kind::input && is_weight(g, o))
      fail("a matmul's weights cannot be an output");
}

/// The fused kernel of `g`: `in[j]` is graph input j, `out[j]` graph output j.
///
/// Per block of up to 128 rows: each row-wise input is loaded once (when first needed), every
/// node becomes one instruction (binary: tensor_tensor or, with a [rows, 1] operand,
/// tensor_scalar with a per-partition operand; scalar: tensor_scalar; unary: activation;
/// reduce: reduce; matmul: transpose + copy of the left block, matmul accumulating over K in
/// PSUM, copy to SBUF), each output is stored as soon as it is computed, and a tile is freed
/// after its last use. Matmul weights are loaded once, before the row loop.
inline void emit_fused(kernel& k, const graph_state& g, std::span<const hbm_tensor> in,
                       std::span<const hbm_tensor> out) {
  const std::size_t part = k.params().partitions;
  const std::size_t none = std::numeric_limits<std::size_t>::max();
  const std::size_t n_nodes = g.nodes.size();
  std::vector<std::size_t> last_use(n_nodes, none);
  std::vector<bool> is_output(n_nodes, false);
  for (std::size_t i = 0; i < n_nodes; ++i) {
    const op_node& n = g.nodes[i];
    if (operand_count(n.kind) >= 1) last_use[n.a] = i;
    if (operand_count(n.kind) == 2) last_use[n.b] = i;
  }
  for (std::size_t o : g.outputs) is_output[o] = true;

  // Weights: [K, N] in chunks of up to 128 rows (the contraction is the partition dim).
  std::vector<std::vector<tile>> weights(n_nodes);
  for (std::size_t i = 0; i < n_nodes; ++i) {
    const op_node& n = g.nodes[i];
    if (n.kind != node_kind::input || !is_weight(g, i)) continue;
    for (std::size_t k0 = 0; k0 < n.shape.rows; k0 += part)
      weights[i].push_back(k.load(in[n.input_index], {k0, 0},
                                  {std::min(part, n.shape.rows - k0), n.shape.cols}));
  }

  std::size_t rows = 0;
  for (std::size_t i = 0; i < n_nodes; ++i)
    if (!(g.nodes[i].kind == node_kind::input && is_weight(g, i))) rows = g.nodes[i].shape.rows;

  for (std::size_t r0 = 0; r0 < rows; r0 += part) {
    const std::size_t rb = std::min(part, rows - r0);
    std::vector<tile> t(n_nodes);
    const auto value = [&](std::size_t i) -> const tile& {
      if (!t[i].valid()) {  // an input, loaded on first use
        const op_node& n = g.nodes[i];
        t[i] = k.load(in[n.input_index], {r0, 0}, {rb, n.shape.cols});
      }
      return t[i];
    };
    for (std::size_t i = 0; i < n_nodes; ++i) {
      const op_node& n = g.nodes[i];
      switch (n.kind) {
        case node_kind::input:
          if (is_output[i]) static_cast<void>(value(i));
          break;
        case node_kind::binary: {
          const tile& a = value(n.a);
          const tile& b = value(n.b);
          t[i] = g.nodes[n.b].shape == n.shape ? k.tensor_tensor(a, b, n.alu_op)
                                               : k.tensor_scalar(a, n.alu_op, b);
          break;
        }
        case node_kind::scalar: t[i] = k.tensor_scalar(value(n.a), n.alu_op, n.value); break;
        case node_kind::unary: t[i] = k.activation(value(n.a), n.act_op); break;
        case node_kind::reduce: t[i] = k.reduce(value(n.a), n.alu_op); break;
        case node_kind::matmul: {
          const op_node& lhs = g.nodes[n.a];
          const std::size_t kdim = lhs.shape.cols;
          tile acc = k.psum_tile(rb, n.shape.cols);
          for (std::size_t c = 0; c * part < kdim; ++c) {
            const std::size_t k0 = c * part, kb = std::min(part, kdim - k0);
            tile stationary;
            if (kdim <= part) {
              stationary = k.tensor_copy(k.transpose(value(n.a)));
            } else {  // a graph input with K > 128: load its slices directly
              stationary = k.tensor_copy(k.transpose(k.load(in[lhs.input_index], {r0, k0}, {rb, kb})));
            }
            k.matmul(acc, stationary, weights[n.b][c], c > 0);
          }
          t[i] = k.tensor_copy(acc);
          break;
        }
      }
      for (std::size_t j = 0; j < g.outputs.size(); ++j)
        if (g.outputs[j] == i) k.store(out[j], {r0, 0}, t[i]);
      // Free what is no longer needed, so long chains fit in SBUF.
      if (operand_count(n.kind) >= 1 && last_use[n.a] == i && !weights[n.a].size()) t[n.a] = tile{};
      if (operand_count(n.kind) == 2 && last_use[n.b] == i && !weights[n.b].size()) t[n.b] = tile{};
      if (last_use[i] == none) t[i] = tile{};
    }
  }
}

/// out[M, N] = a[M, K] @ b[K, N], tiled: per block of 128 rows of `a`, its [128, K] slices are
/// loaded in chunks of 128 columns and transposed (Tensor engine, then copied to SBUF) into
/// stationary [K-chunk, M-block] tiles; per block of 512 columns of `b`, the matmuls of every
/// K-chunk accumulate into one PSUM tile, which is copied to SBUF and stored.
inline void emit_matmul(kernel& k, const hbm_tensor& a, const hbm_tensor& b, const hbm_tensor& out) {
  const std::size_t part = k.params().partitions;
  const std::size_t nmax = k.params().max_moving_free;
  const std::size_t m = a.rows(), kdim = a.cols(), n = b.cols();
  for (std::size_t m0 = 0; m0 < m; m0 += part) {
    const std::size_t mb = std::min(part, m - m0);
    std::vector<tile> stationary;
    for (std::size_t k0 = 0; k0 < kdim; k0 += part)
      stationary.push_back(k.tensor_copy(k.transpose(k.load(a, {m0, k0}, {mb, std::min(part, kdim - k0)}))));
    for (std::size_t n0 = 0; n0 < n; n0 += nmax) {
      const std::size_t nb = std::min(nmax, n - n0);
      tile acc = k.psum_tile(mb, nb);
      for (std::size_t c = 0; c < stationary.size(); ++c) {
        const std::size_t k0 = c * part;
        k.matmul(acc, stationary[c], k.load(b, {k0, n0}, {std::min(part, kdim - k0), nb}), c > 0);
      }
      k.store(out, {m0, n0}, k.tensor_copy(acc));
    }
  }
}

}  // namespace detail
}  // namespace sim
}  // namespace v1
}  // namespace strata
