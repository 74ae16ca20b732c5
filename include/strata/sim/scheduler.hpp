// strata/sim/scheduler.hpp: the timing core of the simulator. Each engine runs its own
// instructions in issue order; an instruction starts when its engine is free, its inputs are
// written (RAW), the previous readers and writer of its output are done (WAR, WAW) and its
// output's memory is free; it ends a cost later. Internal: kernels drive it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/sim/core_params.hpp"
#include "strata/sim/cost_model.hpp"
#include "strata/sim/engine.hpp"
#include "strata/sim/execution.hpp"
#include "strata/sim/memory_pool.hpp"
#include "strata/sim/tile.hpp"

namespace strata {
inline namespace v1 {
namespace sim {
namespace detail {

class scheduler {
 public:
  scheduler(const core_params& p, std::string kernel_name, std::uint64_t run,
            std::uint64_t hbm_used)
      : params_(p), run_(run), hbm_used_(hbm_used),
        sbuf_(std::make_shared<memory_pool>("SBUF", counter_names::sbuf_used,
                                            p.sbuf_bytes_per_partition, p.partitions)),
        psum_(std::make_shared<memory_pool>("PSUM", counter_names::psum_used,
                                            p.psum_bytes_per_partition, p.partitions)),
        engines_(5 + p.dma_queues) {
    result_.kernel_name = std::move(kernel_name);
    result_.generation = p.generation;
  }
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;
  ~scheduler() {
    sbuf_->close();
    psum_->close();
  }

  std::uint64_t run() const noexcept { return run_; }
  const std::shared_ptr<memory_pool>& pool(memory m) const noexcept {
    return m == memory::sbuf ? sbuf_ : psum_;
  }

  /// No instruction issued from now on can start before this time.
  std::int64_t horizon() const noexcept {
    std::int64_t h = engines_.front().free_ps;
    for (const auto& e : engines_) h = std::min(h, e.free_ps);
    return h;
  }

  /// Whether one of `inputs` was written by the instruction issued last on `e`: then the new
  /// instruction cannot overlap it in the engine's pipeline.
  bool dependent(engine_id e, std::initializer_list<const tile_state*> inputs) const noexcept {
    const auto& st = engines_[e.track_index()];
    if (st.last < 0) return false;
    for (const auto* in : inputs)
      if (in && in->last_writer == st.last) return true;
    return false;
  }

  /// An extra ordering constraint (HBM accesses): start no earlier than `after_ps`, listing
  /// instruction `id` as a dependency.
  struct extra_dependency {
    std::int64_t after_ps;
    std::uint32_t id;
  };

  /// Schedules one instruction and returns its id.
  std::uint32_t issue(engine_id e, std::string_view name, std::int64_t cost_ps,
                      std::uint64_t cycles, std::uint64_t bytes,
                      std::initializer_list<tile_state*> inputs, tile_state* output,
                      const std::vector<extra_dependency>& extra = {}) {
    auto& st = engines_[e.track_index()];
    const auto id = static_cast<std::uint32_t>(result_.instructions.size());
    executed_instruction ins;
    ins.id = id;
    ins.engine = e;
    ins.name = name;
    ins.bytes = bytes;
    ins.cycles = cycles;
    std::int64_t start = st.free_ps;
    for (const auto* in : inputs) {
      start = std::max(start, in->ready_ps);
      if (in->last_writer >= 0) ins.depends_on.push_back(static_cast<std::uint32_t>(in->last_writer));
    }
    if (output) {
      start = std::max({start, output->ready_ps, output->readers_done_ps, output->space_ready_ps});
      if (output->last_writer >= 0)
        ins.depends_on.push_back(static_cast<std::uint32_t>(output->last_writer));
      ins.depends_on.insert(ins.depends_on.end(), output->readers.begin(), output->readers.end());
    }
    for (const auto& x : extra) {
      start = std::max(start, x.after_ps);
      ins.depends_on.push_back(x.id);
    }
    std::sort(ins.depends_on.begin(), ins.depends_on.end());
    ins.depends_on.erase(std::unique(ins.depends_on.begin(), ins.depends_on.end()),
                         ins.depends_on.end());
    ins.start_ps = start;
    ins.end_ps = start + cost_ps;

    st.free_ps = ins.end_ps;
    st.last = id;
    st.busy_ps += cost_ps;
    ++st.count;
    for (auto* in : inputs) {
      in->readers_done_ps = std::max(in->readers_done_ps, ins.end_ps);
      in->readers.push_back(id);
    }
    if (output) {
      output->ready_ps = ins.end_ps;
      output->last_writer = id;
      output->readers.clear();
      if (output->first_use_ps < 0) {
        output->first_use_ps = start;
        if (output->pool) output->pool->note_first_use(output->reserved_per_partition, start);
      }
    }
    if (!open_.empty()) ins.phase = static_cast<std::int32_t>(open_.back());
    for (auto idx : open_) {
      auto& ph = result_.phases[idx];
      if (ph.instruction_count == 0) {
        ph.start_ps = ins.start_ps;
        ph.end_ps = ins.end_ps;
      } else {
        ph.start_ps = std::min(ph.start_ps, ins.start_ps);
        ph.end_ps = std::max(ph.end_ps, ins.end_ps);
      }
      ++ph.instruction_count;
    }
    end_ps_ = std::max(end_ps_, ins.end_ps);
    result_.instructions.push_back(std::move(ins));
    return id;
  }

  const executed_instruction& instruction(std::uint32_t id) const noexcept {
    return result_.instructions[id];
  }

  /// The floating-point operations instruction `id` performs (a matmul's 2·K·M·N).
  void set_flops(std::uint32_t id, std::uint64_t flops) noexcept { result_.instructions[id].flops = flops; }

  std::size_t open_phase(std::string name) {
    phase_span ph;
    ph.name = std::move(name);
    ph.depth = static_cast<std::uint32_t>(open_.size());
    ph.parent = open_.empty() ? -1 : static_cast<std::int32_t>(open_.back());
    ph.start_ps = ph.end_ps = end_ps_;  // an empty phase sits where the timeline is so far
    result_.phases.push_back(std::move(ph));
    open_.push_back(result_.phases.size() - 1);
    return result_.phases.size() - 1;
  }

  void close_phase(std::size_t index) noexcept {
    // RAII closes phases innermost first; closing an outer one also closes what it contains.
    while (!open_.empty()) {
      const auto top = open_.back();
      open_.pop_back();
      if (top == index) break;
    }
  }

  /// The finished timeline: counters sampled, busy times summed.
  execution finish() {
    sbuf_->close();
    psum_->close();
    result_.duration_ps = end_ps_;
    for (const executed_instruction& ins : result_.instructions) {
      result_.flops += ins.flops;
      if (ins.engine.kind == engine_kind::dma) result_.hbm_bytes += ins.bytes;
    }
    for (std::size_t i = 0; i < engines_.size(); ++i) {
      if (engines_[i].count == 0) continue;
      engine_busy b;
      b.engine = i < 5 ? engine_id{static_cast<engine_kind>(i), 0}
                       : engine_id::dma_queue(static_cast<std::uint16_t>(i - 5));
      b.busy_ps = engines_[i].busy_ps;
      b.instructions = engines_[i].count;
      result_.busy.push_back(b);
    }
    auto& c = result_.counters;
    sbuf_->samples(c);
    psum_->samples(c);
    c.push_back({counter_names::hbm_used, 0, static_cast<double>(hbm_used_)});
    if (end_ps_ > 0) c.push_back({counter_names::hbm_used, end_ps_, static_cast<double>(hbm_used_)});
    dma_bandwidth_samples(c);
    std::stable_sort(c.begin(), c.end(),
                     [](const counter_sample& a, const counter_sample& b) { return a.t_ps < b.t_ps; });
    return std::move(result_);
  }

 private:
  struct engine_state {
    std::int64_t free_ps = 0;
    std::int64_t last = -1;
    std::int64_t busy_ps = 0;
    std::uint32_t count = 0;
  };

  // The sum over DMA queues of bytes / duration of the transfers in flight, in GB/s (bytes/ns).
  void dma_bandwidth_samples(std::vector<counter_sample>& out) const {
    struct edge {
      std::int64_t t_ps;
      double delta;
    };
    std::vector<edge> edges;
    for (const auto& ins : result_.instructions) {
      if (ins.engine.kind != engine_kind::dma || ins.duration_ps() <= 0) continue;
      const double gbps = static_cast<double>(ins.bytes) * 1000.0 / static_cast<double>(ins.duration_ps());
      edges.push_back({ins.start_ps, gbps});
      edges.push_back({ins.end_ps, -gbps});
    }
    out.push_back({counter_names::dma_bandwidth, 0, 0.0});
    std::stable_sort(edges.begin(), edges.end(),
                     [](const edge& a, const edge& b) { return a.t_ps < b.t_ps; });
    double v = 0;
    std::size_t first = out.size() - 1;
    for (std::size_t i = 0; i < edges.size(); ++i) {
      v += edges[i].delta;
      if (i + 1 < edges.size() && edges[i + 1].t_ps == edges[i].t_ps) continue;
      if (v < 1e-6 && v > -1e-6) v = 0;  // rounding residue once every transfer ended
      if (out.size() > first && out.back().t_ps == edges[i].t_ps)
        out.back().value = v;
      else
        out.push_back({counter_names::dma_bandwidth, edges[i].t_ps, v});
    }
  }

  core_params params_;
  std::uint64_t run_;
  std::uint64_t hbm_used_;
  std::shared_ptr<memory_pool> sbuf_;
  std::shared_ptr<memory_pool> psum_;
  std::vector<engine_state> engines_;
  std::vector<std::size_t> open_ = {};
  std::int64_t end_ps_ = 0;
  execution result_ = {};
};

}  // namespace detail
}  // namespace sim
}  // namespace v1
}  // namespace strata
