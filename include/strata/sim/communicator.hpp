// strata/sim/communicator.hpp: one rank's membership of a process group of simulated ranks, and
// the rendezvous its collectives meet at. The ranks of a group may be threads of one process or
// separate processes on one host: they meet in a file mapped into each of them
// (JOB_DIR/collectives-<group>.shm), through which they exchange their values and the device
// time each rank's queue reached the collective. Every wait has a timeout, and a rank whose
// process has died or that has left the group ends the wait at once with an error naming it.
//
//   rank 0 ──write slot 0, arrived = s──┐        ┌──read every slot, compute, departed = s
//   rank 1 ──write slot 1, arrived = s──┼─ all arrived? ─┤
//   rank 2 ──write slot 2, arrived = s──┘        └── (the same result on every rank)
//
// A slot is rewritten for collective s + 1 only once every rank has departed from s, so each
// rank's slot needs no lock. Sums are taken in rank order, so every rank's result is the same to
// the bit.
#pragma once

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "strata/clock.hpp"
#include "strata/device.hpp"
#include "strata/distributed.hpp"
#include "strata/error.hpp"
#include "strata/sim/collective_cost.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// What a rank needs to join a group.
struct communicator_config {
  /// The job's directory: every rank of a job names the same one, and a job's rendezvous files
  /// live there (made if missing). A new job needs a directory no earlier job left a file in,
  /// or that earlier job's ranks all ended (the last to leave removes the file).
  std::string job_dir = {};
  int rank = -1;  ///< this process's global rank: one of `group.ranks`
  /// The group: its name (letters, digits, `_`, `-`, `.`), its members' global ranks in group
  /// order; empty ranks: 0 .. world_size - 1.
  process_group group = {};
  int world_size = 0;  ///< used when `group.ranks` is empty
  /// The largest message one rank contributes, in floats (a reduce_scatter's input, say);
  /// the same on every rank.
  std::size_t max_elements = std::size_t{1} << 20;
  /// How long a rank waits for the others (to join, to arrive at a collective, to take a send).
  std::chrono::milliseconds timeout{30'000};
  collective_link link = neuronlink(core_generation::trn1);
  collective_algorithm algorithm = collective_algorithm::automatic;
};

/// What one rank's part of a collective gave back.
struct collective_result {
  std::int64_t start_ns = 0;  ///< when the last rank arrived: the transfer's start (device time)
  std::int64_t end_ns = 0;    ///< start + the cost model's duration
  std::uint64_t seq = 0;      ///< the group's count of collectives (p2p: of this pair's messages)
  collective_algorithm algorithm = collective_algorithm::ring;
};

namespace detail {

// The mapped file: a header, then one slot per rank (fields, then two data areas of
// max_elements floats: the collective's and the p2p send's). Fields are read and written with
// std::atomic_ref; the data areas are plain bytes, ordered by the fields' release and acquire.
inline constexpr std::uint64_t rendezvous_magic = 0x53545241'434f4c31ull;  // "STRACOL1"
inline constexpr std::size_t max_group = 64;
inline constexpr std::size_t page = 4096;

struct rendezvous_header {
  std::uint64_t magic;
  std::uint64_t state;  // 0: new, 1: being set up, 2: ready
  std::uint64_t group_size;
  std::uint64_t max_elements;
  std::uint64_t ranks_hash;
  std::uint64_t left;  // ranks that have left; the last one removes the file
};

enum : std::uint64_t { slot_free = 0, slot_joined = 1, slot_left = 2 };

struct rendezvous_slot {
  std::uint64_t pid;
  std::uint64_t membership;  // slot_free, slot_joined, slot_left
  std::uint64_t arrived;     // the collective seq this rank has written its part of
  std::uint64_t departed;    // the collective seq this rank has finished reading
  std::uint64_t kind;
  std::uint64_t elements;
  std::int64_t arrival_ns;
  // Point to point: this rank as the sender (to each peer) and as the receiver (from each).
  std::uint64_t p2p_elements;
  std::int64_t p2p_arrival_ns;
  std::uint64_t sent[max_group];      // messages sent to peer p
  std::uint64_t taken[max_group];     // messages taken from peer p
  std::int64_t taken_arrival_ns[max_group];  // when this rank's queue reached the last recv from p
};
static_assert(sizeof(rendezvous_slot) <= page, "a slot's fields fit one page");

inline std::uint64_t load(const std::uint64_t& f) noexcept {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(f)).load(std::memory_order_acquire);
}
inline void store(std::uint64_t& f, std::uint64_t v) noexcept {
  std::atomic_ref<std::uint64_t>(f).store(v, std::memory_order_release);
}
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free,
              "the rendezvous needs lock-free 64-bit atomics (they are shared between processes)");

