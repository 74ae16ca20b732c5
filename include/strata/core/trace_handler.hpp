// strata/core/trace_handler.hpp: the callable a profiler calls when a window's trace is ready.
#pragma once

#include <cstddef>

namespace strata {
inline namespace v1 {

class profiler;

/// What `profiler_config::on_trace_ready` holds: any callable taking `profiler&` (a lambda, a
/// function pointer, a std::function), copied with the config. It plays std::function's part
/// without <functional>, so that the profiler's header stays light.
///
/// **Example**
/// ```cpp
/// config.on_trace_ready = [](strata::profiler& p) { p.export_chrome_trace("window.json"); };
/// ```
class trace_handler {
 public:
  trace_handler() noexcept = default;
  trace_handler(decltype(nullptr)) noexcept {}  // NOLINT(google-explicit-constructor)
  template <class F>
    requires(!__is_same(F, trace_handler) && requires(F& f, profiler& p) { f(p); })
  trace_handler(F f) : held_(new holder<F>(static_cast<F&&>(f))) {}  // NOLINT: reads like std::function

  trace_handler(const trace_handler& other) : held_(other.held_ ? other.held_->clone() : nullptr) {}
  trace_handler(trace_handler&& other) noexcept : held_(other.held_) { other.held_ = nullptr; }
  trace_handler& operator=(trace_handler other) noexcept {
    base* old = held_;
    held_ = other.held_;
    other.held_ = old;
    return *this;
  }
  ~trace_handler() { delete held_; }

  explicit operator bool() const noexcept { return held_ != nullptr; }
  /// Calls the handler; it must be set.
  void operator()(profiler& p) const { held_->call(p); }

 private:
  struct base {
    virtual ~base() = default;
    virtual base* clone() const = 0;
    virtual void call(profiler& p) = 0;
  };
  template <class F>
  struct holder final : base {
    explicit holder(F&& fn) : f(static_cast<F&&>(fn)) {}
    base* clone() const override { return new holder(F(f)); }
    void call(profiler& p) override { f(p); }
    F f;
  };

  base* held_ = nullptr;
};

}  // namespace v1
}  // namespace strata
