// strata/detail/impl/args.hpp: an argument set rendered once into torch's "Input Shapes" text and the
// trace's JSON arguments, then interned with its call site. Part of strata's implementation
// (strata/implementation.hpp); scopes reach it through the cold-path table when a thread meets
// an argument set its cache has not seen (strata/args/op_args.hpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <new>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "strata/record.hpp"
#include "strata/scope.hpp"
#include "strata/detail/arg_encoding.hpp"
#include "strata/detail/intern.hpp"
#include "strata/detail/json_escape.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Names the exporter writes itself; a member with one of them is written as `arg:<name>`.
inline bool is_reserved_arg_name(std::string_view n) noexcept {
  return n == "Input Dims" || n == "Input Names" || n == "correlation_id" || n == "flops";
}

/// One member of an encoded argument set (arg_encoding.hpp).
struct decoded_arg {
  arg_kind kind;
  std::string_view name;
  const std::uint64_t* values;  // a shape's dimensions, a number, or a string's words
  std::size_t size;             // a shape's rank, a string's bytes
};

/// Calls `f(decoded_arg)` for each member; false if the words are not a valid encoding.
template <class F>
bool for_each_encoded_arg(const std::uint64_t* words, std::size_t count, F&& f) {
  std::size_t i = 0;
  while (i < count) {
    if (count - i < 2) return false;
    const arg_kind kind = arg_kind_of(words[i]);
    const std::size_t size = arg_size_of(words[i]);
    const char* name = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(words[i + 1]));
    i += 2;
    std::size_t value_words = 1;
    if (kind == arg_kind::shape) value_words = size;
    else if (kind == arg_kind::string) value_words = arg_string_words(size);
    else if (kind < arg_kind::shape || kind > arg_kind::string) return false;
    if (count - i < value_words || name == nullptr) return false;
    f(decoded_arg{kind, name, words + i, size});
    i += value_words;
  }
  return true;
}

inline void append_encoded_dims(fmt::memory_buffer& out, const decoded_arg& a,
                                std::string_view separator) {
  out.push_back('[');
  for (std::size_t d = 0; d < a.size; ++d) {
    if (d != 0) out.append(separator);
    fmt::format_to(std::back_inserter(out), "{}", static_cast<std::int64_t>(a.values[d]));
  }
  out.push_back(']');
}

inline void append_encoded_value(fmt::memory_buffer& out, const decoded_arg& a) {
  const std::uint64_t w = a.values[0];
  switch (a.kind) {
    case arg_kind::boolean: out.append(std::string_view(w != 0 ? "true" : "false")); break;
    case arg_kind::signed_int:
      fmt::format_to(std::back_inserter(out), "{}", static_cast<std::int64_t>(w));
      break;
    case arg_kind::unsigned_int: fmt::format_to(std::back_inserter(out), "{}", w); break;
    case arg_kind::float32:
    case arg_kind::float64: {
      const double d = __builtin_bit_cast(double, w);
      if (!std::isfinite(d))
        out.append(std::string_view("null"));  // JSON has no NaN or infinity
      else if (a.kind == arg_kind::float32)  // the float's own shortest text, not the double's
        fmt::format_to(std::back_inserter(out), "{}", static_cast<float>(d));
      else
        fmt::format_to(std::back_inserter(out), "{}", d);
      break;
    }
    case arg_kind::string: {
      char small[256];
      fmt::memory_buffer text;
      const char* bytes = small;
      if (a.size <= sizeof small) {
        std::memcpy(small, a.values, a.size);
      } else {
        text.resize(arg_string_words(a.size) * 8);
        std::memcpy(text.data(), a.values, a.size);
        bytes = text.data();
      }
      append_json_string(out, std::string_view(bytes, a.size));
      break;
    }
    case arg_kind::shape: break;
  }
}