/// One process's mapping of a rendezvous file, shared by the communicators of its threads (so
/// that ThreadSanitizer sees their accesses at the same addresses).
class rendezvous_file {
 public:
  rendezvous_file(std::string path, std::size_t bytes) : path_(std::move(path)), bytes_(bytes) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0)
      throw error(fmt::format("sim: communicator: cannot open the rendezvous file {}: {}", path_,
                              std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 ||
        (static_cast<std::size_t>(st.st_size) < bytes_ && ::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0)) {
      const int e = errno;
      ::close(fd_);
      throw error(fmt::format("sim: communicator: cannot size the rendezvous file {}: {}", path_, std::strerror(e)));
    }
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd_);
      throw error(fmt::format("sim: communicator: cannot map the rendezvous file {}: {}", path_, std::strerror(e)));
    }
    base_ = static_cast<std::byte*>(p);
  }
  rendezvous_file(const rendezvous_file&) = delete;
  rendezvous_file& operator=(const rendezvous_file&) = delete;
  ~rendezvous_file() {
    ::munmap(base_, bytes_);
    ::close(fd_);
  }

  const std::string& path() const noexcept { return path_; }
  std::size_t bytes() const noexcept { return bytes_; }
  rendezvous_header& header() const noexcept { return *reinterpret_cast<rendezvous_header*>(base_); }
  rendezvous_slot& slot(std::size_t r, std::size_t max_elements) const noexcept {
    return *reinterpret_cast<rendezvous_slot*>(base_ + offset(r, max_elements));
  }
  float* data(std::size_t r, std::size_t max_elements, bool p2p) const noexcept {
    return reinterpret_cast<float*>(base_ + offset(r, max_elements) + page +
                                    (p2p ? max_elements * sizeof(float) : 0));
  }

  static std::size_t slot_bytes(std::size_t max_elements) noexcept {
    return page + (2 * max_elements * sizeof(float) + page - 1) / page * page;
  }
  static std::size_t offset(std::size_t r, std::size_t max_elements) noexcept {
    return page + r * slot_bytes(max_elements);
  }

  /// The process's mapping of `path`, made on first use.
  static std::shared_ptr<rendezvous_file> open(const std::string& path, std::size_t bytes) {
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<rendezvous_file>> open_files;
    std::lock_guard lock(mutex);
    if (auto it = open_files.find(path); it != open_files.end())
      if (auto f = it->second.lock(); f && f->bytes() >= bytes) return f;
    auto f = std::make_shared<rendezvous_file>(path, bytes);
    open_files[path] = f;
    return f;
  }

 private:
  std::string path_;
  std::size_t bytes_;
  int fd_ = -1;
  std::byte* base_ = nullptr;
};

inline std::uint64_t hash_ranks(const std::vector<int>& ranks) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (int r : ranks) h = (h ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(r))) * 1099511628211ull;
  return h ^ ranks.size();
}

inline bool process_gone(std::uint64_t pid) noexcept {
  return pid != 0 && static_cast<pid_t>(pid) != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 &&
         errno == ESRCH;
}

}  // namespace detail

