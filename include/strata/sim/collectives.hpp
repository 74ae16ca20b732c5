// strata/sim/collectives.hpp: collectives issued from a host thread and run on a simulated
// NeuronCore's collective queue, as torch.distributed's calls reach a device:
//
//   caller: c10d::allreduce_ ─ record_param_comms ─ nrt::submit ──▶ core k's scheduler, in order
//           (Kineto's collective args on both)                      with the core's kernels
//   core k: "Collective queue" track: AllReduce, from when the queue reached it to the end;
//           inside it "wait for ranks" (until the last rank arrived) and "transfer" (the cost model)
//
// The values are computed (communicator.hpp exchanges them with the other ranks) and written to
// the output tensor before the submission completes. Every record carries the call's
// correlation id, so the trace flows c10d op -> nrt::submit -> the collective, and key_averages
// gives the collective's device time (waiting included, as a GPU's NCCL kernel shows it) to the
// c10d op.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "strata/device.hpp"
#include "strata/error.hpp"
#include "strata/record.hpp"
#include "strata/scope.hpp"
#include "strata/sim/collective_cost.hpp"
#include "strata/sim/communicator.hpp"
#include "strata/sim/hbm_tensor.hpp"
#include "strata/sim/record_execution.hpp"
#include "strata/sim/runtime.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// The trace track of a core's collective queue, after its engines and before its queue lanes.
inline constexpr std::uint32_t collective_track = 90;
inline constexpr std::string_view collective_track_name = "Collective queue";

