// strata/sim/kernel.hpp: the NKI-style kernel API. A kernel body receives a sim::kernel and
// issues instructions on tiles: load/store (DMA queues), matmul/transpose (Tensor), activation
// (Scalar), tensor_tensor/tensor_scalar/reduce/tensor_copy (Vector), memset/iota (GpSimd).
// Values are computed at once on the CPU; timing goes to the scheduler. Limits follow NKI's
// documented ones and raise strata::error naming the instruction and the limit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/sim/core_params.hpp"
#include "strata/sim/cost_model.hpp"
#include "strata/sim/engine.hpp"
#include "strata/sim/hbm_tensor.hpp"
#include "strata/sim/ops.hpp"
#include "strata/sim/scheduler.hpp"
#include "strata/sim/tile.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

class kernel;

/// A named phase of a kernel, open until destroyed; phases nest. The timeline records the span
/// of the instructions issued while it is open.
class [[nodiscard]] phase_scope {
 public:
  phase_scope(phase_scope&& o) noexcept : sched_(std::exchange(o.sched_, nullptr)), index_(o.index_) {}
  phase_scope& operator=(phase_scope&&) = delete;
  phase_scope(const phase_scope&) = delete;
  phase_scope& operator=(const phase_scope&) = delete;
  ~phase_scope() {
    if (sched_) sched_->close_phase(index_);
  }

 private:
  friend class kernel;
  phase_scope(detail::scheduler* s, std::size_t index) noexcept : sched_(s), index_(index) {}
  detail::scheduler* sched_;
  std::size_t index_;
};

/// The instruction set of a simulated NeuronCore, handed to the body of neuron_core::run.
///
/// **Example**
/// ```cpp
/// auto ex = core.run("scale", [&](sim::kernel& k) {
///   sim::tile t = k.load(x, {0, 0}, {128, 512});
///   sim::tile y = k.tensor_scalar(t, sim::alu::multiply, 2.0f);
///   k.store(out, {0, 0}, y);
/// });
/// ```
class kernel {
 public:
  kernel(const core_params& p, const cost_params& c, detail::scheduler& s) noexcept
      : params_(p), costs_(c), sched_(s) {}
  kernel(const kernel&) = delete;
  kernel& operator=(const kernel&) = delete;

  const core_params& params() const noexcept { return params_; }

  /// Opens a named phase until the returned scope is destroyed.
  phase_scope phase(std::string name) { return phase_scope(&sched_, sched_.open_phase(std::move(name))); }

  // --- DMA -----------------------------------------------------------------------------------

  /// HBM -> SBUF: rows [at.row, at.row + size.rows) become partitions, columns the free dim.
  /// Runs on DMA queue `queue`, or on the next queue round-robin.
  tile load(const hbm_tensor& src, index2 at, shape2 size,
            std::optional<std::uint16_t> queue = std::nullopt) {
    constexpr std::string_view op = "load";
    check_hbm(op, src);
    check_region(op, src, at, size);
    check_partitions(op, size.rows);
    auto out = make_tile(op, memory::sbuf, src.type(), size.rows, size.cols);
    auto& s = *src.s_;
    for (std::size_t r = 0; r < size.rows; ++r)
      std::copy_n(s.values.begin() + static_cast<std::ptrdiff_t>((at.row + r) * s.shape.cols + at.col),
                  size.cols, out->values.begin() + static_cast<std::ptrdiff_t>(r * size.cols));
    const auto bytes = size.rows * size.cols * size_of(src.type());
    auto extra = hbm_waits(s, at, size, false);
    const auto e = dma_engine(op, queue);
    const auto id = sched_.issue(e, op, dma_ps(bytes, params_), 0, bytes, {}, out.get(), extra);
    log_hbm(s, at, size, false, id);
    return tile(std::move(out));
  }

