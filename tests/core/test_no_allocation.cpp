// The hot path allocates nothing after a thread's first record of a session: a global
// operator new that counts proves it. Its own program, since the replacement is global.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"

namespace {
std::atomic<std::size_t> allocations{0};
// Only the recording thread's allocations count: the session's own threads (its block writer)
// allocate by design, off the hot path.
thread_local bool counted_thread = false;
}  // namespace

// The replacements below pair malloc with free; GCC cannot see that once it inlines them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) {
  if (counted_thread) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
// The nothrow forms too (std::stable_sort's buffer uses them): every form this file does not
// replace would pair another allocator with the free() below.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (counted_thread) allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

const strata::site* dynamic_site() { return strata::intern(strata::layer::user, "interned once"); }

void hot_loop(int n, const strata::site* interned) {
  for (int i = 0; i < n; ++i) {
    STRATA_SCOPE("static scope");
    STRATA_SCOPE_LAYER(strata::layer::framework, "framework scope");
    { strata::scope s{interned, 42}; }
    STRATA_INSTANT("instant");
    STRATA_COUNTER("counter", i);
    STRATA_SCOPE_DYNAMIC(strata::layer::runtime, "seen before");  // cached after its first use
  }
}

}  // namespace

TEST_CASE("no heap allocation on the hot path after a thread's first record") {
  counted_thread = true;
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 1 << 16));
  const strata::site* interned = dynamic_site();
  prof.start();
  hot_loop(1, interned);  // the first record: the thread's buffer, the dynamic name's cache entry
  const std::size_t before = allocations.load();
  hot_loop(2000, interned);
  const std::size_t during = allocations.load() - before;
  prof.stop();
  CHECK(during == 0);
  CHECK(prof.data().recorded() == 2001 * 6);

}

TEST_CASE("past the memory limit with spilling off, records are dropped without allocating") {
  counted_thread = true;
  strata_test::temp_dir dir;
  auto config = strata_test::config_in(dir);
  config.memory_limit = std::size_t{1} << 16;  // one block besides the thread's current one
  config.spill = false;
  strata::profiler prof(config);
  const strata::site* interned = dynamic_site();
  prof.start();
  hot_loop(1000, interned);  // 6000 records: two blocks kept, the rest dropped
  const std::size_t start = allocations.load();
  hot_loop(20000, interned);
  CHECK(allocations.load() - start == 0);
  prof.stop();
  CHECK(prof.data().recorded() == 2 * 2048);
  CHECK(prof.data().lost() == 21000 * 6 - 2 * 2048);
}

TEST_CASE("the counter sees allocations, so the test above can fail") {
  counted_thread = true;
  const std::size_t before = allocations.load();
  std::string* s = new std::string(100, 'x');
  CHECK(allocations.load() > before);
  delete s;
}
