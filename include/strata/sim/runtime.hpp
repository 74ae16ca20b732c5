// strata/sim/runtime.hpp: the runtime layer in front of simulated NeuronCores: programs
// compiled once and cached, per-core execution queues served by a scheduler thread each,
// host<->device copies, wait and synchronize; all recorded on the runtime layer.
//
//   caller thread                          scheduler thread of core k          core k's process
//   nrt::load ─(first use)─ nrt::compile
//   nrt::submit ──enqueue──▶ queue ──────▶ nrt::execute ─ record_execution ─▶ Kernel, engines
//   nrt::wait / nrt::synchronize ◀──done──┘                  queue waits ─────▶ Queue lanes
//
// Device time follows the model, not the simulator's own CPU time: core k runs one kernel at a
// time, and a kernel starts when it is submitted or when the core finishes the kernel before
// it, whichever is later, and lasts its simulated duration. So the device timeline shows what
// the modelled hardware would do with the host's real dispatch pace. The scheduler completes a
// submission no earlier than its simulated end (host waits never end before the device would
// have), and no earlier than the simulator has computed its values: when that takes the CPU
// longer, host waits show the difference.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/clock.hpp"
#include "strata/device.hpp"
#include "strata/error.hpp"
#include "strata/record.hpp"
#include "strata/scope.hpp"
#include "strata/sim/core_params.hpp"
#include "strata/sim/cost_model.hpp"
#include "strata/sim/execution.hpp"
#include "strata/sim/hbm_tensor.hpp"
#include "strata/sim/kernel.hpp"
#include "strata/sim/neuron_core.hpp"
#include "strata/sim/record_execution.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// A kernel as the runtime runs it: reads `inputs`, writes `outputs` (HBM tensors of the core
/// it runs on), issuing instructions on `k`.
using kernel_fn =
    std::function<void(kernel& k, std::span<const hbm_tensor> inputs, std::span<const hbm_tensor> outputs)>;

struct runtime_config {
  std::uint32_t cores = 1;
  core_generation generation = core_generation::trn1;
  /// Figures of another core than `generation`'s table entry (a what-if, or a test that needs
  /// long DMAs); unset: `params_for(generation)`.
  std::optional<core_params> params = {};
  cost_params costs = {};

  core_params core() const { return params ? *params : params_for(generation); }
};

/// A compiled program (the role of a NEFF): made by `runtime::load` once per key.
class program {
 public:
  const std::string& name() const noexcept { return name_; }
  const std::string& key() const noexcept { return key_; }
  /// Instructions the compile run issued.
  std::size_t instructions() const noexcept { return instructions_; }
  const std::vector<shape2>& input_shapes() const noexcept { return inputs_; }
  const std::vector<shape2>& output_shapes() const noexcept { return outputs_; }

 private:
  friend class runtime;
  std::string name_, key_;
  kernel_fn body_;
  std::vector<shape2> inputs_, outputs_;
  std::size_t instructions_ = 0;
};
using program_ptr = std::shared_ptr<const program>;