  /// SBUF -> HBM: the tile's [p, f] values go to rows [at.row, at.row + p), columns
  /// [at.col, at.col + f) of `dst`.
  void store(const hbm_tensor& dst, index2 at, const tile& src,
             std::optional<std::uint16_t> queue = std::nullopt) {
    constexpr std::string_view op = "store";
    check_hbm(op, dst);
    auto& in = operand(op, src, "source");
    if (in.buffer != memory::sbuf)
      fail(op, "the source tile is in PSUM; DMA moves SBUF <-> HBM here: copy it to SBUF first "
               "(tensor_copy)");
    const shape2 size{in.partitions, in.free};
    check_region(op, dst, at, size);
    auto& s = *dst.s_;
    for (std::size_t r = 0; r < size.rows; ++r)
      std::copy_n(in.values.begin() + static_cast<std::ptrdiff_t>(r * size.cols), size.cols,
                  s.values.begin() + static_cast<std::ptrdiff_t>((at.row + r) * s.shape.cols + at.col));
    const auto bytes = size.rows * size.cols * size_of(dst.type());
    auto extra = hbm_waits(s, at, size, true);
    const auto e = dma_engine(op, queue);
    const auto id = sched_.issue(e, op, dma_ps(bytes, params_), 0, bytes, {&in}, nullptr, extra);
    log_hbm(s, at, size, true, id);
  }

  // --- Tensor engine -------------------------------------------------------------------------

  /// A zero-filled fp32 PSUM tile, for matmuls that accumulate into it.
  tile psum_tile(std::size_t partitions, std::size_t free) {
    constexpr std::string_view op = "psum_tile";
    check_partitions(op, partitions);
    check_psum_bank(op, free);
    return tile(make_tile(op, memory::psum, dtype::fp32, partitions, free));
  }

  /// out[M, N] (+)= stationary[K, M]^T @ moving[K, N] on the Tensor engine: K (the partition
  /// dim of both inputs, in SBUF) is contracted; `out` is an fp32 PSUM tile. With `accumulate`
  /// the product is added to out's values, otherwise it replaces them.
  void matmul(tile& out, const tile& stationary, const tile& moving, bool accumulate = false) {
    constexpr std::string_view op = "matmul";
    auto& st = operand(op, stationary, "stationary");
    auto& mv = operand(op, moving, "moving");
    auto& o = operand(op, out, "output");
    check_matmul_operands(op, st, mv);
    if (o.buffer != memory::psum) fail(op, "the output tile must be in PSUM (the Tensor engine writes PSUM)");
    if (o.partitions != st.free || o.free != mv.free)
      fail(op, fmt::format("output tile is [{}, {}], the product is [{}, {}] (stationary free x "
                           "moving free)", o.partitions, o.free, st.free, mv.free));
    for (std::size_t m = 0; m < st.free; ++m)
      for (std::size_t n = 0; n < mv.free; ++n) {
        float acc = 0;
        for (std::size_t k = 0; k < st.partitions; ++k) acc += st.at(k, m) * mv.at(k, n);
        o.at(m, n) = accumulate ? o.at(m, n) + acc : acc;
      }
    const dtype t = (st.type == dtype::fp32 || mv.type == dtype::fp32) ? dtype::fp32 : dtype::bf16;
    const auto cycles = matmul_cycles(mv.free, t, costs_);
    const std::uint32_t id =
        accumulate ? sched_.issue(tensor(), op, cycles_to_ps(cycles, params_.tensor_mhz), cycles, 0,
                                  {&st, &mv, &o}, &o)
                   : sched_.issue(tensor(), op, cycles_to_ps(cycles, params_.tensor_mhz), cycles, 0,
                                  {&st, &mv}, &o);
    sched_.set_flops(id, std::uint64_t{2} * st.partitions * st.free * mv.free);
  }

  /// stationary[K, M]^T @ moving[K, N] into a new [M, N] PSUM tile.
  tile matmul(const tile& stationary, const tile& moving) {
    constexpr std::string_view op = "matmul";
    auto& st = operand(op, stationary, "stationary");
    auto& mv = operand(op, moving, "moving");
    check_matmul_operands(op, st, mv);
    tile out(make_tile(op, memory::psum, dtype::fp32, st.free, mv.free));
    matmul(out, stationary, moving, false);
    return out;
  }

