// The JSON parsers strata-report could read traces with, on the same file and the same work:
// every traceEvents entry's ph, cat, name, pid, tid, the text of ts and dur, and args'
// "External id". Prints the events seen; time and peak memory are measured from outside
// (benchmarks/big_trace.py --parsers).
//
// Not part of the build (two of the three parsers are not strata dependencies):
//   apt-get install rapidjson-dev nlohmann-json3-dev libsimdjson-dev
//   g++ -std=c++20 -O2 -DNDEBUG benchmarks/json_parsers.cpp -lsimdjson -o json_parsers
//   json_parsers rapidjson-sax|nlohmann-sax|simdjson-ondemand TRACE
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <rapidjson/filereadstream.h>
#include <rapidjson/reader.h>
#include <simdjson.h>

namespace {

// What each parser hands over per event, kept the same for all three.
struct fields {
  std::string ph, cat, name, pid, tid, ts, dur, external_id;
  void clear() { ph.clear(), cat.clear(), name.clear(), pid.clear(), tid.clear(), ts.clear(), dur.clear(), external_id.clear(); }
};

struct totals {
  std::size_t events = 0, complete = 0, bytes = 0;
  void add(const fields& f) {
    ++events;
    complete += f.ph == "X";
    bytes += f.name.size() + f.ts.size() + f.dur.size() + f.cat.size() + f.external_id.size();
  }
};

// A key path tracker shared by the two SAX handlers: depth 1 is the document, 2 traceEvents'
// array, 3 an event, 4 its args.
struct sax_state {
  int depth = 0;
  bool in_events = false;
  std::string key;
  std::string* target = nullptr;
  fields f;
  totals t;
  void on_key(std::string_view k) {
    target = nullptr;
    if (depth == 1) key.assign(k);
    if (in_events && depth == 3) {
      if (k == "ph") target = &f.ph;
      else if (k == "cat") target = &f.cat;
      else if (k == "name") target = &f.name;
      else if (k == "pid") target = &f.pid;
      else if (k == "tid") target = &f.tid;
      else if (k == "ts") target = &f.ts;
      else if (k == "dur") target = &f.dur;
    }
    if (in_events && depth == 4 && k == "External id") target = &f.external_id;
  }
  void on_scalar(std::string_view v) {
    if (target) target->assign(v);
    target = nullptr;
  }
  void open(bool array) {
    if (depth == 1 && array && key == "traceEvents") in_events = true;
    if (in_events && depth == 2) f.clear();
    ++depth;
    target = nullptr;
  }
  void close() {
    --depth;
    if (in_events && depth == 2) t.add(f);
    if (in_events && depth == 1) in_events = false;
  }
};

struct rapid_handler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, rapid_handler>, sax_state {
  bool Null() { return on_scalar("null"), true; }
  bool Bool(bool b) { return on_scalar(b ? "true" : "false"), true; }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return on_scalar({s, n}), true; }
  bool String(const char* s, rapidjson::SizeType n, bool) { return on_scalar({s, n}), true; }
  bool Key(const char* s, rapidjson::SizeType n, bool) { return on_key({s, n}), true; }
  bool StartObject() { return open(false), true; }
  bool EndObject(rapidjson::SizeType) { return close(), true; }
  bool StartArray() { return open(true), true; }
  bool EndArray(rapidjson::SizeType) { return close(), true; }
};

int run_rapidjson(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return 1;
  static char buffer[1 << 16];
  rapidjson::FileReadStream in(f, buffer, sizeof buffer);
  rapid_handler h;
  rapidjson::Reader r;
  constexpr unsigned flags = rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseIterativeFlag |
                             rapidjson::kParseValidateEncodingFlag;
  const bool ok = !r.Parse<flags>(in, h).IsError();
  std::fclose(f);
  std::printf("%zu events, %zu complete, %zu bytes\n", h.t.events, h.t.complete, h.t.bytes);
  return ok ? 0 : 1;
}

struct nlohmann_handler : nlohmann::json_sax<nlohmann::json>, sax_state {
  bool null() override { return on_scalar("null"), true; }
  bool boolean(bool b) override { return on_scalar(b ? "true" : "false"), true; }
  // Integers come without their text; floats with it.
  bool number_integer(number_integer_t v) override { return on_scalar(std::to_string(v)), true; }
  bool number_unsigned(number_unsigned_t v) override { return on_scalar(std::to_string(v)), true; }
  bool number_float(number_float_t, const string_t& s) override { return on_scalar(s), true; }
  bool string(string_t& s) override { return on_scalar(s), true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(false), true; }
  bool key(string_t& k) override { return on_key(k), true; }
  bool end_object() override { return close(), true; }
  bool start_array(std::size_t) override { return open(true), true; }
  bool end_array() override { return close(), true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

int run_nlohmann(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return 1;
  nlohmann_handler h;
  const bool ok = nlohmann::json::sax_parse(f, &h);
  std::fclose(f);
  std::printf("%zu events, %zu complete, %zu bytes\n", h.t.events, h.t.complete, h.t.bytes);
  return ok ? 0 : 1;
}

std::string text_of(simdjson::ondemand::value v) {
  if (v.type() == simdjson::ondemand::json_type::string) return std::string(std::string_view(v.get_string()));
  std::string_view token = v.raw_json_token();  // runs up to the next token: drop the spaces
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' || token.back() == '\t'))
    token.remove_suffix(1);
  return std::string(token);
}

int run_simdjson(const char* path) {
  // On-demand parses a document held whole in memory (padded); the file is loaded first.
  simdjson::padded_string text = simdjson::padded_string::load(path);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc = parser.iterate(text);
  totals t;
  fields f;
  for (simdjson::ondemand::value e : doc["traceEvents"].get_array()) {
    f.clear();
    for (auto field : e.get_object()) {
      const std::string_view k = field.unescaped_key();
      simdjson::ondemand::value v = field.value();
      if (k == "ph") f.ph = text_of(v);
      else if (k == "cat") f.cat = text_of(v);
      else if (k == "name") f.name = text_of(v);
      else if (k == "pid") f.pid = text_of(v);
      else if (k == "tid") f.tid = text_of(v);
      else if (k == "ts") f.ts = text_of(v);
      else if (k == "dur") f.dur = text_of(v);
      else if (k == "args") {
        for (auto a : v.get_object())
          if (std::string_view(a.unescaped_key()) == "External id") f.external_id = text_of(a.value());
      }
    }
    t.add(f);
  }
  std::printf("%zu events, %zu complete, %zu bytes\n", t.events, t.complete, t.bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: json_parsers rapidjson-sax|nlohmann-sax|simdjson-ondemand TRACE\n");
    return 2;
  }
  const std::string_view which = argv[1];
  try {
    if (which == "rapidjson-sax") return run_rapidjson(argv[2]);
    if (which == "nlohmann-sax") return run_nlohmann(argv[2]);
    if (which == "simdjson-ondemand") return run_simdjson(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown parser '%s'\n", argv[1]);
  return 2;
}
