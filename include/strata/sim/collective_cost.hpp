// strata/sim/collective_cost.hpp: how long a collective takes between simulated NeuronCores: a
// ring or tree over links of a given bandwidth and latency per hop. The links' figures are
// cited in docs/simulator.md; the formulas are pure, in integer picoseconds, unit tested.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "strata/error.hpp"
#include "strata/sim/core_params.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// The collectives of torch.distributed the simulator runs (sums for the reducing ones).
enum class collective_kind : std::uint8_t { all_reduce, all_gather, reduce_scatter, send, recv };

/// torch's name of `k` as Kineto's `Collective name` arg carries it: "allreduce",
/// "allgather", "reduce_scatter", "send", "recv".
constexpr std::string_view collective_name(collective_kind k) noexcept {
  switch (k) {
    case collective_kind::all_reduce: return "allreduce";
    case collective_kind::all_gather: return "allgather";
    case collective_kind::reduce_scatter: return "reduce_scatter";
    case collective_kind::send: return "send";
    case collective_kind::recv: return "recv";
  }
  return "?";
}

/// How the ranks pass a collective's data: around a ring (bandwidth-optimal) or up and down a
/// binary tree (fewer hops: better for small messages); `automatic` takes the quicker.
enum class collective_algorithm : std::uint8_t { ring, tree, automatic };

constexpr std::string_view to_string(collective_algorithm a) noexcept {
  return a == collective_algorithm::ring ? "ring" : a == collective_algorithm::tree ? "tree" : "automatic";
}

/// One hop between two ranks: what a link moves per second, and what each transfer over it
/// costs before the first byte arrives.
struct collective_link {
  std::string_view name = {};  ///< "NeuronLink-v2", "EFA"
  double bytes_per_s = 0;
  double latency_ns = 0;
};

/// The device-to-device link between ranks on one instance: NeuronLink-v2 (trn1) or -v3
/// (trn2), one of the device's links; the hop latency is one DMA transfer's fixed latency.
constexpr collective_link neuronlink(core_generation g) noexcept {
  const core_params p = params_for(g);
  if (g == core_generation::trn1) return {"NeuronLink-v2", 192e9, p.dma_fixed_latency_ns};  // assumption
  return {"NeuronLink-v3", 1.28e12 / 4, p.dma_fixed_latency_ns};  // 1.28 TB/s over 4 links
}

/// The network between instances: EFA, one device's share of the instance's bandwidth.
constexpr collective_link efa(core_generation g) noexcept {
  // trn1.32xlarge: 800 Gbps for 16 devices; trn2: trn1n's 1600 Gbps for 16 (an assumption).
  if (g == core_generation::trn1) return {"EFA", 800e9 / 8 / 16, 10'000};
  return {"EFA", 1600e9 / 8 / 16, 10'000};
}

/// What one rank's collective moves and where: `bytes` is the whole message (all_reduce: the
/// buffer; all_gather: the gathered output; reduce_scatter: the input before scattering;
/// send/recv: the message), `ranks` the group's size.
struct collective_shape {
  collective_kind kind = collective_kind::all_reduce;
  std::uint64_t bytes = 0;
  std::uint32_t ranks = 1;
};

namespace detail {

/// `steps` hops of `chunk` bytes each, one after the other.
inline std::int64_t hops_ps(std::uint64_t steps, std::uint64_t chunk, const collective_link& link) {
  const auto latency = static_cast<std::int64_t>(std::llround(link.latency_ns * 1000.0));
  const auto transfer = static_cast<std::int64_t>(std::llround(static_cast<double>(chunk) * 1e12 / link.bytes_per_s));
  return static_cast<std::int64_t>(steps) * (latency + transfer);
}

inline std::uint64_t ceil_log2(std::uint32_t n) noexcept {
  std::uint64_t levels = 0;
  while ((std::uint64_t{1} << levels) < n) ++levels;
  return levels;
}

}  // namespace detail

/// The algorithm `automatic` picks for `s` (ring unless a tree is strictly quicker; only
/// all_reduce has a tree), or `a` itself when it is not `automatic`.
collective_algorithm chosen_algorithm(const collective_shape& s, const collective_link& link,
                                      collective_algorithm a);

/// Picoseconds from the moment every rank has arrived to the end of the collective.
///
/// - ring all_reduce: 2(n-1) hops of ceil(bytes/n) (a reduce-scatter then an all-gather);
/// - ring all_gather, reduce_scatter: n-1 hops of ceil(bytes/n);
/// - tree all_reduce: 2·ceil(log2 n) hops of the whole buffer (reduce up, broadcast down);
///   all_gather and reduce_scatter have no tree and run as a ring;
/// - send/recv: one hop of the message.
///
/// A hop costs `latency_ns` plus its bytes at `bytes_per_s`, each rounded to the picosecond.
/// One rank, or no bytes, costs nothing.
///
/// **Example**
/// ```cpp
/// // 1 MiB all-reduced by 4 trn2 ranks over NeuronLink-v3: 6 hops of 600 ns + 256 KiB at 320 GB/s
/// std::int64_t ps = sim::collective_ps({sim::collective_kind::all_reduce, 1 << 20, 4},
///                                      sim::neuronlink(sim::core_generation::trn2));  // 8'515'200
/// ```
inline std::int64_t collective_ps(const collective_shape& s, const collective_link& link,
                                  collective_algorithm a = collective_algorithm::automatic) {
  if (!(link.bytes_per_s > 0) || !(link.latency_ns >= 0))
    throw error("sim: collective: a link needs a positive bandwidth and a latency of 0 or more");
  if (s.ranks == 0) throw error("sim: collective: a group needs at least one rank");
  if (s.ranks == 1 || s.bytes == 0) return 0;
  const std::uint64_t n = s.ranks;
  const std::uint64_t chunk = (s.bytes + n - 1) / n;
  switch (s.kind) {
    case collective_kind::send:
    case collective_kind::recv: return detail::hops_ps(1, s.bytes, link);
    case collective_kind::all_gather:
    case collective_kind::reduce_scatter: return detail::hops_ps(n - 1, chunk, link);
    case collective_kind::all_reduce: break;
  }
  const std::int64_t ring = detail::hops_ps(2 * (n - 1), chunk, link);
  const std::int64_t tree = detail::hops_ps(2 * detail::ceil_log2(s.ranks), s.bytes, link);
  if (a == collective_algorithm::ring) return ring;
  if (a == collective_algorithm::tree) return tree;
  return std::min(ring, tree);
}

inline collective_algorithm chosen_algorithm(const collective_shape& s, const collective_link& link,
                                             collective_algorithm a) {
  if (a != collective_algorithm::automatic) return s.kind == collective_kind::all_reduce ? a : collective_algorithm::ring;
  if (s.kind != collective_kind::all_reduce) return collective_algorithm::ring;
  return collective_ps(s, link, collective_algorithm::tree) < collective_ps(s, link, collective_algorithm::ring)
             ? collective_algorithm::tree
             : collective_algorithm::ring;
}

}  // namespace sim
}  // namespace v1
}  // namespace strata