  /// [P, F] SBUF tile -> [F, P] PSUM tile on the Tensor engine (a matmul with an identity on
  /// hardware, costed like one).
  tile transpose(const tile& in) {
    constexpr std::string_view op = "transpose";
    auto& a = operand(op, in, "input");
    if (a.buffer != memory::sbuf) fail(op, "the input tile must be in SBUF (the Tensor engine reads SBUF)");
    if (a.free > params_.max_stationary_free)
      fail(op, fmt::format("free size {} exceeds {} (it becomes the output's partition dimension)",
                           a.free, params_.max_stationary_free));
    auto out = make_tile(op, memory::psum, dtype::fp32, a.free, a.partitions);
    for (std::size_t p = 0; p < a.partitions; ++p)
      for (std::size_t f = 0; f < a.free; ++f) out->at(f, p) = a.at(p, f);
    const auto cycles = transpose_cycles(a.partitions, a.type, costs_);
    sched_.issue(tensor(), op, cycles_to_ps(cycles, params_.tensor_mhz), cycles, 0, {&a}, out.get());
    return tile(std::move(out));
  }

  // --- Scalar engine -------------------------------------------------------------------------

  /// func(in * scale + bias) on the Scalar engine; `bias` is a [P, 1] tile (one value per
  /// partition).
  tile activation(const tile& in, act func, float scale, const tile& bias) {
    constexpr std::string_view op = "activation";
    auto& a = operand(op, in, "input");
    auto& b = operand(op, bias, "bias");
    check_stream_input(op, a);
    check_per_partition(op, a, b, "bias");
    return activation_impl(a, func, scale, &b, 0.0f);
  }

  /// func(in * scale + bias) with one bias for every element.
  tile activation(const tile& in, act func, float scale = 1.0f, float bias = 0.0f) {
    constexpr std::string_view op = "activation";
    auto& a = operand(op, in, "input");
    check_stream_input(op, a);
    return activation_impl(a, func, scale, nullptr, bias);
  }

  // --- Vector engine -------------------------------------------------------------------------

  /// a op b, element-wise, on the Vector engine (same shapes).
  tile tensor_tensor(const tile& a, const tile& b, alu op_) {
    constexpr std::string_view op = "tensor_tensor";
    auto& x = operand(op, a, "first input");
    auto& y = operand(op, b, "second input");
    check_stream_input(op, x);
    check_stream_input(op, y);
    if (x.partitions != y.partitions || x.free != y.free)
      fail(op, fmt::format("shape mismatch: [{}, {}] and [{}, {}]", x.partitions, x.free,
                           y.partitions, y.free));
    auto out = make_tile(op, memory::sbuf, out_type(x), x.partitions, x.free);
    for (std::size_t i = 0; i < x.values.size(); ++i) out->values[i] = apply(op_, x.values[i], y.values[i]);
    stream(vector(), detail::tensor_tensor_name(op_), params_.vector_mhz, 2, {&x, &y}, *out);
    return tile(std::move(out));
  }

  /// a op s, element-wise, on the Vector engine.
  tile tensor_scalar(const tile& a, alu op_, float s) {
    constexpr std::string_view op = "tensor_scalar";
    auto& x = operand(op, a, "input");
    check_stream_input(op, x);
    auto out = make_tile(op, memory::sbuf, out_type(x), x.partitions, x.free);
    for (std::size_t i = 0; i < x.values.size(); ++i) out->values[i] = apply(op_, x.values[i], s);
    stream(vector(), detail::tensor_scalar_name(op_), params_.vector_mhz, 1, {&x}, *out);
    return tile(std::move(out));
  }