namespace detail {

/// Writes a collective's result into an HBM tensor (on the core's scheduler thread, once the
/// values are known).
struct hbm_tensor_writer {
  static void write(const hbm_tensor& t, std::span<const float> values) {
    std::copy(values.begin(), values.end(), t.s_->values.begin());
  }
};

/// torch's dtype names as Kineto's `dtype` arg writes them.
constexpr std::string_view kineto_dtype(dtype t) noexcept { return t == dtype::bf16 ? "BFloat16" : "Float"; }

/// Kineto's collective args (the members of a JSON object).
inline std::string collective_args(const communicator& comm, collective_kind kind, dtype type,
                                   std::size_t in_elements, std::size_t out_elements, std::uint64_t seq) {
  const process_group& g = comm.group();
  return fmt::format(
      "\"Collective name\":{},\"dtype\":{},\"In msg nelems\":{},\"Out msg nelems\":{},\"Group size\":{},"
      "\"Process Group Name\":{},\"Process Group Description\":{},\"Process Group Ranks\":{},\"Rank\":{},"
      "\"Seq\":{}",
      json_string(collective_name(kind)), json_string(kineto_dtype(type)), in_elements, out_elements, comm.size(),
      json_string(g.name), json_string(g.description.empty() ? std::string_view("default_pg") : g.description),
      json_string(comm.ranks_text()), comm.rank(), seq);
}

/// torch's host op of a collective.
constexpr std::string_view c10d_name(collective_kind k) noexcept {
  switch (k) {
    case collective_kind::all_reduce: return "c10d::allreduce_";
    case collective_kind::all_gather: return "c10d::allgather_";
    case collective_kind::reduce_scatter: return "c10d::reduce_scatter_";
    case collective_kind::send: return "c10d::send";
    case collective_kind::recv: return "c10d::recv_";
  }
  return "c10d::?";
}

/// The device event's name: "AllReduce (ring)", "Send".
inline std::string device_collective_name(collective_kind k, collective_algorithm a) {
  switch (k) {
    case collective_kind::all_reduce: return fmt::format("AllReduce ({})", to_string(a));
    case collective_kind::all_gather: return "AllGather (ring)";
    case collective_kind::reduce_scatter: return "ReduceScatter (ring)";
    case collective_kind::send: return "Send";
    case collective_kind::recv: return "Recv";
  }
  return "?";
}

/// The collective's records on core `core`'s collective queue: the whole span from the queue's
/// arrival, and inside it the wait for the other ranks and the transfer.
inline void record_collective(std::uint32_t core, core_generation g, std::uint64_t correlation_id,
                              const std::string& args, collective_kind kind, const collective_result& r,
                              std::int64_t arrival_ns, const collective_link& link) {
  if (!device_core_captured(core)) return;
  const site like{nullptr, "", 0, layer::device, record_kind::scope};
  const std::string all_args =
      fmt::format("{},\"algorithm\":{},\"link\":{},\"wait_ns\":{}", args, json_string(to_string(r.algorithm)),
                  json_string(link.name), r.start_ns - arrival_ns);
  const site* whole = intern_site(like, device_collective_name(kind, r.algorithm), all_args);
  const site phase_like{nullptr, "", 0, layer::device, record_kind::scope, nullptr, nullptr, phase_category};
  static const site* wait_site = intern_site(phase_like, "wait for ranks");
  static const site* transfer_site = intern_site(phase_like, "transfer");
  std::vector<record> records;
  const auto at = [](std::int64_t ns) { return static_cast<std::uint64_t>(ns); };
  records.push_back({at(arrival_ns), at(r.end_ns), whole, correlation_id});
  if (r.start_ns > arrival_ns) records.push_back({at(arrival_ns), at(r.start_ns), wait_site, correlation_id});
  records.push_back({at(r.start_ns), at(r.end_ns), transfer_site, correlation_id});
  const std::string process = core_process_name(core, g);
  append_device_records({.core = core, .core_name = process, .track = collective_track,
                         .track_name = collective_track_name},
                        records);
}

inline void check_tensor(const hbm_tensor& t, std::string_view op, std::string_view role) {
  if (!t.valid()) throw error(fmt::format("sim: {}: the {} is an empty tensor", op, role));
}

/// Issues one collective: the host scopes, then the submission whose work runs `exchange` on
/// the scheduler thread and writes the result to `out` (if any).
template <class Exchange>
submission issue(runtime& rt, std::uint32_t core, communicator& comm, collective_kind kind, std::uint32_t peer,
                 const hbm_tensor& in, const hbm_tensor& out, std::size_t in_elements, std::size_t out_elements,
                 std::uint64_t correlation_id, Exchange exchange) {
  const dtype type = in.valid() ? in.type() : out.type();
  const std::uint64_t id = correlation_id != 0 ? correlation_id : new_correlation_id();
  const std::uint64_t seq = comm.issue(kind, peer);
  const std::string args = collective_args(comm, kind, type, in_elements, out_elements, seq);
  const site op_like{nullptr, "", 0, layer::framework, record_kind::scope};
  scope op(intern_site(op_like, c10d_name(kind), args), id);
  scope comms(intern_site(op_like, "record_param_comms", args), id);
  const core_generation g = rt.params().generation;
  const std::uint32_t element_bytes = static_cast<std::uint32_t>(size_of(type));
  return rt.submit_work(
      core, collective_name(kind),
      [&comm, kind, in, out, out_elements, core, g, id, args, exchange, element_bytes](std::int64_t arrival_ns) {
        std::vector<float> result(out_elements);
        const collective_result r = exchange(comm, std::span<float>(result), arrival_ns, element_bytes);
        if (out.valid()) hbm_tensor_writer::write(out, result);
        record_collective(core, g, id, args, kind, r, arrival_ns, comm.config().link);
        return r.end_ns;
      },
      id);
}

}  // namespace detail

/// All-reduces (sums) `in` over the group into `out` (same shape; may be `in` itself) on core
/// `core`'s collective queue, after the work queued on the core so far. Returns at once: wait
/// for the submission (`rt.wait`) before reading `out`. `correlation_id` 0: a new one.
///
/// **Example**
/// ```cpp
/// sim::communicator comm({.job_dir = "job", .rank = rank, .world_size = 2});
/// rt.wait(sim::all_reduce(rt, 0, comm, partial, partial));
/// ```
inline submission all_reduce(runtime& rt, std::uint32_t core, communicator& comm, const hbm_tensor& in,
                             const hbm_tensor& out, std::uint64_t correlation_id = 0) {
  detail::check_tensor(in, "all_reduce", "input");
  detail::check_tensor(out, "all_reduce", "output");
  if (in.shape() != out.shape())
    throw error(fmt::format("sim: all_reduce: the output is [{}, {}], the input [{}, {}]", out.rows(), out.cols(),
                            in.rows(), in.cols()));
  const std::size_t n = in.rows() * in.cols();
  return detail::issue(rt, core, comm, collective_kind::all_reduce, 0, in, out, n, n, correlation_id,
                       [in](communicator& c, std::span<float> result, std::int64_t at, std::uint32_t eb) {
                         return c.all_reduce(in.values(), result, at, eb);
                       });
}

