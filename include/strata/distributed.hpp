// strata/distributed.hpp: which rank of a distributed job a process is, as torch.distributed
// describes it: what a trace carries as Kineto's `distributedInfo`, so that torch's tools and
// strata's tell the ranks of a job apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {
inline namespace v1 {

/// One process group of a job, as Kineto's `distributedInfo.pg_config` lists it.
struct process_group {
  std::string name = {};            ///< `pg_name`: torch numbers them, "0" for the default group
  std::string description = {};     ///< `pg_desc`, e.g. "default_pg"
  std::string backend_config = {};  ///< `backend_config`, e.g. "neuron:ccom" or "cuda:nccl"
  std::vector<int> ranks = {};      ///< the global ranks of its members, in group order
};

/// The process's place in a distributed job. `rank` < 0: not part of one (a trace then carries
/// no `distributedInfo`). A profiler whose config leaves it unset reads the environment that
/// torchrun and other launchers set (`distributed_from_env`).
///
/// **Example**
/// ```cpp
/// strata::profiler prof({.distributed = {.rank = 1, .world_size = 4, .backend = "ccom"}});
/// ```
struct distributed_info {
  int rank = -1;         ///< the global rank; < 0: none
  int local_rank = -1;   ///< the rank on its host; < 0: not known
  int world_size = 0;    ///< ranks in the job
  std::string backend = {};  ///< the collective backend, e.g. "ccom" (Neuron), "nccl", "gloo"
  /// The job's process groups; empty: one default group of every rank is assumed, as
  /// torch.distributed creates it.
  std::vector<process_group> groups = {};

  bool known() const noexcept { return rank >= 0; }
};

}  // namespace v1
}  // namespace strata