  /// a op s[p], with one operand per partition (a [P, 1] tile), on the Vector engine.
  tile tensor_scalar(const tile& a, alu op_, const tile& per_partition) {
    constexpr std::string_view op = "tensor_scalar";
    auto& x = operand(op, a, "input");
    auto& s = operand(op, per_partition, "operand");
    check_stream_input(op, x);
    check_per_partition(op, x, s, "operand");
    auto out = make_tile(op, memory::sbuf, out_type(x), x.partitions, x.free);
    for (std::size_t p = 0; p < x.partitions; ++p)
      for (std::size_t f = 0; f < x.free; ++f) out->at(p, f) = apply(op_, x.at(p, f), s.at(p, 0));
    stream(vector(), detail::tensor_scalar_name(op_), params_.vector_mhz, 1, {&x, &s}, *out);
    return tile(std::move(out));
  }

  /// Reduces along the free dimension with add, max or min: [P, F] -> [P, 1], Vector engine.
  tile reduce(const tile& a, alu op_) {
    constexpr std::string_view op = "reduce";
    auto& x = operand(op, a, "input");
    check_stream_input(op, x);
    if (op_ != alu::add && op_ != alu::max && op_ != alu::min)
      fail(op, fmt::format("alu::{} is not a reduction: use add, max or min", to_string(op_)));
    auto out = make_tile(op, memory::sbuf, out_type(x), x.partitions, 1);
    for (std::size_t p = 0; p < x.partitions; ++p) {
      float acc = x.at(p, 0);
      for (std::size_t f = 1; f < x.free; ++f) acc = apply(op_, acc, x.at(p, f));
      out->at(p, 0) = acc;
    }
    stream(vector(), detail::reduce_name(op_), params_.vector_mhz, 1, {&x}, *out);
    return tile(std::move(out));
  }

  /// Copies a tile (typically PSUM -> SBUF) on the Vector or Scalar engine, as `to` (default:
  /// the input's type).
  tile tensor_copy(const tile& a, engine_kind on = engine_kind::vector,
                   std::optional<dtype> to = std::nullopt) {
    constexpr std::string_view op = "tensor_copy";
    auto& x = operand(op, a, "input");
    check_stream_input(op, x);
    if (on != engine_kind::vector && on != engine_kind::scalar && on != engine_kind::gpsimd)
      fail(op, "runs on the Vector, Scalar or GpSimd engine");
    auto out = make_tile(op, memory::sbuf, to.value_or(x.type), x.partitions, x.free);
    out->values = x.values;
    const auto mhz = on == engine_kind::vector   ? params_.vector_mhz
                     : on == engine_kind::scalar ? params_.scalar_mhz
                                                 : params_.gpsimd_mhz;
    stream(engine_id{on, 0}, op, mhz, 1, {&x}, *out);
    return tile(std::move(out));
  }

  // --- GpSimd engine -------------------------------------------------------------------------

  /// A new SBUF tile filled with `value`, on the GpSimd engine.
  tile memset(std::size_t partitions, std::size_t free, float value, dtype type = dtype::fp32) {
    constexpr std::string_view op = "memset";
    check_partitions(op, partitions);
    auto out = make_tile(op, memory::sbuf, type, partitions, free);
    std::fill(out->values.begin(), out->values.end(), value);
    stream(engine_id{engine_kind::gpsimd, 0}, op, params_.gpsimd_mhz, 1, {}, *out);
    return tile(std::move(out));
  }

  /// A new SBUF tile with value base + partition_step * p + free_step * f, on GpSimd.
  tile iota(std::size_t partitions, std::size_t free, float base = 0.0f,
            float partition_step = 0.0f, float free_step = 1.0f) {
    constexpr std::string_view op = "iota";
    check_partitions(op, partitions);
    auto out = make_tile(op, memory::sbuf, dtype::fp32, partitions, free);
    for (std::size_t p = 0; p < partitions; ++p)
      for (std::size_t f = 0; f < free; ++f)
        out->at(p, f) = base + partition_step * static_cast<float>(p) + free_step * static_cast<float>(f);
    stream(engine_id{engine_kind::gpsimd, 0}, op, params_.gpsimd_mhz, 1, {}, *out);
    return tile(std::move(out));
  }

 private:
  [[noreturn]] static void fail(std::string_view op, std::string_view what) {
    throw error(fmt::format("sim: {}: {}", op, what));
  }

