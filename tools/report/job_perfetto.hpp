// tools/report/job_perfetto.hpp: a merged job written as Perfetto's protobuf trace (.pftrace)
// instead of Chrome trace JSON. `strata-report merge` hands it each rank's events as the merge
// rewrites them (pids renumbered, ts aligned, ids apart, as JSON text); it keeps one rank's
// events at a time, in compact form, and at the rank's end writes its tracks and events:
//
//   root track (uuid 0): processes and threads ordered explicitly
//   each process: a ProcessDescriptor (pid, 'rank R: name', its sort index as rank)
//     each thread: a ThreadDescriptor (pid, tid, name), or a named track of the process when
//       the tid is not a number; slices that overlap without nesting (Chrome draws them over
//       each other) go to child tracks "NAME (overlapping k)", so every slice stays whole
//     async tracks (b/e/n, one per category and id), counter tracks (one per name and series),
//       the process's own instants (s: p)
//   one packet sequence per track, in time order: a first packet with fresh incremental state,
//     the track and clock 64 as defaults and a clock snapshot (clock 64, TRACE_FILE as the
//     trace clock, REALTIME at the same instant when the ranks were aligned on the wall clock),
//     then one TrackEvent per slice begin, slice end, instant or counter sample, names and
//     categories interned, args as debug annotations, flows as flow ids on the slices they bind.
//
// What the JSON holds that this format cannot (other phases, a flow that binds to no slice, an
// E without its B) is counted and said, never dropped silently. docs/distributed.md, "Merging
// the ranks into one timeline", describes the mapping.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/export/perfetto_packets.hpp"
#include "report/rapidjson_reader.hpp"
#include "report/trace_events.hpp"