/// Gathers every rank's `in` [R, C] into `out` [size() x R, C], in group order.
inline submission all_gather(runtime& rt, std::uint32_t core, communicator& comm, const hbm_tensor& in,
                             const hbm_tensor& out, std::uint64_t correlation_id = 0) {
  detail::check_tensor(in, "all_gather", "input");
  detail::check_tensor(out, "all_gather", "output");
  if (out.cols() != in.cols() || out.rows() != in.rows() * comm.size())
    throw error(fmt::format("sim: all_gather: the output must be [{}, {}] ({} ranks of [{}, {}]); it is [{}, {}]",
                            in.rows() * comm.size(), in.cols(), comm.size(), in.rows(), in.cols(), out.rows(),
                            out.cols()));
  return detail::issue(rt, core, comm, collective_kind::all_gather, 0, in, out, in.rows() * in.cols(),
                       out.rows() * out.cols(), correlation_id,
                       [in](communicator& c, std::span<float> result, std::int64_t at, std::uint32_t eb) {
                         return c.all_gather(in.values(), result, at, eb);
                       });
}

/// Sums `in` [size() x R, C] over the group and leaves this rank's block of R rows in `out` [R, C].
inline submission reduce_scatter(runtime& rt, std::uint32_t core, communicator& comm, const hbm_tensor& in,
                                 const hbm_tensor& out, std::uint64_t correlation_id = 0) {
  detail::check_tensor(in, "reduce_scatter", "input");
  detail::check_tensor(out, "reduce_scatter", "output");
  if (out.cols() != in.cols() || in.rows() != out.rows() * comm.size())
    throw error(fmt::format("sim: reduce_scatter: the input must be [{}, {}] ({} ranks of [{}, {}]); it is [{}, {}]",
                            out.rows() * comm.size(), out.cols(), comm.size(), out.rows(), out.cols(), in.rows(),
                            in.cols()));
  return detail::issue(rt, core, comm, collective_kind::reduce_scatter, 0, in, out, in.rows() * in.cols(),
                       out.rows() * out.cols(), correlation_id,
                       [in](communicator& c, std::span<float> result, std::int64_t at, std::uint32_t eb) {
                         return c.reduce_scatter(in.values(), result, at, eb);
                       });
}

/// Sends `in` to group rank `peer`; the submission completes once the peer has received it.
inline submission send(runtime& rt, std::uint32_t core, communicator& comm, const hbm_tensor& in,
                       std::uint32_t peer, std::uint64_t correlation_id = 0) {
  detail::check_tensor(in, "send", "input");
  const std::size_t n = in.rows() * in.cols();
  return detail::issue(rt, core, comm, collective_kind::send, peer, in, hbm_tensor{}, n, n, correlation_id,
                       [in, peer](communicator& c, std::span<float>, std::int64_t at, std::uint32_t eb) {
                         return c.send(in.values(), peer, at, eb);
                       });
}

/// Receives into `out` what group rank `peer` sends.
inline submission recv(runtime& rt, std::uint32_t core, communicator& comm, const hbm_tensor& out,
                       std::uint32_t peer, std::uint64_t correlation_id = 0) {
  detail::check_tensor(out, "recv", "output");
  const std::size_t n = out.rows() * out.cols();
  return detail::issue(rt, core, comm, collective_kind::recv, peer, hbm_tensor{}, out, n, n, correlation_id,
                       [peer](communicator& c, std::span<float> result, std::int64_t at, std::uint32_t eb) {
                         return c.recv(result, peer, at, eb);
                       });
}

}  // namespace sim
}  // namespace v1
}  // namespace strata