  static constexpr engine_id tensor() noexcept { return {engine_kind::tensor, 0}; }
  static constexpr engine_id vector() noexcept { return {engine_kind::vector, 0}; }

  static dtype out_type(const detail::tile_state& in) noexcept { return in.type; }

  detail::tile_state& operand(std::string_view op, const tile& t, std::string_view role) const {
    if (!t.state_) fail(op, fmt::format("the {} tile is empty (moved from or default-made)", role));
    if (t.state_->run != sched_.run())
      fail(op, fmt::format("the {} tile belongs to another kernel run", role));
    return *t.state_;
  }

  void check_partitions(std::string_view op, std::size_t partitions) const {
    if (partitions == 0 || partitions > params_.partitions)
      fail(op, fmt::format("partition dimension {} exceeds {} (must be 1..{})", partitions,
                           params_.partitions, params_.partitions));
  }

  void check_psum_bank(std::string_view op, std::size_t free) const {
    const auto bank = params_.psum_bank_bytes_per_partition();
    if (free == 0 || free * size_of(dtype::fp32) > bank)
      fail(op, fmt::format("PSUM tile of free size {} needs {} per partition, more than one PSUM "
                           "bank ({}, i.e. {} fp32)",
                           free, detail::format_bytes(free * size_of(dtype::fp32)),
                           detail::format_bytes(bank), bank / size_of(dtype::fp32)));
  }

  static void check_hbm(std::string_view op, const hbm_tensor& t) {
    if (!t.valid()) fail(op, "the HBM tensor is empty (default-made)");
  }

  static void check_region(std::string_view op, const hbm_tensor& t, index2 at, shape2 size) {
    if (size.rows == 0 || size.cols == 0 || at.row + size.rows > t.rows() || at.col + size.cols > t.cols())
      fail(op, fmt::format("region rows [{}, {}) x cols [{}, {}) is outside HBM tensor '{}' [{}, {}]",
                           at.row, at.row + size.rows, at.col, at.col + size.cols, t.name(),
                           t.rows(), t.cols()));
  }

  void check_matmul_operands(std::string_view op, const detail::tile_state& st,
                             const detail::tile_state& mv) const {
    if (st.buffer != memory::sbuf || mv.buffer != memory::sbuf)
      fail(op, "stationary and moving tiles must be in SBUF (the Tensor engine reads SBUF)");
    if (st.partitions != mv.partitions)
      fail(op, fmt::format("contraction mismatch: stationary has {} partitions, moving {}",
                           st.partitions, mv.partitions));
    if (st.free > params_.max_stationary_free)
      fail(op, fmt::format("stationary free size {} exceeds {}", st.free, params_.max_stationary_free));
    if (mv.free > params_.max_moving_free)
      fail(op, fmt::format("moving free size {} exceeds {} (one PSUM bank of fp32)", mv.free,
                           params_.max_moving_free));
  }

  void check_stream_input(std::string_view op, const detail::tile_state& t) const {
    const std::size_t limit = t.buffer == memory::sbuf ? params_.max_free_sbuf : params_.max_free_psum;
    if (t.free > limit)
      fail(op, fmt::format("free size {} exceeds {} for a {} operand", t.free, limit, to_string(t.buffer)));
  }

  static void check_per_partition(std::string_view op, const detail::tile_state& a,
                                  const detail::tile_state& s, std::string_view role) {
    if (s.partitions != a.partitions || s.free != 1)
      fail(op, fmt::format("the {} must be [{}, 1] (one value per partition), got [{}, {}]", role,
                           a.partitions, s.partitions, s.free));
  }