namespace detail {

/// What a submission shares between the caller and the scheduler.
struct submission_state {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr failure;
  execution timeline;
  std::int64_t submit_ns = 0;        ///< steady ns when it was queued
  std::int64_t device_start_ns = 0;  ///< when the core started it
  std::int64_t device_end_ns = 0;
  std::uint64_t correlation_id = 0;
  std::uint32_t core = 0;
  program_ptr prog;
  std::vector<hbm_tensor> inputs, outputs;
  /// Device work that is not a kernel (a collective): given when the core reaches it, returns
  /// when it ends; empty for a kernel.
  std::function<std::int64_t(std::int64_t)> work;
};

/// A runtime-layer descriptor with a fixed name, interned once.
inline const site* runtime_site(std::string_view name, record_kind kind = record_kind::scope) {
  return intern(layer::runtime, name, kind);
}

/// A runtime-layer descriptor carrying one small JSON fragment as args (a program's name, a
/// copy's bytes): interned once per distinct fragment.
inline const site* runtime_site_with(std::string_view name, std::string_view args_json) {
  return intern_site(*runtime_site(name), name, args_json);
}

inline std::string program_args(std::string_view program_name) {
  return "\"program\":" + json_string(program_name);
}

/// Waits until steady_clock reaches `t_ns`: sleeps most of a long wait, yields the rest.
inline void wait_until_ns(std::int64_t t_ns) {
  for (;;) {
    const std::int64_t left = t_ns - clock::steady_ns();
    if (left <= 0) return;
    if (left > 200'000)
      std::this_thread::sleep_for(std::chrono::nanoseconds(left - 100'000));
    else
      std::this_thread::yield();
  }
}

}  // namespace detail

/// A queued or finished execution of a program. Copies refer to the same submission.
class submission {
 public:
  submission() = default;
  bool valid() const noexcept { return s_ != nullptr; }
  /// Whether the core has finished it (successfully or not).
  bool done() const {
    std::lock_guard lock(s_->mutex);
    return s_->done;
  }
  std::uint64_t correlation_id() const noexcept { return s_->correlation_id; }
  std::uint32_t core() const noexcept { return s_->core; }
  /// The timeline, once done (`runtime::wait` first).
  const execution& timeline() const noexcept { return s_->timeline; }
  std::int64_t device_start_ns() const noexcept { return s_->device_start_ns; }
  std::int64_t device_end_ns() const noexcept { return s_->device_end_ns; }
  /// Time it spent queued before its core took it.
  std::int64_t queue_wait_ns() const noexcept { return s_->device_start_ns - s_->submit_ns; }

 private:
  friend class runtime;
  explicit submission(std::shared_ptr<detail::submission_state> s) noexcept : s_(std::move(s)) {}
  std::shared_ptr<detail::submission_state> s_;
};

/// Counts since the runtime was made.
struct runtime_stats {
  std::uint64_t compiles = 0;
  std::uint64_t cache_hits = 0;
  std::uint64_t submissions = 0;
  std::uint64_t bytes_to_device = 0;
  std::uint64_t bytes_to_host = 0;
  std::int64_t queue_wait_ns = 0;     ///< summed over submissions
  std::int64_t device_busy_ns = 0;    ///< summed simulated kernel durations
};

/// Simulated NeuronCores behind a runtime. Thread-safe: any thread may load, submit and wait.
///
/// **Example**
/// ```cpp
/// sim::runtime rt({.cores = 2});
/// auto x = rt.to_device(0, "x", data, {128, 512});
/// auto y = rt.empty(0, "y", {128, 512});
/// auto relu = rt.load("relu[128x512]", "relu", body, {{128, 512}}, {{128, 512}});
/// rt.wait(rt.submit(0, relu, {x}, {y}, strata::new_correlation_id()));
/// std::vector<float> out = rt.to_host(y);
/// ```
class runtime {
 public:
  explicit runtime(const runtime_config& config = {}) : config_(config) {
    if (config.cores == 0 || config.cores > 64)
      throw error("sim: runtime_config::cores must be between 1 and 64; got " +
                  std::to_string(config.cores));
    for (std::uint32_t c = 0; c < config.cores; ++c)
      cores_.push_back(std::make_unique<core_slot>(c, config.core(), config.costs));
    for (auto& slot : cores_) slot->thread = std::thread([this, s = slot.get()] { serve(*s); });
  }

  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// Finishes every queued submission, then stops the scheduler threads.
  ~runtime() {
    for (auto& slot : cores_) {
      {
        std::lock_guard lock(slot->mutex);
        slot->stopping = true;
      }
      slot->work_cv.notify_all();
    }
    for (auto& slot : cores_) slot->thread.join();
  }

  std::uint32_t core_count() const noexcept { return static_cast<std::uint32_t>(cores_.size()); }
  const core_params& params() const noexcept { return cores_.front()->core.params(); }
  /// When core `core` finishes the last kernel it has taken (steady_clock ns, device model):
  /// after `synchronize(core)`, the end of everything submitted so far.
  std::int64_t device_free_ns(std::uint32_t core) {
    core_slot& s = slot(core, "device_free_ns");
    std::lock_guard lock(s.mutex);
    return s.device_free_ns;
  }

  runtime_stats stats() const {
    std::lock_guard lock(stats_mutex_);
    return stats_;
  }

  // --- memory --------------------------------------------------------------------------------

  /// A new tensor in core `core`'s HBM holding `data` (`nrt::tensor_write`, with its bytes).
  hbm_tensor to_device(std::uint32_t core, std::string name, std::span<const float> data, shape2 shape,
                       std::uint64_t correlation_id = 0) {
    core_slot& s = slot(core, "to_device");
    const std::uint64_t bytes = data.size() * sizeof(float);
    scope rec(runtime_site_bytes("nrt::tensor_write", bytes), correlation_id);
    hbm_tensor t = s.core.upload(std::move(name), data, shape);
    count([&](runtime_stats& st) { st.bytes_to_device += bytes; });
    return t;
  }

  /// Bytes held by core `core`'s live HBM tensors, now and at most since the runtime began.
  std::uint64_t hbm_used(std::uint32_t core) { return slot(core, "hbm_used").core.hbm_used(); }
  std::uint64_t hbm_peak(std::uint32_t core) { return slot(core, "hbm_peak").core.hbm_peak(); }

  /// A new zero-filled tensor in core `core`'s HBM.
  hbm_tensor empty(std::uint32_t core, std::string name, shape2 shape) {
    core_slot& s = slot(core, "empty");
    return s.core.alloc_hbm(std::move(name), shape);
  }

  /// Copies `t` to the host (`nrt::tensor_read`) after the work queued on its core so far.
  std::vector<float> to_host(const hbm_tensor& t, std::uint64_t correlation_id = 0) {
    const std::uint32_t core = core_of(t, "to_host");
    synchronize(core);
    scope rec(runtime_site_bytes("nrt::tensor_read", t.bytes()), correlation_id);
    count([&](runtime_stats& st) { st.bytes_to_host += t.bytes(); });
    return t.to_vector();
  }

  // --- programs ------------------------------------------------------------------------------

  /// The program for `key`, compiled on first use (`nrt::compile`, inside `nrt::load`) and
  /// cached: later loads of the key reuse it, as a NEFF is compiled once per graph. Compiling
  /// runs `body` once on zero-filled tensors of the given shapes on a scratch core, so a kernel
  /// that breaks a hardware limit fails here with the instruction's `strata::error`.
  program_ptr load(const std::string& key, std::string name, kernel_fn body,
                   std::vector<shape2> input_shapes, std::vector<shape2> output_shapes) {
    scope rec(detail::runtime_site("nrt::load"));
    std::lock_guard lock(programs_mutex_);
    if (auto it = programs_.find(key); it != programs_.end()) {
      count([](runtime_stats& st) { ++st.cache_hits; });
      return it->second;
    }
    scope compile_rec(detail::runtime_site_with("nrt::compile", detail::program_args(name)));
    auto p = std::make_shared<program>();
    p->name_ = std::move(name);
    p->key_ = key;
    p->body_ = std::move(body);
    p->inputs_ = std::move(input_shapes);
    p->outputs_ = std::move(output_shapes);
    neuron_core scratch(config_.core(), config_.costs);
    scratch.set_memory_index(-1);  // a trial run's tensors are no core's memory
    std::vector<hbm_tensor> in, out;
    for (const shape2& s : p->inputs_) in.push_back(scratch.alloc_hbm("input", s));
    for (const shape2& s : p->outputs_) out.push_back(scratch.alloc_hbm("output", s));
    const execution trial = scratch.run(p->name_, [&](kernel& k) {
      p->body_(k, std::span<const hbm_tensor>(in), std::span<const hbm_tensor>(out));
    });
    p->instructions_ = trial.instructions.size();
    programs_.emplace(key, p);
    count([](runtime_stats& st) { ++st.compiles; });
    return p;
  }

  // --- execution -----------------------------------------------------------------------------

  /// Queues `prog` on core `core` (`nrt::submit`) and returns at once. `correlation_id` (from
  /// the op that caused it) reaches the scheduler's `nrt::execute` and every device record.
  submission submit(std::uint32_t core, const program_ptr& prog, std::vector<hbm_tensor> inputs,
                    std::vector<hbm_tensor> outputs, std::uint64_t correlation_id = 0) {
    core_slot& s = slot(core, "submit");
    if (!prog) throw error("sim: submit: no program (load one first)");
    check_tensors(s, *prog, inputs, prog->inputs_, "input");
    check_tensors(s, *prog, outputs, prog->outputs_, "output");
    scope rec(detail::runtime_site_with("nrt::submit", detail::program_args(prog->name())), correlation_id);
    auto st = std::make_shared<detail::submission_state>();
    st->prog = prog;
    st->inputs = std::move(inputs);
    st->outputs = std::move(outputs);
    st->correlation_id = correlation_id;
    st->core = core;
    st->submit_ns = clock::steady_ns();
    {
      std::lock_guard lock(s.mutex);
      s.queue.push_back(st);
      ++s.pending;
    }
    s.work_cv.notify_one();
    count([](runtime_stats& x) { ++x.submissions; });
    return submission(st);
  }

  /// Queues device work that is not a kernel on core `core` (`nrt::submit` with `args.program`
  /// = `name`), in order with its kernels: the scheduler calls `work(start_ns)` with when the
  /// core reaches it (`max(submit, previous end)`, steady ns) and the work returns when it ends
  /// on the device; the work records its own device records (a collective does,
  /// strata/sim/collectives.hpp). An exception it throws is the submission's failure.
  submission submit_work(std::uint32_t core, std::string_view name, std::function<std::int64_t(std::int64_t)> work,
                         std::uint64_t correlation_id = 0) {
    core_slot& s = slot(core, "submit_work");
    if (!work) throw error("sim: submit_work: no work");
    scope rec(detail::runtime_site_with("nrt::submit", detail::program_args(name)), correlation_id);
    auto st = std::make_shared<detail::submission_state>();
    st->work = std::move(work);
    st->correlation_id = correlation_id;
    st->core = core;
    st->submit_ns = clock::steady_ns();
    {
      std::lock_guard lock(s.mutex);
      s.queue.push_back(st);
      ++s.pending;
    }
    s.work_cv.notify_one();
    count([](runtime_stats& x) { ++x.submissions; });
    return submission(st);
  }

  /// Blocks until `sub` is done (`nrt::wait`); rethrows the error its kernel raised.
  void wait(const submission& sub) {
    if (!sub.valid()) throw error("sim: wait: an empty submission");
    scope rec(detail::runtime_site("nrt::wait"), sub.correlation_id());
    std::unique_lock lock(sub.s_->mutex);
    sub.s_->done_cv.wait(lock, [&] { return sub.s_->done; });
    if (sub.s_->failure) std::rethrow_exception(sub.s_->failure);
  }

  /// Blocks until everything queued on `core` so far is done (`nrt::synchronize`).
  void synchronize(std::uint32_t core) {
    core_slot& s = slot(core, "synchronize");
    scope rec(detail::runtime_site("nrt::synchronize"));
    std::unique_lock lock(s.mutex);
    s.idle_cv.wait(lock, [&] { return s.pending == 0; });
  }

  /// Blocks until every core is idle.
  void synchronize() {
    for (std::uint32_t c = 0; c < core_count(); ++c) synchronize(c);
  }

 private:
  struct core_slot {
    core_slot(std::uint32_t i, const core_params& p, const cost_params& c) : index(i), core(p, c) {
      core.set_memory_index(static_cast<int>(i));
    }
    std::uint32_t index;
    neuron_core core;
    // Only the scheduler runs kernels on `core`. Allocating HBM tensors from other threads at
    // the same time is safe (the HBM account is atomic), so a dispatch never waits for the
    // simulator to finish computing the kernel before it.
    std::mutex core_mutex;
    // The queue, guarded by `mutex`.
    std::mutex mutex;
    std::condition_variable work_cv, idle_cv;
    std::deque<std::shared_ptr<detail::submission_state>> queue;
    std::size_t pending = 0;  // queued or running
    bool stopping = false;
    std::int64_t device_free_ns = 0;  // written by the scheduler, under `mutex`
    // Scheduler-thread state.
    std::vector<std::int64_t> lane_free_ns;  // queue-wait lanes: when each is free again
    std::thread thread;
  };

  static const site* runtime_site_bytes(std::string_view name, std::uint64_t bytes) {
    return detail::runtime_site_with(name, fmt::format("\"bytes\":{}", bytes));
  }

  core_slot& slot(std::uint32_t core, std::string_view what) {
    if (core >= cores_.size())
      throw error(fmt::format("sim: {}: core {} does not exist (the runtime has {})", what, core,
                              cores_.size()));
    return *cores_[core];
  }

  std::uint32_t core_of(const hbm_tensor& t, std::string_view what) const {
    if (!t.valid()) throw error(fmt::format("sim: {}: an empty tensor", what));
    for (const auto& s : cores_)
      if (s->core.owns(t)) return s->index;
    throw error(fmt::format("sim: {}: tensor '{}' does not belong to this runtime", what, t.name()));
  }

  static void check_tensors(const core_slot& s, const program& p, const std::vector<hbm_tensor>& got,
                            const std::vector<shape2>& want, std::string_view role) {
    if (got.size() != want.size())
      throw error(fmt::format("sim: submit: program '{}' takes {} {}s, got {}", p.name(), want.size(),
                              role, got.size()));
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!got[i].valid() || !s.core.owns(got[i]))
        throw error(fmt::format("sim: submit: program '{}': {} {} is not a tensor of core {}",
                                p.name(), role, i, s.index));
      if (got[i].shape() != want[i])
        throw error(fmt::format("sim: submit: program '{}': {} {} is [{}, {}], compiled for [{}, {}]",
                                p.name(), role, i, got[i].rows(), got[i].cols(), want[i].rows,
                                want[i].cols));
    }
  }

  template <class F>
  void count(F&& f) {
    std::lock_guard lock(stats_mutex_);
    f(stats_);
  }

  // The scheduler of one core: takes submissions in order and runs them one at a time.
  void serve(core_slot& s) {
    set_thread_name(fmt::format("nrt core {} scheduler", s.index));
    const site* execute_site = detail::runtime_site("nrt::execute");
    for (;;) {
      std::shared_ptr<detail::submission_state> st;
      {
        std::unique_lock lock(s.mutex);
        s.work_cv.wait(lock, [&] { return s.stopping || !s.queue.empty(); });
        if (s.queue.empty()) return;  // stopping, and everything queued is done
        st = std::move(s.queue.front());
        s.queue.pop_front();
      }
      run_one(s, *st, execute_site);
      {
        std::lock_guard lock(st->mutex);
        st->done = true;
      }
      st->done_cv.notify_all();
      {
        std::lock_guard lock(s.mutex);
        --s.pending;
      }
      s.idle_cv.notify_all();
    }
  }

  void run_one(core_slot& s, detail::submission_state& st, const site* execute_site) {
    scope rec(execute_site, st.correlation_id);
    const std::int64_t taken_ns = clock::steady_ns();
    if (st.work) {
      run_work(s, st);
      return;
    }
    try {
      std::lock_guard lock(s.core_mutex);
      st.timeline = s.core.run(st.prog->name(), [&](kernel& k) {
        st.prog->body_(k, std::span<const hbm_tensor>(st.inputs), std::span<const hbm_tensor>(st.outputs));
      });
    } catch (...) {
      st.failure = std::current_exception();
      st.device_start_ns = st.device_end_ns = taken_ns;
      return;
    }
    st.device_start_ns = std::max(st.submit_ns, s.device_free_ns);
    st.device_end_ns = st.device_start_ns + (st.timeline.duration_ps + 500) / 1000;
    {
      std::lock_guard lock(s.mutex);
      s.device_free_ns = st.device_end_ns;
    }
    try {
      record_queue_wait(s, st);
      record_execution(st.timeline, {.core = s.index, .start_ns = st.device_start_ns,
                                     .correlation_id = st.correlation_id});
    } catch (...) {
      // Out of memory while building records: the run itself stands, its records are lost.
    }
    count([&](runtime_stats& x) {
      x.queue_wait_ns += st.device_start_ns - st.submit_ns;
      x.device_busy_ns += st.device_end_ns - st.device_start_ns;
    });
    detail::wait_until_ns(st.device_end_ns);  // the host learns of it when the device is done
  }

  // Device work other than a kernel: it starts when the core is free and ends when it says.
  void run_work(core_slot& s, detail::submission_state& st) {
    st.device_start_ns = std::max(st.submit_ns, s.device_free_ns);
    try {
      st.device_end_ns = std::max(st.device_start_ns, st.work(st.device_start_ns));
    } catch (...) {
      st.failure = std::current_exception();
      st.device_end_ns = st.device_start_ns;
      return;
    }
    {
      std::lock_guard lock(s.mutex);
      s.device_free_ns = st.device_end_ns;
    }
    try {
      record_queue_wait(s, st);
    } catch (...) {
    }
    count([&](runtime_stats& x) {
      x.queue_wait_ns += st.device_start_ns - st.submit_ns;
      x.device_busy_ns += st.device_end_ns - st.device_start_ns;
    });
    detail::wait_until_ns(st.device_end_ns);
  }

  // Time in the queue, in the core's process: waits overlap when several submissions are
  // queued, so each goes to the first lane free at its submit time.
  void record_queue_wait(core_slot& s, const detail::submission_state& st) {
    if (st.device_start_ns <= st.submit_ns) return;
    std::size_t lane = 0;
    while (lane < s.lane_free_ns.size() && s.lane_free_ns[lane] > st.submit_ns) ++lane;
    if (lane == s.lane_free_ns.size()) s.lane_free_ns.push_back(0);
    s.lane_free_ns[lane] = st.device_start_ns;
    static const site* wait_site = [] {
      const site like{nullptr, "", 0, layer::runtime, record_kind::scope, nullptr, nullptr, "runtime.queue"};
      return intern_site(like, "queue wait");
    }();
    const record r{static_cast<std::uint64_t>(st.submit_ns), static_cast<std::uint64_t>(st.device_start_ns),
                   wait_site, st.correlation_id};
    const std::string process = core_process_name(s.index, s.core.params().generation);
    const std::string track = fmt::format("Queue {}", lane);
    append_device_records({.core = s.index, .core_name = process,
                           .track = queue_track_base + static_cast<std::uint32_t>(lane), .track_name = track},
                          {&r, 1});
  }

  /// Queue lanes come after the engines in a core's process.
  static constexpr std::uint32_t queue_track_base = 100;

  runtime_config config_;
  std::vector<std::unique_ptr<core_slot>> cores_;
  std::mutex programs_mutex_;
  std::map<std::string, program_ptr> programs_;
  mutable std::mutex stats_mutex_;
  runtime_stats stats_;
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
