// strata/detail/intern.hpp: one descriptor per distinct run-time name.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "strata/record.hpp"
#include "strata/detail/shared_handle.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Interns run-time names: the first use of a (layer, kind, name) copies the name once into
/// storage that lives as long as the process; every later use finds the same `site`. A
/// thread-local cache in front keeps the shared table's lock off repeated look-ups.
class intern_table {
 public:
  static intern_table& instance() noexcept {
    static intern_table* t = new intern_table;  // never destroyed: records point into it
    return *t;
  }

  const site* get(layer l, record_kind k, std::string_view name) {
    return get(site{nullptr, "", 0, l, k}, name, {}, {});
  }

  /// The descriptor of `like` (its layer, kind, category and source location) under `name`,
  /// carrying `input_shapes` and `args_json` (empty: none).
  const site* get(const site& like, std::string_view name, std::string_view input_shapes,
                  std::string_view args_json) {
    std::lock_guard lock(mutex_);
    const std::string_view category = like.category != nullptr ? like.category : "";
    const key_view key{like.layer, like.kind, name, input_shapes, args_json, category, like.flops};
    auto it = sites_.find(key);
    if (it != sites_.end()) return it->second;
    const char* stored_name = store(name);
    const char* stored_shapes = input_shapes.empty() ? nullptr : store(input_shapes);
    const char* stored_args = args_json.empty() ? nullptr : store(args_json);
    const site& s = storage_.emplace_back(site{stored_name, like.file != nullptr ? like.file : "",
                                               like.line, like.layer, like.kind, stored_shapes,
                                               stored_args, like.category, like.flops});
    sites_.emplace(key_view{like.layer, like.kind, stored_name, input_shapes.empty() ? "" : stored_shapes,
                            args_json.empty() ? "" : stored_args, category, like.flops},
                   &s);
    return &s;
  }

  std::size_t size() {
    std::lock_guard lock(mutex_);
    return storage_.size();
  }

 private:
  struct key_view {
    layer l;
    record_kind k;
    std::string_view name;
    std::string_view input_shapes;
    std::string_view args_json;
    std::string_view category;  // points to the caller's static storage
    std::uint64_t flops;
    bool operator==(const key_view&) const = default;
  };
  struct key_hash {
    std::size_t operator()(const key_view& v) const noexcept {
      const std::hash<std::string_view> h;
      std::size_t x = h(v.name);
      x = x * 31 + h(v.input_shapes);
      x = x * 31 + h(v.args_json);
      x = x * 31 + h(v.category);
      x = x * 31 + static_cast<std::size_t>(v.flops);
      return x ^ (static_cast<std::size_t>(v.l) << 3 | static_cast<std::size_t>(v.k));
    }
  };

  const char* store(std::string_view text) { return names_.emplace_back(text).c_str(); }

  std::mutex mutex_;
  std::deque<std::string> names_;  // deque: element addresses stay put as it grows
  std::deque<site> storage_;
  std::unordered_map<key_view, const site*, key_hash> sites_;
};

/// Descriptors that live as long as the traces that hold them rather than the process: the
/// `ProfilerStep#N` marks of one window, whose numbers never come back, so interning them would
/// grow the table without bound on an endless schedule. Made on the profiler's thread; a
/// descriptor, once made, never moves (readers on other threads hold only its address).
class site_pool : public shared_object {
 public:
  const site* make(layer l, record_kind k, std::string name) {
    const char* stored = names_.emplace_back(std::move(name)).c_str();
    return &sites_.emplace_back(site{stored, "", 0, l, k});
  }

 private:
  std::deque<std::string> names_;  // deque: element addresses stay put as it grows
  std::deque<site> sites_;
};

/// Hashes strings and string_views alike, so the cache is probed without building a string.
struct transparent_string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

/// The calling thread's cache in front of the shared table: a hash and a compare per call, no
/// lock and no copy once a name has been seen.
inline const site* intern_cached(layer l, record_kind k, std::string_view name) {
  using cache_map =
      std::unordered_map<std::string, const site*, transparent_string_hash, std::equal_to<>>;
  thread_local cache_map cache[layer_count][3];
  cache_map& m = cache[static_cast<int>(l)][static_cast<int>(k)];
  if (auto it = m.find(name); it != m.end()) return it->second;
  const site* s = intern_table::instance().get(l, k, name);
  m.emplace(std::string(name), s);
  return s;
}


/// The calling thread's cache in front of the shared table for descriptors that carry
/// arguments: `base` (a call site's static descriptor) with one rendering of its arguments.
/// A hash and a compare per call once an argument set has been seen.
inline const site* intern_args_cached(const site* base, std::string_view input_shapes,
                                      std::string_view args_json) {
  using cache_map =
      std::unordered_map<std::string, const site*, transparent_string_hash, std::equal_to<>>;
  thread_local cache_map cache;
  thread_local std::string key;  // reused: no allocation once it has grown
  key.assign(reinterpret_cast<const char*>(&base), sizeof base);
  key.append(input_shapes);
  key.push_back('\0');
  key.append(args_json);
  if (auto it = cache.find(std::string_view(key)); it != cache.end()) return it->second;
  const site* s = intern_table::instance().get(*base, base->name != nullptr ? base->name : "",
                                               input_shapes, args_json);
  cache.emplace(key, s);
  return s;
}

/// The calling thread's cache in front of the shared table for descriptors made like `like`
/// (its layer, kind, category and source location) under `name` with `args_json`: records made
/// off the hot path (strata::intern_site). A hash and a compare per call once seen.
inline const site* intern_like_cached(const site& like, std::string_view name,
                                      std::string_view args_json) {
  using cache_map =
      std::unordered_map<std::string, const site*, transparent_string_hash, std::equal_to<>>;
  thread_local cache_map cache;
  thread_local std::string key;  // reused: no allocation once it has grown
  const struct {
    const char* file;
    const char* category;
    std::uint64_t flops;
    std::uint32_t line;
    ::strata::layer layer;
    record_kind kind;
  } fixed{like.file, like.category, like.flops, like.line, like.layer, like.kind};
  key.assign(reinterpret_cast<const char*>(&fixed), sizeof fixed);
  key.append(name);
  key.push_back('\0');
  key.append(args_json);
  if (auto it = cache.find(std::string_view(key)); it != cache.end()) return it->second;
  const site* s = intern_table::instance().get(like, name, {}, args_json);
  cache.emplace(key, s);
  return s;
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