  /// A new tile with its space reserved in its memory.
  std::unique_ptr<detail::tile_state> make_tile(std::string_view op, memory buffer, dtype type,
                                                std::size_t partitions, std::size_t free) {
    check_partitions(op, partitions);
    auto s = std::make_unique<detail::tile_state>();
    s->buffer = buffer;
    s->type = type;
    s->partitions = partitions;
    s->free = free;
    s->run = sched_.run();
    std::uint64_t bytes = free * size_of(type);
    if (buffer == memory::psum) {
      check_psum_bank(op, free);
      bytes = params_.psum_bank_bytes_per_partition();  // PSUM is allocated in whole banks
    }
    s->pool = sched_.pool(buffer);
    s->space_ready_ps = s->pool->reserve(bytes, op, sched_.horizon());
    s->reserved_per_partition = bytes;
    s->values.assign(partitions * free, 0.0f);
    return s;
  }

  tile activation_impl(detail::tile_state& a, act func, float scale, detail::tile_state* bias,
                       float bias_value) {
    constexpr std::string_view op = "activation";
    auto out = make_tile(op, memory::sbuf, out_type(a), a.partitions, a.free);
    for (std::size_t p = 0; p < a.partitions; ++p) {
      const float b = bias ? bias->at(p, 0) : bias_value;
      for (std::size_t f = 0; f < a.free; ++f) out->at(p, f) = apply(func, a.at(p, f) * scale + b);
    }
    const engine_id e{engine_kind::scalar, 0};
    if (bias)
      stream(e, detail::activation_name(func), params_.scalar_mhz, 1, {&a, bias}, *out);
    else
      stream(e, detail::activation_name(func), params_.scalar_mhz, 1, {&a}, *out);
    return tile(std::move(out));
  }

  /// Costs and schedules a Vector/Scalar/GpSimd instruction streaming its inputs along the
  /// free dimension.
  void stream(engine_id e, std::string_view name, std::uint32_t mhz, std::uint32_t tensor_inputs,
              std::initializer_list<detail::tile_state*> inputs, detail::tile_state& out) {
    stream_access acc;
    acc.tensor_inputs = tensor_inputs;
    acc.free_size = out.free;
    for (const auto* in : inputs) {
      acc.free_size = std::max(acc.free_size, in->free);
      acc.reads_psum = acc.reads_psum || in->buffer == memory::psum;
      acc.dependent = acc.dependent || sched_.dependent(e, {in});
    }
    const auto cycles = stream_cycles(acc, costs_);
    sched_.issue(e, name, cycles_to_ps(cycles, mhz), cycles, 0, inputs, &out);
  }

  engine_id dma_engine(std::string_view op, std::optional<std::uint16_t> queue) {
    if (queue) {
      if (*queue >= params_.dma_queues)
        fail(op, fmt::format("DMA queue {} does not exist ({} queues: 0..{})", *queue,
                             params_.dma_queues, params_.dma_queues - 1));
      return engine_id::dma_queue(*queue);
    }
    const auto q = static_cast<std::uint16_t>(next_queue_);
    next_queue_ = (next_queue_ + 1) % params_.dma_queues;
    return engine_id::dma_queue(q);
  }

  static bool overlaps(index2 a, shape2 as, index2 b, shape2 bs) noexcept {
    return a.row < b.row + bs.rows && b.row < a.row + as.rows && a.col < b.col + bs.cols &&
           b.col < a.col + as.cols;
  }

  /// Ordering against earlier DMA accesses of this run to an overlapping HBM region: a load
  /// waits for stores (RAW); a store waits for loads and stores (WAR, WAW).
  std::vector<detail::scheduler::extra_dependency> hbm_waits(detail::hbm_storage& s, index2 at,
                                                              shape2 size, bool write) {
    if (s.run != sched_.run()) {
      s.run = sched_.run();
      s.accesses.clear();
    }
    std::vector<detail::scheduler::extra_dependency> out;
    for (const auto& a : s.accesses)
      if ((write || a.write) && overlaps(at, size, a.at, a.size)) out.push_back({a.end_ps, a.instruction});
    return out;
  }

  void log_hbm(detail::hbm_storage& s, index2 at, shape2 size, bool write, std::uint32_t id) {
    s.accesses.push_back({at, size, write, id, sched_.instruction(id).end_ps});
  }

  const core_params& params_;
  const cost_params& costs_;
  detail::scheduler& sched_;
  std::uint32_t next_queue_ = 0;
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
