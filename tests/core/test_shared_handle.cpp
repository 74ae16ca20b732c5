// detail::shared_handle: what trace_data's spill file, step names and handed-over blocks are
// shared by, so that copies of a trace keep them and the last copy lets them go.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "strata/detail/shared_handle.hpp"

namespace {

struct handled_object : strata::detail::shared_object {
  explicit handled_object(int& alive, int v) : alive_(alive), value(v) { ++alive_; }
  ~handled_object() override { --alive_; }
  int& alive_;
  int value;
};

// A handle of a type declared only: what trace_data's destructor is compiled with in the
// compiled-out implementation.
struct declared_handled_object;
struct handle_holder {
  strata::detail::shared_handle<declared_handled_object> h;
};
struct declared_handled_object : strata::detail::shared_object {
  explicit declared_handled_object(int& alive) : alive_(alive) { ++alive_; }
  ~declared_handled_object() override { --alive_; }
  int& alive_;
};

}  // namespace

TEST_CASE("shared_handle: copies share one object, the last to let go deletes it") {
  using strata::detail::make_shared_handle;
  using strata::detail::shared_handle;
  int alive = 0;
  shared_handle<handled_object> a = make_shared_handle<handled_object>(alive, 7);
  REQUIRE(alive == 1);
  CHECK(a->value == 7);
  CHECK((*a).value == 7);
  {
    shared_handle<handled_object> b = a;
    shared_handle<const handled_object> c = b;  // const view of the same object
    CHECK(c.get() == a.get());
    b.reset();
    CHECK(b == nullptr);
    CHECK_FALSE(b);
    a.reset();
    CHECK(alive == 1);  // c still holds it
    CHECK(c->value == 7);
  }
  CHECK(alive == 0);

  shared_handle<handled_object> d = make_shared_handle<handled_object>(alive, 1);
  shared_handle<handled_object> e = make_shared_handle<handled_object>(alive, 2);
  REQUIRE(alive == 2);
  d = e;  // d's first object goes
  CHECK(alive == 1);
  CHECK(d->value == 2);
  shared_handle<handled_object>& same = d;
  d = same;  // assigned itself: keeps it
  CHECK(alive == 1);
  shared_handle<handled_object> f = static_cast<shared_handle<handled_object>&&>(d);
  CHECK(d == nullptr);
  CHECK(f.get() == e.get());
  e = nullptr;
  f = nullptr;
  CHECK(alive == 0);
}

TEST_CASE("shared_handle: released through the base where only the type's name is known") {
  int alive = 0;
  {
    handle_holder h;
    h.h = strata::detail::make_shared_handle<declared_handled_object>(alive);
    handle_holder copy = h;
    CHECK(alive == 1);
  }
  CHECK(alive == 0);
}

TEST_CASE("shared_handle: copies dropped on several threads delete the object once") {
  int alive = 0;
  {
    auto shared = strata::detail::make_shared_handle<handled_object>(alive, 3);
    std::atomic<int> empty{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([copy = shared, &empty] {
        for (int i = 0; i < 10000; ++i) {
          auto again = copy;
          if (again == nullptr || again->value != 3) empty.fetch_add(1);
        }
      });
    shared.reset();  // the threads' copies hold it now
    for (auto& t : threads) t.join();
    CHECK(empty.load() == 0);
  }
  CHECK(alive == 0);
}
