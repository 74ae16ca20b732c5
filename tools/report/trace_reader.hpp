// tools/report/trace_reader.hpp: a saved Chrome trace JSON (strata's own, or torch.profiler's
// Kineto trace), plain or gzip-compressed, read back into op_events for key_averages() (rules:
// docs/key-averages.md, "Reading a saved trace").
//
// The document is streamed through RapidJSON's SAX reader in 64 KiB blocks, and a large
// traceEvents array in pieces parsed on two threads (report/parallel_parse.hpp): memory holds
// the events and a piece, never the document. Needs rapidjson-dev (headers) and zlib (link -lz), so the
// umbrella header strata/strata.hpp does not include it.
#pragma once

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <istream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "strata/analysis/averages.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/error.hpp"
#include "strata/profiler_config.hpp"
#include "strata/record.hpp"
#include "report/gzip_input.hpp"
#include "report/parallel_parse.hpp"
#include "report/rapidjson_reader.hpp"
#include "report/trace_events.hpp"
#include "report/trace_input.hpp"

namespace strata {
inline namespace v1 {
namespace report {
namespace detail {

/// RapidJSON's parse errors, in the words strata's messages use.
inline std::string_view json_error_text(rapidjson::ParseErrorCode code) noexcept {
  switch (code) {
    case rapidjson::kParseErrorDocumentEmpty: return "the document is empty";
    case rapidjson::kParseErrorDocumentRootNotSingular: return "text after the end of the document";
    case rapidjson::kParseErrorValueInvalid: return "expected value";
    case rapidjson::kParseErrorObjectMissName: return "expected a key in quotes";
    case rapidjson::kParseErrorObjectMissColon: return "expected ':' after a key";
    case rapidjson::kParseErrorObjectMissCommaOrCurlyBracket: return "expected ',' or '}'";
    case rapidjson::kParseErrorArrayMissCommaOrSquareBracket: return "expected ',' or ']'";
    case rapidjson::kParseErrorStringUnicodeEscapeInvalidHex: return "bad \\u escape";
    case rapidjson::kParseErrorStringUnicodeSurrogateInvalid: return "bad UTF-16 surrogate in a \\u escape";
    case rapidjson::kParseErrorStringEscapeInvalid: return "bad escape in a string";
    case rapidjson::kParseErrorStringMissQuotationMark: return "unterminated string";
    case rapidjson::kParseErrorStringInvalidEncoding: return "a string is not valid UTF-8";
    case rapidjson::kParseErrorNumberTooBig: return "number too big";
    case rapidjson::kParseErrorNumberMissFraction: return "expected digits after '.'";
    case rapidjson::kParseErrorNumberMissExponent: return "expected digits in the exponent";
    default: return "unexpected character";
  }
}

/// One pass of the parser over `source`; `kineto` fixes the format (see trace_builder). With
/// `split`, a large traceEvents array is parsed on several threads (report/parallel_parse.hpp);
/// nothing is returned when that was done and the parse failed anywhere: the caller parses
/// again without, for the serial parse's own error. Raises the error otherwise.
template <class Source>
std::optional<trace_builder> parse_trace(Source& source, const std::string& name, std::optional<bool> kineto,
                                         read_options options = {}, const split_options* split = nullptr) {
  json_input<Source> in(source);
  trace_builder builder(name, kineto, options);
  std::optional<piece_reader<Source>> pieces;
  if (split != nullptr) builder.set_events_hook(&pieces.emplace(in, *split));
  rapidjson::Reader reader;
  // Numbers as their text (exact nanoseconds) and strings that must be UTF-8. The parser
  // recurses once per nesting level, but the builder stops it past max_json_depth, before it
  // goes deeper, so a hostile document cannot exhaust the stack (and the recursive parser is a
  // fifth quicker than RapidJSON's iterative one).
  const rapidjson::ParseResult result = reader.Parse<trace_parse_flags>(in, builder);
  builder.set_events_hook(nullptr);
  const bool failed = !source.failure().empty() || builder.too_deep() || !builder.failure().empty() || result.IsError();
  if (failed && pieces && pieces->used()) return std::nullopt;
  if (!source.failure().empty()) throw error("cannot read trace " + name + ": " + source.failure());
  if (builder.too_deep())
    throw error("trace " + name + " is not a trace: values nest more than " +
                std::to_string(max_json_depth) + " levels deep (line " + std::to_string(in.line()) + ")");
  if (!builder.failure().empty()) throw error(builder.failure());
  if (result.IsError())
    throw error("trace " + name + " is not valid JSON: line " + std::to_string(in.line()) + ": " +
                std::string(json_error_text(result.Code())));
  return builder;
}

/// Parses what `open()` gives; opens it once more in the rare document whose format is told
/// only after its events, and once more when a parse on several threads (`split`) failed.
template <class Open>
saved_trace read_trace_from(Open open, const std::string& name, read_options options = {},
                            const split_options* split = nullptr) {
  const auto pass = [&](std::optional<bool> kineto) {
    if (split != nullptr) {
      auto source = open();
      if (std::optional<trace_builder> b = parse_trace(source, name, kineto, options, split)) return std::move(*b);
    }
    auto source = open();
    return *parse_trace(source, name, kineto, options);
  };
  trace_builder first = pass(std::nullopt);
  if (!first.needs_second_pass()) return first.finish();
  return pass(first.final_kineto()).finish();
}

}  // namespace detail

/// Reads a Chrome trace JSON document held in memory; `source` names it in error messages.
inline saved_trace read_trace_bytes(std::string_view json, const std::string& source = "<memory>",
                                    read_options options = {}) {
  return detail::read_trace_from([&] { return detail::memory_source(json); }, source, options);
}

/// Reads a Chrome trace JSON document from `in`; `source` names it in error messages. The
/// stream is read into memory first (read_trace(path) streams a file instead).
/// Raises `strata::error` when it is not valid JSON or holds no traceEvents array.
inline saved_trace read_trace(std::istream& in, const std::string& source = "<stream>") {
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return read_trace_bytes(text, source);
}

/// Reads the trace.json at `path` (strata's, or torch.profiler's Kineto trace), plain or
/// gzip-compressed (recognised by gzip's magic bytes, whatever the name): its complete (`X`)
/// events, and `B`/`E` pairs, as op_events. Raises `strata::error` naming the file when it
/// cannot be read, is not valid JSON or has no traceEvents array. A trace whose events run
/// past 4 MiB is parsed on two threads (this one and a helper), with the result and errors
/// of one.
///
/// **Example**
/// ```
/// strata::saved_trace t = strata::read_trace("strata-out/trace.json");
/// fmt::print("{}", strata::key_averages(t).table({.sort_by = "self_cpu_time_total"}));
/// ```
inline saved_trace read_trace(const std::filesystem::path& path, read_options options = {}) {
  const std::string source = "'" + path.string() + "'";
  const detail::split_options split;
  return detail::parse_trace_file(path, source,
                                  [&](auto open) { return detail::read_trace_from(open, source, options, &split); });
}

/// key_averages() of a saved trace, labelled with its device name and lost-record count. The
/// memory columns are shown when the trace has `[memory]` events and the FLOPs column when an
/// op has a FLOPs count, whatever the options say (options set to true show them always).
inline averages key_averages(const saved_trace& trace, key_averages_options opt = {}) {
  opt.device_name = trace.device_name;
  opt.profile_memory = opt.profile_memory || !trace.memory.empty();
  opt.with_flops = opt.with_flops || trace.has_flops();
  averages out = key_averages(std::span<const op_event>(trace.events), std::span<const memory_event>(trace.memory), opt);
  out.records_lost = trace.records_lost;
  out.overflow = trace.overflow;
  out.peak_flops_per_s = trace.peak_flops_per_s;
  out.peak_hbm_bytes_per_s = trace.peak_hbm_bytes_per_s;
  return out;
}

}  // namespace report
}  // namespace v1
}  // namespace strata