/// Renders an encoded argument set: every member gets an entry in the shapes (a shape its
/// dimensions, anything else `[]`, as torch shows non-tensor inputs); members that are not
/// shapes are also written by name with their value.
inline bool render_encoded_args(const std::uint64_t* words, std::size_t count,
                                fmt::memory_buffer& shapes, fmt::memory_buffer& json) {
  bool first = true;
  shapes.push_back('[');
  json.append(std::string_view("\"Input Dims\":["));
  const bool valid = for_each_encoded_arg(words, count, [&](const decoded_arg& a) {
    if (!first) {
      shapes.append(std::string_view(", "));
      json.push_back(',');
    }
    first = false;
    if (a.kind == arg_kind::shape) {
      append_encoded_dims(shapes, a, ", ");
      append_encoded_dims(json, a, ",");
    } else {
      shapes.append(std::string_view("[]"));
      json.append(std::string_view("[]"));
    }
  });
  if (!valid) return false;
  shapes.push_back(']');
  json.append(std::string_view("],\"Input Names\":["));
  first = true;
  for_each_encoded_arg(words, count, [&](const decoded_arg& a) {
    if (!first) json.push_back(',');
    first = false;
    append_json_string(json, a.name);
  });
  json.push_back(']');
  for_each_encoded_arg(words, count, [&](const decoded_arg& a) {
    if (a.kind == arg_kind::shape) return;
    json.push_back(',');
    if (is_reserved_arg_name(a.name)) {
      fmt::memory_buffer renamed;
      renamed.append(std::string_view("arg:"));
      renamed.append(a.name);
      append_json_string(json, std::string_view(renamed.data(), renamed.size()));
    } else {
      append_json_string(json, a.name);
    }
    json.push_back(':');
    append_encoded_value(json, a);
  });
  return true;
}

/// The cold path's `intern_args`: `base` carrying the encoded arguments, interned once per
/// distinct set; `base` itself when they cannot be (out of memory, or not an encoding).
inline const site* intern_encoded_args(const site* base, const std::uint64_t* words,
                                       std::size_t count) noexcept {
  try {
    fmt::memory_buffer shapes;
    fmt::memory_buffer json;
    if (!render_encoded_args(words, count, shapes, json)) return base;
    return intern_table::instance().get(*base, base->name != nullptr ? base->name : "",
                                        std::string_view(shapes.data(), shapes.size()),
                                        std::string_view(json.data(), json.size()));
  } catch (...) {
    return base;
  }
}

/// Frees the calling thread's flops_cache when the thread exits; touched only on a miss.
struct flops_cache_owner {
  ~flops_cache_owner() {
    delete tl_flops_cache;
    tl_flops_cache = nullptr;
  }
};

/// The cold path's `intern_flops`: `base` (its name, shapes and arguments) carrying `flops`,
/// whose trace arguments end with `"flops":N` as torch's do; interned once per distinct pair
/// and remembered in the thread's cache. `base` itself when it cannot be (out of memory).
inline const site* intern_flops_site(const site* base, std::uint64_t flops) noexcept {
  try {
    std::string_view args = base->args_json != nullptr ? base->args_json : "";
    if (base->flops != 0) {  // a count set again: the previous one is the arguments' tail
      const std::size_t at = args.rfind("\"flops\":");
      if (at != std::string_view::npos) args = args.substr(0, at != 0 ? at - 1 : 0);
    }
    std::string json(args);
    if (flops != 0) {
      if (!json.empty()) json.push_back(',');
      fmt::format_to(std::back_inserter(json), "\"flops\":{}", flops);
    }
    site like = *base;
    like.flops = flops;
    const site* s = intern_table::instance().get(like, base->name != nullptr ? base->name : "",
                                                 base->input_shapes != nullptr ? base->input_shapes : "",
                                                 json);
    if (tl_flops_cache == nullptr) {
      static thread_local flops_cache_owner owner;  // registers the free at thread exit
      static_cast<void>(owner);
      tl_flops_cache = new (std::nothrow) flops_cache{};
    }
    if (tl_flops_cache != nullptr)
      tl_flops_cache->entries[flops_cache::slot_of(base, flops)] = {base, flops, s};
    return s;
  } catch (...) {
    return base;
  }
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