namespace strata {
inline namespace v1 {
namespace report {
namespace detail {

namespace pf = strata::perfetto;

/// One JSON value as a flat tree: a container's members follow it, and `end` is the index past
/// its last descendant. Numbers keep their text, so no digit is lost to a double.
struct json_node {
  enum kind_t : std::uint8_t { null, boolean, number, string, object, array };
  kind_t kind = null;
  std::string_view key = {};   ///< the member's key, in an object
  std::string_view text = {};  ///< a string's, number's or boolean's text
  std::uint32_t end = 0;
};

/// Parses one event's JSON text into json_nodes (RapidJSON's SAX reader).
class json_tree : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, json_tree> {
 public:
  /// Whether `json` is one valid JSON value; `nodes()` then holds it.
  bool parse(std::string_view json) {
    nodes_.clear();
    open_.clear();
    arena_.clear();
    // Every text kept is at most as long as its source span, so the arena never reallocates
    // and the views into it stay valid.
    arena_.reserve(json.size() + 1);
    rapidjson::MemoryStream in(json.data(), json.size());
    rapidjson::Reader reader;
    return !reader.Parse<rapidjson::kParseNumbersAsStringsFlag>(in, *this).IsError() && !nodes_.empty();
  }
  const std::vector<json_node>& nodes() const noexcept { return nodes_; }

  bool Null() { return add(json_node::null, {}); }
  bool Bool(bool b) { return add(json_node::boolean, b ? "true" : "false"); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return add(json_node::number, keep(s, n)); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return add(json_node::string, keep(s, n)); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_ = keep(s, n);
    return true;
  }
  bool StartObject() { return open(json_node::object); }
  bool StartArray() { return open(json_node::array); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }

 private:
  std::string_view keep(const char* s, std::size_t n) {
    if (arena_.size() + n > arena_.capacity()) return {};  // cannot happen: see parse()
    const std::size_t at = arena_.size();
    arena_.append(s, n);
    return std::string_view(arena_).substr(at, n);
  }
  bool add(json_node::kind_t kind, std::string_view text) {
    nodes_.push_back({kind, key_, text, static_cast<std::uint32_t>(nodes_.size() + 1)});
    key_ = {};
    return true;
  }
  bool open(json_node::kind_t kind) {
    if (open_.size() >= max_json_depth) return false;
    open_.push_back(nodes_.size());
    return add(kind, {});
  }
  bool close() {
    nodes_[open_.back()].end = static_cast<std::uint32_t>(nodes_.size());
    open_.pop_back();
    return true;
  }

  std::vector<json_node> nodes_;
  std::vector<std::size_t> open_;
  std::string arena_;
  std::string_view key_;
};

/// The merged job as a Perfetto trace, written a rank at a time.
class job_perfetto {
 public:
  /// `base_time_ns`: the wall-clock time of the merged trace's 0 when the ranks were aligned
  /// on it, for REALTIME in the clock snapshots.
  job_perfetto(const std::filesystem::path& path, std::optional<std::int64_t> base_time_ns)
      : path_(path), out_(path), base_time_ns_(base_time_ns) {
    message root, packet;
    root.varint(pf::track_uuid, 0)
        .varint(pf::track_process_ordering, pf::process_ordering_explicit)
        .varint(pf::track_thread_ordering, pf::thread_ordering_explicit);
    out_.packet(packet.nested(pf::packet_track_descriptor, root));
  }

  /// One event of the rank being merged, as the merge wrote it (Chrome trace JSON).
  void event(std::string_view json, const std::string& source) {
    ++events_;
    if (!tree_.parse(json) || tree_.nodes().front().kind != json_node::object) {
      skip("elements of traceEvents that are not objects");
      return;
    }
    read_event(source);
  }

  /// Writes the tracks and events of the rank whose events came since the last call, then
  /// forgets them.
  void end_rank() {
    write_rank();
    rank_ = {};
  }

  /// Finishes the file; returns what it holds and says on stderr what the format could not.
  export_result finish() {
    export_result r = out_.finish(path_);
    for (const auto& [what, n] : skipped_)
      fmt::print(stderr, "strata-report: {}: {} {} not in the Perfetto trace (-o JOB.json keeps every event)\n",
                 path_.string(), n, what);
    return r;
  }
  std::uint64_t events() const noexcept { return events_; }

 private:
  using message = pf::proto::message;

  // ProcessDescriptor.process_labels (track_event/process_descriptor.proto); the other field
  // numbers are strata/export/perfetto_packets.hpp's, which cites the .proto files.
  static constexpr std::uint32_t process_labels_field = 8;

  enum class track_kind : std::uint8_t { thread, process, global, async, counter, lane };

  struct track {
    track_kind kind = track_kind::thread;
    std::int64_t pid = 0;
    std::optional<std::int64_t> tid = {};  ///< a thread's tid, when a number
    std::string tid_text = {};             ///< as written
    std::string name = {};
    std::optional<std::int64_t> sort_index = {};
    std::uint64_t uuid = 0;
    std::uint32_t parent = 0;              ///< a lane's thread track
    std::vector<std::uint32_t> slices = {};
    std::vector<std::uint32_t> instants = {};
    std::vector<std::uint32_t> samples = {};
    std::vector<std::uint32_t> flows = {};
    std::vector<std::uint32_t> open_b = {};  ///< a thread's B events still open, innermost last
  };
  struct process {
    std::int64_t pid = 0;
    std::string name = {};
    std::optional<std::int64_t> sort_index = {};
    std::vector<std::string> labels = {};
    std::uint64_t uuid = 0;
    std::vector<std::uint32_t> tracks = {};  ///< its thread, async and counter tracks, first seen first
  };
  struct args_ref {
    std::uint32_t bytes_begin = 0, bytes_size = 0, iids_begin = 0, iids_size = 0;
  };
  /// A slice, instant or counter sample.
  struct item {
    std::int64_t ts = 0, dur = 0;
    std::uint64_t name_iid = 0, category_iid = 0;  ///< 0: none
    args_ref args = {};
    double value = 0;       ///< a counter sample's
    bool whole = false;     ///< ... when an integer (then in `count`)
    std::int64_t count = 0;
    std::uint32_t order = 0;  ///< place in the rank's trace
  };
  struct flow_point {
    std::int64_t ts = 0;
    std::uint64_t id = 0;
    bool ends = false;
    bool next_slice = false;  ///< binds to the next slice (an f without bp "e"), not the enclosing one
  };
  struct flow_mark {
    std::uint32_t slice = 0;
    std::uint64_t id = 0;
    bool ends = false;
  };
  struct rank_state {
    std::vector<track> tracks;
    std::vector<process> processes;
    std::unordered_map<std::int64_t, std::uint32_t> process_of;
    std::map<std::pair<std::int64_t, std::string>, std::uint32_t> track_of;  // (pid, kind + key)
    std::vector<item> items;
    std::vector<flow_point> flow_points;
    std::vector<flow_mark> marks;  // flows bound to slices (v2 bind_id, and v1 once bound)
    std::unordered_map<std::string, std::uint64_t> flow_ids;
    std::string arg_bytes;
    std::vector<std::uint64_t> arg_iids;
    std::uint32_t order = 0;
  };

  // --- reading one event -----------------------------------------------------------------

  void skip(const std::string& what, std::uint64_t n = 1) { skipped_[what] += n; }

  const json_node* member(std::string_view key) const {
    const auto& n = tree_.nodes();
    const json_node* found = nullptr;
    for (std::uint32_t i = 1; i < n.front().end; i = n[i].end)
      if (n[i].key == key) found = &n[i];  // the last, as a JSON reader keeps a repeated key's last value
    return found;
  }
  std::string_view string_member(std::string_view key) const {
    const json_node* v = member(key);
    return v != nullptr && v->kind == json_node::string ? v->text : std::string_view();
  }
  std::uint32_t index_of(const json_node* n) const { return static_cast<std::uint32_t>(n - tree_.nodes().data()); }

  void read_event(const std::string& source) {
    const std::string_view ph = string_member("ph");
    const json_node* pid_node = member("pid");
    std::int64_t pid = 0;
    if (pid_node != nullptr && pid_node->kind == json_node::number) pid = parse_signed(pid_node->text).value_or(0);
    process& p = process_for(pid);
    const std::string_view name = string_member("name");
    const json_node* args = member("args");
    if (args != nullptr && args->kind != json_node::object) args = nullptr;

    if (ph == "M") {
      read_metadata(p, name, args);
      return;
    }
    const json_node* ts_node = member("ts");
    std::optional<std::int64_t> ts;
    if (ts_node != nullptr && (ts_node->kind == json_node::number || ts_node->kind == json_node::string))
      ts = parse_us_as_ns(ts_node->text);
    if (!ts) {
      skip(fmt::format("events with no ts that is a number of microseconds (ph '{}')", ph));
      return;
    }
    if (*ts < 0)
      throw error(fmt::format("{}: an event at ts {} us lies before the trace's 0, which Perfetto's timestamps "
                              "cannot show: merge it to JSON (-o JOB.json)", source, ts_node->text));
    item it;
    it.ts = *ts;
    it.order = rank_.order++;
    it.name_iid = names_.id(pf::interner::event_name, name);
    const json_node* cat = member("cat");
    if (cat != nullptr && cat->kind == json_node::string) it.category_iid = names_.id(pf::interner::category, cat->text);

    if (ph == "X") {
      const json_node* dur = member("dur");
      std::optional<std::int64_t> d;
      if (dur != nullptr && (dur->kind == json_node::number || dur->kind == json_node::string)) d = parse_us_as_ns(dur->text);
      if (!d || *d < 0 || *d > std::numeric_limits<std::int64_t>::max() - it.ts) {
        skip("complete events (X) whose dur is no number of microseconds from 0 up");
        return;
      }
      it.dur = *d;
      it.args = encode_args(args);
      const std::uint32_t t = thread_track(p, member("tid"));
      add_slice(t, it);
      read_flow_v2(static_cast<std::uint32_t>(rank_.items.size() - 1));
    } else if (ph == "B") {
      it.args = encode_args(args);
      const std::uint32_t t = thread_track(p, member("tid"));
      rank_.items.push_back(it);
      rank_.tracks[t].open_b.push_back(static_cast<std::uint32_t>(rank_.items.size() - 1));
    } else if (ph == "E") {
      track& t = rank_.tracks[thread_track(p, member("tid"))];
      if (t.open_b.empty()) {
        skip("slice ends (E) with no slice begun (B) on their thread");
        return;
      }
      const std::uint32_t b = t.open_b.back();
      t.open_b.pop_back();
      item& begun = rank_.items[b];
      if (it.ts < begun.ts) {
        skip("slice ends (E) earlier than their begin (B)");
        return;
      }
      begun.dur = it.ts - begun.ts;
      if (args != nullptr) begun.args = join_args(begun.args, encode_args(args));
      t.slices.push_back(b);
    } else if (ph == "i" || ph == "I") {
      const std::string_view scope = string_member("s");
      it.args = encode_args(args);
      std::uint32_t t = 0;
      if (scope == "g") t = global_track();
      else if (scope == "p") t = process_track(p);
      else t = thread_track(p, member("tid"));
      rank_.items.push_back(it);
      rank_.tracks[t].instants.push_back(static_cast<std::uint32_t>(rank_.items.size() - 1));
    } else if (ph == "C") {
      read_counter(p, name, args, it);
    } else if (ph == "b" || ph == "e" || ph == "n") {
      read_async(p, ph, name, args, it);
    } else if (ph == "s" || ph == "t" || ph == "f") {
      read_flow_v1(p, ph, it.ts);
    } else {
      skip(fmt::format("events of phase '{}'", ph));
    }
  }

  void read_metadata(process& p, std::string_view name, const json_node* args) {
    const auto arg = [&](std::string_view key) -> const json_node* {
      if (args == nullptr) return nullptr;
      const auto& n = tree_.nodes();
      const json_node* found = nullptr;
      for (std::uint32_t i = index_of(args) + 1; i < args->end; i = n[i].end)
        if (n[i].key == key) found = &n[i];
      return found;
    };
    const json_node* value = arg(name == "process_labels" ? "labels" : name.ends_with("sort_index") ? "sort_index" : "name");
    if (value == nullptr) {
      skip(fmt::format("metadata events '{}' without their argument", name));
      return;
    }
    const bool text = value->kind == json_node::string;
    const std::optional<std::int64_t> number =
        value->kind == json_node::number ? parse_signed(value->text) : std::nullopt;
    if (name == "process_name" && text) {
      p.name = std::string(value->text);
    } else if (name == "process_sort_index" && number) {
      p.sort_index = number;
    } else if (name == "process_labels" && text) {
      p.labels.emplace_back(value->text);
    } else if (name == "thread_name" && text) {
      rank_.tracks[thread_track(p, member("tid"))].name = std::string(value->text);
    } else if (name == "thread_sort_index" && number) {
      rank_.tracks[thread_track(p, member("tid"))].sort_index = number;
    } else {
      skip(fmt::format("metadata events '{}'", name));
    }
  }

  void read_counter(process& p, std::string_view name, const json_node* args, item it) {
    if (args == nullptr || args->end == index_of(args) + 1) {
      skip("counter events (C) with no values");
      return;
    }
    const auto& n = tree_.nodes();
    const json_node* id = member("id");
    const std::string prefix = id != nullptr && (id->kind == json_node::string || id->kind == json_node::number)
                                   ? fmt::format("{} {}", name, id->text)
                                   : std::string(name);
    for (std::uint32_t i = index_of(args) + 1; i < args->end; i = n[i].end) {
      if (n[i].kind != json_node::number) {
        skip("counter values that are not numbers");
        continue;
      }
      // Chrome draws a counter's series as one chart; Perfetto has a track per series, named
      // after the counter alone when its one series is 'value' (as strata writes them).
      const bool alone = n[i].key == "value" && args->end == index_of(args) + 2;
      const std::string track_name = alone ? prefix : fmt::format("{} {}", prefix, n[i].key);
      const std::uint32_t t = keyed_track(p, track_kind::counter, "c" + track_name, track_name);
      item sample = it;
      sample.name_iid = 0;
      sample.category_iid = 0;
      if (const auto v = parse_signed(n[i].text); v && n[i].text.find_first_of(".eE") == std::string_view::npos) {
        sample.whole = true;
        sample.count = *v;
      } else {
        sample.value = std::strtod(std::string(n[i].text).c_str(), nullptr);
      }
      rank_.items.push_back(sample);
      rank_.tracks[t].samples.push_back(static_cast<std::uint32_t>(rank_.items.size() - 1));
    }
  }

  void read_async(process& p, std::string_view ph, std::string_view name, const json_node* args, item it) {
    const json_node* id = member("id");
    if (id == nullptr) id = member("id2");
    if (id == nullptr || (id->kind != json_node::string && id->kind != json_node::number)) {
      skip(fmt::format("async events ({}) without an id", ph));
      return;
    }
    const std::string cat = it.category_iid != 0 ? std::string(string_member("cat")) : std::string();
    const std::string key = fmt::format("a{}\n{}", cat, id->text);
    const std::uint32_t t = keyed_track(p, track_kind::async, key, std::string(name));
    it.args = encode_args(args);
    it.dur = ph == "b" ? -1 : ph == "e" ? -2 : 0;  // paired into slices at the rank's end
    rank_.items.push_back(it);
    rank_.tracks[t].instants.push_back(static_cast<std::uint32_t>(rank_.items.size() - 1));
  }

  std::uint64_t flow_id(std::string_view cat, std::string_view id) {
    const auto [it, fresh] = rank_.flow_ids.try_emplace(fmt::format("{}\n{}", cat, id), next_flow_id_);
    if (fresh) ++next_flow_id_;
    return it->second;
  }

  void read_flow_v1(process& p, std::string_view ph, std::int64_t ts) {
    const json_node* id = member("id");
    if (id == nullptr) id = member("bind_id");
    if (id == nullptr || (id->kind != json_node::string && id->kind != json_node::number)) {
      skip(fmt::format("flow events ({}) without an id", ph));
      return;
    }
    const std::uint32_t t = thread_track(p, member("tid"));
    rank_.flow_points.push_back({ts, flow_id(string_member("cat"), id->text), ph == "f",
                                 ph == "f" && string_member("bp") != "e"});
    rank_.tracks[t].flows.push_back(static_cast<std::uint32_t>(rank_.flow_points.size() - 1));
  }

  /// Chrome's second flow form: a complete event's bind_id with flow_out / flow_in.
  void read_flow_v2(std::uint32_t slice) {
    const json_node* id = member("bind_id");
    if (id == nullptr || (id->kind != json_node::string && id->kind != json_node::number)) return;
    const json_node* out = member("flow_out");
    const json_node* in = member("flow_in");
    const bool flows_out = out != nullptr && out->text == "true", flows_in = in != nullptr && in->text == "true";
    if (!flows_out && !flows_in) return;
    rank_.marks.push_back({slice, flow_id(string_member("cat"), id->text), !flows_out});
  }

  // --- args as debug annotations ---------------------------------------------------------

  args_ref encode_args(const json_node* args) {
    args_ref ref{static_cast<std::uint32_t>(rank_.arg_bytes.size()), 0,
                 static_cast<std::uint32_t>(rank_.arg_iids.size()), 0};
    if (args == nullptr) return ref;
    const auto& n = tree_.nodes();
    for (std::uint32_t i = index_of(args) + 1; i < args->end; i = n[i].end) {
      const std::uint64_t iid = names_.id(pf::interner::annotation_name, n[i].key);
      message a, field;
      a.varint(pf::annotation_name_iid, iid);
      encode_value(i, a);
      field.nested(pf::event_debug_annotations, a);
      rank_.arg_bytes.append(field.view());
      rank_.arg_iids.push_back(iid);
    }
    ref.bytes_size = static_cast<std::uint32_t>(rank_.arg_bytes.size() - ref.bytes_begin);
    ref.iids_size = static_cast<std::uint32_t>(rank_.arg_iids.size() - ref.iids_begin);
    return ref;
  }

  /// A B's args followed by its E's, as one run.
  args_ref join_args(args_ref a, args_ref b) {
    args_ref ref{static_cast<std::uint32_t>(rank_.arg_bytes.size()), a.bytes_size + b.bytes_size,
                 static_cast<std::uint32_t>(rank_.arg_iids.size()), a.iids_size + b.iids_size};
    for (const args_ref& r : {a, b}) {
      rank_.arg_bytes.append(std::string_view(rank_.arg_bytes).substr(r.bytes_begin, r.bytes_size));
      for (std::uint32_t k = 0; k < r.iids_size; ++k) rank_.arg_iids.push_back(rank_.arg_iids[r.iids_begin + k]);
    }
    return ref;
  }

  /// The value of node `i` into annotation `a`: numbers, strings, booleans keep their types;
  /// objects become dict entries, arrays array values; null is the JSON `null`.
  void encode_value(std::uint32_t i, message& a) const {
    const auto& n = tree_.nodes();
    const json_node& v = n[i];
    switch (v.kind) {
      case json_node::null: a.bytes(pf::annotation_legacy_json, "null"); return;
      case json_node::boolean: a.varint(pf::annotation_bool, v.text == "true" ? 1 : 0); return;
      case json_node::string: a.bytes(pf::annotation_string, v.text); return;
      case json_node::number: {
        const bool integer = v.text.find_first_of(".eE") == std::string_view::npos;
        if (const auto s = integer ? parse_signed(v.text) : std::nullopt) a.int64(pf::annotation_int, *s);
        else if (const auto u = integer ? parse_unsigned(v.text) : std::nullopt) a.varint(pf::annotation_uint, *u);
        else a.double_value(pf::annotation_double, std::strtod(std::string(v.text).c_str(), nullptr));
        return;
      }
      case json_node::object:
        if (v.end == i + 1) a.bytes(pf::annotation_legacy_json, "{}");
        for (std::uint32_t k = i + 1; k < v.end; k = n[k].end) {
          message entry;
          entry.bytes(pf::annotation_name, n[k].key);
          encode_value(k, entry);
          a.nested(pf::annotation_dict_entries, entry);
        }
        return;
      case json_node::array:  // an empty one: the annotation's name alone
        for (std::uint32_t k = i + 1; k < v.end; k = n[k].end) {
          message entry;
          encode_value(k, entry);
          a.nested(pf::annotation_array_values, entry);
        }
        return;
    }
  }

  // --- tracks ----------------------------------------------------------------------------

  process& process_for(std::int64_t pid) {
    const auto [it, fresh] = rank_.process_of.try_emplace(pid, static_cast<std::uint32_t>(rank_.processes.size()));
    if (fresh) rank_.processes.push_back({.pid = pid});
    return rank_.processes[it->second];
  }
  std::uint32_t keyed_track(process& p, track_kind kind, const std::string& key, const std::string& name) {
    const auto [it, fresh] = rank_.track_of.try_emplace({p.pid, key}, static_cast<std::uint32_t>(rank_.tracks.size()));
    if (fresh) {
      rank_.tracks.push_back({.kind = kind, .pid = p.pid, .name = name});
      p.tracks.push_back(it->second);
    }
    return it->second;
  }
  std::uint32_t thread_track(process& p, const json_node* tid) {
    std::string text = tid == nullptr ? "0" : std::string(tid->text);
    const bool number = tid == nullptr || tid->kind == json_node::number;
    const std::uint32_t t = keyed_track(p, track_kind::thread, (number ? "n" : "s") + text, {});
    track& tr = rank_.tracks[t];
    if (tr.tid_text.empty()) {
      tr.tid_text = text;
      if (number) tr.tid = parse_signed(text);
    }
    return t;
  }
  std::uint32_t process_track(process& p) { return keyed_track(p, track_kind::process, "p", {}); }
  std::uint32_t global_track() {
    process& p = process_for(std::numeric_limits<std::int64_t>::min());  // the job's, not a process's
    return keyed_track(p, track_kind::global, "g", "global instants");
  }
  void add_slice(std::uint32_t t, const item& it) {
    rank_.items.push_back(it);
    rank_.tracks[t].slices.push_back(static_cast<std::uint32_t>(rank_.items.size() - 1));
  }

  // --- writing a rank --------------------------------------------------------------------

  /// Async b/e pairs of each async track as slices (b opens, e closes the innermost), in time
  /// order; n stays an instant.
  void pair_async(track& t) {
    std::vector<std::uint32_t> events = std::move(t.instants), open;
    t.instants.clear();
    std::stable_sort(events.begin(), events.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return rank_.items[a].ts < rank_.items[b].ts; });
    for (std::uint32_t e : events) {
      item& it = rank_.items[e];
      if (it.dur == -1) {
        open.push_back(e);
      } else if (it.dur == -2) {
        if (open.empty()) {
          skip("async ends (e) with no async begin (b) of their id");
          continue;
        }
        item& begun = rank_.items[open.back()];
        begun.dur = it.ts - begun.ts;
        if (it.args.bytes_size != 0) begun.args = join_args(begun.args, it.args);
        t.slices.push_back(open.back());
        open.pop_back();
      } else {
        t.instants.push_back(e);
      }
    }
    if (!open.empty()) skip("async begins (b) never ended", open.size());
  }

  // Of two slices meeting at one instant, the earlier ends first unless the new one lies within
  // it (a zero-length slice at its end).
  static bool ends_before(std::int64_t end, const item& next) { return end < next.ts || (end == next.ts && next.dur > 0); }

  /// Splits the slices of thread or async track `t` into lanes that nest (lane 0 the track
  /// itself), and binds the track's flows to its slices: a flow to the innermost slice that
  /// encloses it, an f without bp "e" to the next slice that begins at or after it.
  std::vector<std::vector<std::uint32_t>> lanes_of(track& t) {
    const auto& items = rank_.items;
    std::sort(t.slices.begin(), t.slices.end(), [&](std::uint32_t a, std::uint32_t b) {
      const item &x = items[a], &y = items[b];
      return x.ts != y.ts ? x.ts < y.ts : x.dur != y.dur ? x.dur > y.dur : x.order < y.order;
    });
    std::vector<std::uint32_t> enclosing, next;
    for (std::uint32_t f : t.flows) (rank_.flow_points[f].next_slice ? next : enclosing).push_back(f);
    const auto by_time = [&](std::uint32_t a, std::uint32_t b) { return rank_.flow_points[a].ts < rank_.flow_points[b].ts; };
    std::stable_sort(enclosing.begin(), enclosing.end(), by_time);
    std::stable_sort(next.begin(), next.end(), by_time);

    struct open_slice {
      std::int64_t end;
      std::uint32_t slice;
    };
    std::vector<std::vector<open_slice>> stacks;
    std::vector<std::vector<std::uint32_t>> lanes;
    const auto bind_enclosing = [&](std::uint32_t f) {
      const flow_point& p = rank_.flow_points[f];
      const open_slice* best = nullptr;
      for (const auto& stack : stacks)
        for (auto it = stack.rbegin(); it != stack.rend(); ++it)
          if (it->end >= p.ts) {
            if (best == nullptr || items[it->slice].ts > items[best->slice].ts) best = &*it;
            break;
          }
      if (best == nullptr) skip("flow events bound to no slice (none encloses them on their thread)");
      else rank_.marks.push_back({best->slice, p.id, p.ends});
    };
    std::size_t e = 0, n = 0;
    for (std::uint32_t s : t.slices) {
      const item& it = items[s];
      for (; n < next.size() && rank_.flow_points[next[n]].ts <= it.ts; ++n)
        rank_.marks.push_back({s, rank_.flow_points[next[n]].id, rank_.flow_points[next[n]].ends});
      for (; e < enclosing.size() && rank_.flow_points[enclosing[e]].ts < it.ts; ++e) bind_enclosing(enclosing[e]);
      std::size_t lane = 0;
      for (; lane < stacks.size(); ++lane) {
        auto& stack = stacks[lane];
        while (!stack.empty() && ends_before(stack.back().end, it)) stack.pop_back();
        if (stack.empty() || stack.back().end >= it.ts + it.dur) break;
      }
      if (lane == stacks.size()) stacks.emplace_back(), lanes.emplace_back();
      stacks[lane].push_back({it.ts + it.dur, s});
      lanes[lane].push_back(s);
    }
    for (; e < enclosing.size(); ++e) bind_enclosing(enclosing[e]);
    if (n < next.size()) skip("flow events bound to no slice (none begins after them on their thread)", next.size() - n);
    if (lanes.empty()) lanes.emplace_back();
    return lanes;
  }

  void descriptor(const message& track) {
    message packet;
    out_.packet(packet.nested(pf::packet_track_descriptor, track));
  }

  static std::int32_t as_int32(std::int64_t v, const char* what) {
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
      throw error(fmt::format("{} {} does not fit Perfetto's descriptor (int32): merge to JSON (-o JOB.json)", what, v));
    return static_cast<std::int32_t>(v);
  }

  void write_rank() {
    auto& r = rank_;
    for (track& t : r.tracks)
      if (!t.open_b.empty()) skip("slices begun (B) never ended (E)", t.open_b.size());
    // Processes in their sort order, then as first seen; the job's global track last.
    std::vector<std::uint32_t> order(r.processes.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      const process &x = r.processes[a], &y = r.processes[b];
      const bool gx = x.pid == std::numeric_limits<std::int64_t>::min(), gy = y.pid == std::numeric_limits<std::int64_t>::min();
      if (gx != gy) return gy;
      return x.sort_index.value_or(0) < y.sort_index.value_or(0);
    });
    struct sequence {
      std::uint32_t track;
      std::vector<std::uint32_t> slices;
    };
    std::vector<sequence> sequences;
    for (std::uint32_t pi : order) {
      process& p = r.processes[pi];
      const bool global = p.pid == std::numeric_limits<std::int64_t>::min();
      if (!global) {
        p.uuid = next_uuid_++;
        message pd, track;
        pd.int64(pf::process_pid, as_int32(p.pid, "pid"));
        if (!p.name.empty()) pd.bytes(pf::process_name, p.name);
        for (const std::string& label : p.labels) pd.bytes(process_labels_field, label);
        track.varint(pf::track_uuid, p.uuid).nested(pf::track_process, pd);
        if (p.sort_index) track.int64(pf::track_sibling_order_rank, *p.sort_index);
        descriptor(track);
      }
      // Threads in their sort order, then as first seen; then async and counter tracks.
      std::vector<std::uint32_t> tracks = p.tracks;
      std::stable_sort(tracks.begin(), tracks.end(), [&](std::uint32_t a, std::uint32_t b) {
        const track &x = r.tracks[a], &y = r.tracks[b];
        if ((x.kind == track_kind::thread) != (y.kind == track_kind::thread)) return x.kind == track_kind::thread;
        return x.sort_index.value_or(0) < y.sort_index.value_or(0);
      });
      for (std::uint32_t ti : tracks) {
        track& t = r.tracks[ti];
        if (t.kind == track_kind::process) {
          t.uuid = p.uuid;
          sequences.push_back({ti, {}});
          continue;
        }
        t.uuid = next_uuid_++;
        message td;
        td.varint(pf::track_uuid, t.uuid);
        if (t.kind == track_kind::thread && t.tid) {
          message thread;
          thread.int64(pf::thread_pid, as_int32(p.pid, "pid")).int64(pf::thread_tid, as_int32(*t.tid, "tid"));
          if (!t.name.empty()) thread.bytes(pf::thread_name, t.name);
          td.nested(pf::track_thread, thread);
        } else {
          if (t.kind == track_kind::thread && t.name.empty()) t.name = t.tid_text;
          if (!global) td.varint(pf::track_parent_uuid, p.uuid);
          td.bytes(pf::track_name, t.name);
          if (t.kind == track_kind::counter) td.nested(pf::track_counter, message{});
        }
        if (t.sort_index) td.int64(pf::track_sibling_order_rank, *t.sort_index);
        descriptor(td);
        if (t.kind == track_kind::counter) {
          sequences.push_back({ti, {}});
          continue;
        }
        if (t.kind == track_kind::async) pair_async(t);
        std::vector<std::vector<std::uint32_t>> lanes = lanes_of(t);
        sequences.push_back({ti, std::move(lanes[0])});
        const std::string lane_base = t.name.empty() ? "thread " + t.tid_text : t.name;
        const std::uint64_t parent_uuid = t.uuid;
        for (std::size_t k = 1; k < lanes.size(); ++k) {
          // A lane of slices that overlap the track's own without nesting: a child track.
          track lane;
          lane.kind = track_kind::lane;
          lane.uuid = next_uuid_++;
          lane.name = fmt::format("{} (overlapping {})", lane_base, k);
          message ld;
          ld.varint(pf::track_uuid, lane.uuid)
              .varint(pf::track_parent_uuid, parent_uuid)
              .bytes(pf::track_name, lane.name)
              .varint(pf::track_sibling_order_rank, k);
          descriptor(ld);
          r.tracks.push_back(std::move(lane));
          sequences.push_back({static_cast<std::uint32_t>(r.tracks.size() - 1), std::move(lanes[k])});
        }
      }
    }
    // Flow marks by slice, for the writer.
    std::stable_sort(r.marks.begin(), r.marks.end(), [](const flow_mark& a, const flow_mark& b) { return a.slice < b.slice; });
    for (sequence& s : sequences) write_sequence(r.tracks[s.track], s.slices);
  }

  /// One track's events as one packet sequence.
  void write_sequence(const track& t, const std::vector<std::uint32_t>& slices) {
    const auto& items = rank_.items;
    std::vector<std::uint32_t> instants = t.kind == track_kind::counter ? t.samples : t.instants;
    if (slices.empty() && instants.empty()) return;
    std::stable_sort(instants.begin(), instants.end(), [&](std::uint32_t a, std::uint32_t b) { return items[a].ts < items[b].ts; });
    seq_ = next_sequence_++;
    started_ = false;
    track_uuid_ = t.uuid;
    std::vector<std::int64_t> open;
    std::size_t k = 0;
    const auto instants_until = [&](std::int64_t time, bool inclusive) {
      for (; k < instants.size() && (items[instants[k]].ts < time || (inclusive && items[instants[k]].ts == time)); ++k)
        point(items[instants[k]], t.kind == track_kind::counter);
    };
    for (std::uint32_t s : slices) {
      const item& it = items[s];
      while (!open.empty() && ends_before(open.back(), it)) {
        instants_until(open.back(), true);
        end(open.back());
        open.pop_back();
      }
      instants_until(it.ts, false);
      begin(it, s);
      open.push_back(it.ts + it.dur);
    }
    while (!open.empty()) {
      instants_until(open.back(), true);
      end(open.back());
      open.pop_back();
    }
    instants_until(std::numeric_limits<std::int64_t>::max(), true);
  }

  // The sequence's first packet: fresh incremental state, its track and clock 64 as defaults,
  // and a clock snapshot at `t0` making clock 64 incremental on TRACE_FILE, the trace clock
  // (as strata's own exports without a session's BOOTTIME: trace_processor then takes the
  // file's clock as aligned, so no clock goes unrelated), with REALTIME at the same instant.
  void start(std::int64_t t0) {
    started_ = true;
    last_ = t0;
    message defaults, event_defaults, snapshot, packet;
    event_defaults.varint(pf::track_event_defaults_track_uuid, track_uuid_);
    defaults.varint(pf::defaults_timestamp_clock_id, pf::sequence_clock).nested(pf::defaults_track_event, event_defaults);
    const auto clock = [&](std::uint64_t id, std::uint64_t value, bool incremental) {
      message c;
      c.varint(pf::clock_id, id).varint(pf::clock_timestamp, value);
      if (incremental) c.varint(pf::clock_is_incremental, 1);
      snapshot.nested(pf::snapshot_clocks, c);
    };
    const auto at = static_cast<std::uint64_t>(t0);
    clock(pf::sequence_clock, at, true);
    clock(pf::builtin_clock_trace_file, at, false);
    std::int64_t wall = 0;
    if (base_time_ns_ && !__builtin_add_overflow(*base_time_ns_, t0, &wall) && wall >= 0)
      clock(pf::builtin_clock_realtime, static_cast<std::uint64_t>(wall), false);
    snapshot.varint(pf::snapshot_primary_trace_clock, pf::builtin_clock_trace_file);
    packet.varint(pf::packet_sequence_id, seq_)
        .varint(pf::packet_sequence_flags, pf::seq_incremental_state_cleared)
        .nested(pf::packet_defaults, defaults)
        .nested(pf::packet_clock_snapshot, snapshot);
    out_.packet(packet);
  }

  /// A packet of one TrackEvent at `t`: its interned strings first, when the sequence lacks them.
  void packet(std::int64_t t, const message& event, const item* it) {
    if (!started_) start(t);
    message interned, p;
    if (it != nullptr) {
      if (it->name_iid != 0) names_.send(pf::interner::event_name, it->name_iid, seq_, interned);
      if (it->category_iid != 0) names_.send(pf::interner::category, it->category_iid, seq_, interned);
      for (std::uint32_t k = 0; k < it->args.iids_size; ++k)
        names_.send(pf::interner::annotation_name, rank_.arg_iids[it->args.iids_begin + k], seq_, interned);
    }
    p.varint(pf::packet_timestamp, static_cast<std::uint64_t>(t - last_)).varint(pf::packet_sequence_id, seq_);
    last_ = t;
    if (!interned.empty()) p.nested(pf::packet_interned_data, interned);
    out_.packet(p.nested(pf::packet_track_event, event));
  }

  message named_event(const item& it, std::uint64_t type) const {
    message e;
    e.varint(pf::event_type, type);
    if (it.name_iid != 0) e.varint(pf::event_name_iid, it.name_iid);
    if (it.category_iid != 0) e.varint(pf::event_category_iids, it.category_iid);
    e.raw(std::string_view(rank_.arg_bytes).substr(it.args.bytes_begin, it.args.bytes_size));
    return e;
  }

  void begin(const item& it, std::uint32_t slice) {
    message e = named_event(it, pf::type_slice_begin);
    const auto first = std::lower_bound(rank_.marks.begin(), rank_.marks.end(), slice,
                                        [](const flow_mark& m, std::uint32_t s) { return m.slice < s; });
    for (auto m = first; m != rank_.marks.end() && m->slice == slice; ++m)
      e.varint(m->ends ? pf::event_terminating_flow_ids : pf::event_flow_ids, m->id);
    packet(it.ts, e, &it);
  }
  void end(std::int64_t t) {
    message e;
    e.varint(pf::event_type, pf::type_slice_end);
    packet(t, e, nullptr);
  }
  void point(const item& it, bool counter) {
    if (!counter) {
      packet(it.ts, named_event(it, pf::type_instant), &it);
      return;
    }
    message e;
    e.varint(pf::event_type, pf::type_counter);
    if (it.whole) e.int64(pf::event_counter_value, it.count);
    else e.double_value(pf::event_double_counter_value, it.value);
    packet(it.ts, e, nullptr);
  }

  std::filesystem::path path_;
  pf::packet_stream out_;
  std::optional<std::int64_t> base_time_ns_;
  pf::interner names_;
  json_tree tree_;
  rank_state rank_;
  std::map<std::string, std::uint64_t> skipped_;
  std::uint64_t events_ = 0;
  std::uint64_t next_uuid_ = 1;
  std::uint64_t next_flow_id_ = 1;
  std::uint32_t next_sequence_ = 1;
  // the sequence being written
  std::uint32_t seq_ = 0;
  std::uint64_t track_uuid_ = 0;
  bool started_ = false;
  std::int64_t last_ = 0;
};

}  // namespace detail
}  // namespace report
}  // namespace v1
}  // namespace strata
