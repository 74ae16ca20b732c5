// libFuzzer target: strata's JSON string escaping. Any bytes in; the output must be exactly
// one JSON string that a real parser (RapidJSON, validating UTF-8) reads back, and valid UTF-8
// input must come back byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "strata/detail/json_escape.hpp"
#include "report/rapidjson_reader.hpp"

namespace {

struct one_string : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, one_string> {
  std::string value;
  int values = 0;
  bool String(const char* s, rapidjson::SizeType n, bool) {
    value.assign(s, n);
    ++values;
    return true;
  }
  bool Default() { return false; }  // anything but a string is a failure of the escaper
};

/// RapidJSON's own UTF-8 check, so the property does not lean on strata's.
bool valid_utf8(std::string_view bytes) {
  rapidjson::MemoryStream in(bytes.data(), bytes.size());  // no BOM handling: bytes as they are
  while (in.Tell() < bytes.size()) {
    unsigned code = 0;
    if (!rapidjson::UTF8<>::Decode(in, &code)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  fmt::memory_buffer out;
  strata::detail::append_json_string(out, input);
  const std::string json(out.data(), out.size());

  one_string h;
  rapidjson::Reader reader;
  rapidjson::StringStream in(json.c_str());
  constexpr unsigned flags = rapidjson::kParseValidateEncodingFlag | rapidjson::kParseStopWhenDoneFlag;
  if (reader.Parse<flags>(in, h).IsError() || h.values != 1 || in.Tell() != json.size()) std::abort();
  if (valid_utf8(input) && h.value != input) std::abort();  // valid UTF-8 round-trips exactly
  if (!valid_utf8(h.value)) std::abort();
  return 0;
}