/// One rank of a process group. Thread-compatible: one thread uses a communicator at a time (a
/// runtime's scheduler thread, when its collectives run on a core); each rank has its own.
///
/// **Example**
/// ```cpp
/// // in each of two processes (or threads), rank 0 and rank 1:
/// sim::communicator comm({.job_dir = "job", .rank = rank, .world_size = 2});
/// std::vector<float> x = {1, 2}, sum(2);
/// comm.all_reduce(x, sum, strata::clock::steady_ns());  // {2, 4} on both
/// ```
class communicator {
 public:
  explicit communicator(communicator_config config) : config_(std::move(config)) {
    process_group& g = config_.group;
    if (g.name.empty()) g.name = "0";
    for (char c : g.name)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
            c == '.'))
        throw error("sim: communicator: a group name may only hold letters, digits, '_', '-' and '.'; got " +
                    json_string(g.name));
    if (g.ranks.empty()) {
      if (config_.world_size < 1 || config_.world_size > static_cast<int>(detail::max_group))
        throw error(fmt::format("sim: communicator: world_size must be from 1 to {} when the group lists no "
                                "ranks; got {}", detail::max_group, config_.world_size));
      for (int r = 0; r < config_.world_size; ++r) g.ranks.push_back(r);
    }
    if (g.ranks.size() > detail::max_group)
      throw error(fmt::format("sim: communicator: group '{}' has {} ranks; at most {}", g.name, g.ranks.size(),
                              detail::max_group));
    for (std::size_t i = 0; i < g.ranks.size(); ++i) {
      if (g.ranks[i] < 0) throw error(fmt::format("sim: communicator: group '{}' lists rank {}", g.name, g.ranks[i]));
      for (std::size_t j = 0; j < i; ++j)
        if (g.ranks[j] == g.ranks[i])
          throw error(fmt::format("sim: communicator: group '{}' lists rank {} twice", g.name, g.ranks[i]));
      if (g.ranks[i] == config_.rank) me_ = i;
    }
    if (me_ == none)
      throw error(fmt::format("sim: communicator: rank {} is not a member of group '{}' (ranks {})", config_.rank,
                              g.name, ranks_text()));
    if (config_.max_elements == 0 || config_.max_elements > (std::size_t{1} << 28))
      throw error(fmt::format("sim: communicator: max_elements must be from 1 to 2^28; got {}", config_.max_elements));
    if (config_.timeout.count() <= 0) throw error("sim: communicator: the timeout must be positive");
    if (config_.job_dir.empty()) throw error("sim: communicator: no job directory (communicator_config::job_dir)");
    std::error_code ec;
    std::filesystem::create_directories(config_.job_dir, ec);
    if (ec)
      throw error(fmt::format("sim: communicator: cannot create the job directory {}: {}", config_.job_dir,
                              ec.message()));
    const std::string path = (std::filesystem::path(config_.job_dir) / ("collectives-" + g.name + ".shm")).string();
    const std::size_t n = g.ranks.size();
    file_ = detail::rendezvous_file::open(
        path, detail::rendezvous_file::offset(n, config_.max_elements));
    set_up_header();
    join();
    try {
      wait_for([&](std::size_t r) { return detail::load(slot(r).membership) != detail::slot_free; }, "joining",
               none);
    } catch (...) {
      leave();  // so that the file is not left behind half joined
      throw;
    }
  }

  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;

  /// Leaves the group; the last rank to leave removes the rendezvous file.
  ~communicator() { leave(); }

  /// This rank's index in the group (its "group rank"), the group's size, its global ranks.
  std::uint32_t group_rank() const noexcept { return static_cast<std::uint32_t>(me_); }
  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(config_.group.ranks.size()); }
  int rank() const noexcept { return config_.rank; }
  const process_group& group() const noexcept { return config_.group; }
  const communicator_config& config() const noexcept { return config_; }
  /// The group's ranks as Kineto writes `Process Group Ranks`: "[0, 1, 2]".
  std::string ranks_text() const { return fmt::format("[{}]", fmt::join(config_.group.ranks, ", ")); }
  /// How many collectives (not sends or receives) this rank has taken part in.
  std::uint64_t seq() const noexcept { return seq_; }

  /// The `Seq` the next collective issued through this communicator will have (a send's or
  /// recv's: its number among the messages to or from `peer`), counted when it is issued: the
  /// host records it while the collective itself may run later, on a core's scheduler.
  std::uint64_t issue(collective_kind k, std::uint32_t peer = 0) noexcept {
    if (k == collective_kind::send) return issued_sent_[peer % detail::max_group].fetch_add(1) + 1;
    if (k == collective_kind::recv) return issued_taken_[peer % detail::max_group].fetch_add(1) + 1;
    return issued_.fetch_add(1) + 1;
  }

  /// `out` = the sum over ranks of `in` (sizes equal on every rank). `arrival_ns`: when this
  /// rank's device queue reached the collective (steady_clock ns).
  /// `element_bytes`: the size of one element on the device (4 for fp32, 2 for bf16): what the
  /// cost model moves; values are floats whatever it is.
  collective_result all_reduce(std::span<const float> in, std::span<float> out, std::int64_t arrival_ns,
                               std::uint32_t element_bytes = sizeof(float)) {
    if (out.size() != in.size())
      fail(fmt::format("allreduce: the output holds {} values, the input {}", out.size(), in.size()));
    return collective(collective_kind::all_reduce, in, out, arrival_ns, element_bytes);
  }
  /// `out` = every rank's `in` one after the other, in group order (`out` is size() x `in`).
  collective_result all_gather(std::span<const float> in, std::span<float> out, std::int64_t arrival_ns,
                               std::uint32_t element_bytes = sizeof(float)) {
    if (out.size() != in.size() * size())
      fail(fmt::format("allgather: the output must hold {} x {} values; it holds {}", size(), in.size(), out.size()));
    return collective(collective_kind::all_gather, in, out, arrival_ns, element_bytes);
  }
  /// `out` = the sum over ranks of the group_rank()-th of size() equal parts of `in`.
  collective_result reduce_scatter(std::span<const float> in, std::span<float> out, std::int64_t arrival_ns,
                                   std::uint32_t element_bytes = sizeof(float)) {
    if (in.size() != out.size() * size())
      fail(fmt::format("reduce_scatter: the input must hold {} x {} values; it holds {}", size(), out.size(),
                       in.size()));
    return collective(collective_kind::reduce_scatter, in, out, arrival_ns, element_bytes);
  }

  /// Sends `in` to group rank `peer`; returns once the peer has taken it (a blocking send).
  collective_result send(std::span<const float> in, std::uint32_t peer, std::int64_t arrival_ns,
                         std::uint32_t element_bytes = sizeof(float)) {
    check_peer(peer, "send");
    check_size(in.size(), "send");
    usable("send");
    detail::rendezvous_slot& s = mine();
    const std::uint64_t k = ++sent_[peer];
    std::memcpy(file_->data(me_, config_.max_elements, true), in.data(), in.size() * sizeof(float));
    s.p2p_elements = in.size();
    s.p2p_arrival_ns = arrival_ns;
    detail::store(s.sent[peer], k);
    detail::rendezvous_slot& p = slot(peer);
    wait_for([&](std::size_t r) { return r != peer || detail::load(p.taken[me_]) >= k; },
             fmt::format("send #{} to group rank {}", k, peer), peer);
    const std::int64_t their = p.taken_arrival_ns[me_];
    return point_to_point(collective_kind::send, in.size() * element_bytes, arrival_ns, their, k);
  }

  /// Receives into `out` what group rank `peer` sends (the sizes must agree).
  collective_result recv(std::span<float> out, std::uint32_t peer, std::int64_t arrival_ns,
                         std::uint32_t element_bytes = sizeof(float)) {
    check_peer(peer, "recv");
    check_size(out.size(), "recv");
    usable("recv");
    const std::uint64_t k = ++taken_[peer];
    detail::rendezvous_slot& p = slot(peer);
    wait_for([&](std::size_t r) { return r != peer || detail::load(p.sent[me_]) >= k; },
             fmt::format("recv #{} from group rank {}", k, peer), peer);
    const std::uint64_t elements = p.p2p_elements;
    const std::int64_t their = p.p2p_arrival_ns;
    if (elements == out.size())
      std::memcpy(out.data(), file_->data(peer, config_.max_elements, true), out.size() * sizeof(float));
    detail::rendezvous_slot& s = mine();
    s.taken_arrival_ns[peer] = arrival_ns;
    detail::store(s.taken[peer], k);  // the sender goes on, whatever the sizes
    if (elements != out.size())
      fail(fmt::format("recv from group rank {}: it sent {} values, the receive expects {}", peer, elements,
                       out.size()));
    return point_to_point(collective_kind::recv, out.size() * element_bytes, arrival_ns, their, k);
  }

 private:
  static constexpr std::size_t none = ~std::size_t{0};

  detail::rendezvous_slot& slot(std::size_t r) const noexcept { return file_->slot(r, config_.max_elements); }
  detail::rendezvous_slot& mine() const noexcept { return slot(me_); }

  [[noreturn]] void fail(const std::string& what) const {
    throw error(fmt::format("sim: communicator: rank {} of group '{}': {}", config_.rank, config_.group.name, what));
  }
  void usable(std::string_view what) const {
    if (broken_)
      fail(fmt::format("{}: an earlier collective of this rank failed, so the group cannot continue", what));
  }
  void check_peer(std::uint32_t peer, std::string_view what) const {
    if (peer >= size() || peer == me_)
      fail(fmt::format("{}: group rank {} is not another member of the group (size {})", what, peer, size()));
  }
  void check_size(std::size_t n, std::string_view what) const {
    if (n > config_.max_elements)
      fail(fmt::format("{}: {} values exceed communicator_config::max_elements ({})", what, n, config_.max_elements));
  }

  void set_up_header() {
    detail::rendezvous_header& h = file_->header();
    std::uint64_t expected = 0;
    std::atomic_ref<std::uint64_t> state(h.state);
    if (state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      h.magic = detail::rendezvous_magic;
      h.group_size = size();
      h.max_elements = config_.max_elements;
      h.ranks_hash = detail::hash_ranks(config_.group.ranks);
      state.store(2, std::memory_order_release);
    } else {
      const auto deadline = std::chrono::steady_clock::now() + config_.timeout;
      while (state.load(std::memory_order_acquire) != 2) {
        if (std::chrono::steady_clock::now() > deadline)
          fail(fmt::format("the rendezvous file {} was never set up (a rank died while creating it?); remove it",
                           file_->path()));
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    if (h.magic != detail::rendezvous_magic || h.group_size != size() || h.max_elements != config_.max_elements ||
        h.ranks_hash != detail::hash_ranks(config_.group.ranks))
      fail(fmt::format("the rendezvous file {} belongs to another group (other ranks, size or max_elements): "
                       "give every rank the same group, or the job a new directory",
                       file_->path()));
  }

  void join() {
    detail::rendezvous_slot& s = mine();
    std::uint64_t expected = detail::slot_free;
    if (!std::atomic_ref<std::uint64_t>(s.membership).compare_exchange_strong(expected, detail::slot_joined,
                                                                              std::memory_order_acq_rel))
      fail(fmt::format("rank {} has already joined through {}: another rank with the same number, or a file left "
                       "by an earlier job (remove it, or give the job a new directory)",
                       config_.rank, file_->path()));
    detail::store(s.pid, static_cast<std::uint64_t>(::getpid()));
  }

  void leave() noexcept {
    detail::store(mine().membership, detail::slot_left);
    if (std::atomic_ref<std::uint64_t>(file_->header().left).fetch_add(1, std::memory_order_acq_rel) + 1 == size())
      ::unlink(file_->path().c_str());
  }

  // Waits until `ready(r)` holds for every group rank r, `timeout` at most. Stops early, with an
  // error naming it, when a rank that is not ready has left the group or its process is gone.
  template <class Ready>
  void wait_for(Ready&& ready, const std::string& what, std::size_t only) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + config_.timeout;
    auto next_check = start;
    for (std::uint32_t spin = 0;; ++spin) {
      bool all = true;
      for (std::size_t r = 0; r < size() && all; ++r) all = ready(r);
      if (all) return;
      const auto now = std::chrono::steady_clock::now();
      if (now >= next_check) {
        next_check = now + std::chrono::milliseconds(2);
        for (std::size_t r = 0; r < size(); ++r) {
          if (ready(r) || (only != none && r != only)) continue;
          const std::uint64_t m = detail::load(slot(r).membership);
          const std::uint64_t pid = detail::load(slot(r).pid);
          if (m == detail::slot_left || detail::process_gone(pid)) {
            broken_ = true;
            fail(fmt::format("{}: rank {} (pid {}) {} before it arrived", what, config_.group.ranks[r], pid,
                             m == detail::slot_left ? "left the group" : "exited"));
          }
        }
        if (now >= deadline) {
          std::vector<int> missing;
          for (std::size_t r = 0; r < size(); ++r)
            if (!ready(r)) missing.push_back(config_.group.ranks[r]);
          broken_ = true;
          fail(fmt::format("{}: timed out after {} ms waiting for rank{} {} (communicator_config::timeout)", what,
                           config_.timeout.count(), missing.size() == 1 ? "" : "s", fmt::join(missing, ", ")));
        }
      }
      if (spin < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  collective_result collective(collective_kind kind, std::span<const float> in, std::span<float> out,
                               std::int64_t arrival_ns, std::uint32_t element_bytes) {
    const std::string_view name = collective_name(kind);
    usable(name);
    check_size(in.size(), name);
    const std::uint64_t s = ++seq_;
    const std::string what = fmt::format("{} #{}", name, s);
    // Every rank has finished reading the previous collective's slots: this rank's may change.
    wait_for([&](std::size_t r) { return detail::load(slot(r).departed) + 1 >= s; }, what, none);
    detail::rendezvous_slot& me = mine();
    std::memcpy(file_->data(me_, config_.max_elements, false), in.data(), in.size() * sizeof(float));
    me.kind = static_cast<std::uint64_t>(kind);
    me.elements = in.size();
    me.arrival_ns = arrival_ns;
    detail::store(me.arrived, s);
    wait_for([&](std::size_t r) { return detail::load(slot(r).arrived) >= s; }, what, none);

    std::int64_t start = arrival_ns;
    std::string mismatch;
    for (std::size_t r = 0; r < size(); ++r) {
      const detail::rendezvous_slot& p = slot(r);
      start = std::max(start, p.arrival_ns);
      if (mismatch.empty() && (p.kind != me.kind || p.elements != me.elements))
        mismatch = fmt::format("rank {} called {} with {} values where rank {} called {} with {}",
                               config_.group.ranks[r], collective_name(static_cast<collective_kind>(p.kind)),
                               p.elements, config_.rank, name, in.size());
    }
    if (mismatch.empty()) {
      const std::size_t n = size();
      const auto part = [&](std::size_t r) { return file_->data(r, config_.max_elements, false); };
      if (kind == collective_kind::all_gather) {
        for (std::size_t r = 0; r < n; ++r) std::memcpy(out.data() + r * in.size(), part(r), in.size() * sizeof(float));
      } else {
        const std::size_t offset = kind == collective_kind::reduce_scatter ? me_ * out.size() : 0;
        for (std::size_t i = 0; i < out.size(); ++i) {
          float sum = 0;
          for (std::size_t r = 0; r < n; ++r) sum += part(r)[offset + i];
          out[i] = sum;
        }
      }
    }
    detail::store(me.departed, s);
    if (!mismatch.empty()) {
      broken_ = true;
      fail(fmt::format("{}: {}", what, mismatch));
    }
    const std::uint64_t bytes = (kind == collective_kind::all_gather ? out.size() : in.size()) * element_bytes;
    const collective_shape shape{kind, bytes, size()};
    return {start, start + (collective_ps(shape, config_.link, config_.algorithm) + 500) / 1000, s,
            chosen_algorithm(shape, config_.link, config_.algorithm)};
  }

  collective_result point_to_point(collective_kind kind, std::uint64_t bytes, std::int64_t mine_ns,
                                   std::int64_t theirs_ns, std::uint64_t k) const {
    const std::int64_t start = std::max(mine_ns, theirs_ns);
    const collective_shape shape{kind, bytes, 2};
    return {start, start + (collective_ps(shape, config_.link, config_.algorithm) + 500) / 1000, k,
            collective_algorithm::ring};
  }

  communicator_config config_;
  std::size_t me_ = none;
  std::shared_ptr<detail::rendezvous_file> file_;
  std::uint64_t seq_ = 0;
  bool broken_ = false;
  std::uint64_t sent_[detail::max_group] = {};
  std::uint64_t taken_[detail::max_group] = {};
  std::atomic<std::uint64_t> issued_{0};
  std::atomic<std::uint64_t> issued_sent_[detail::max_group] = {};
  std::atomic<std::uint64_t> issued_taken_[detail::max_group] = {};
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
