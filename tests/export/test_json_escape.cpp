// JSON string escaping: valid UTF-8 is copied, everything else becomes valid JSON.
// Expected outputs are written out by hand; "?" stands for U+FFFD (EF BF BD) below.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "strata/detail/json_escape.hpp"

namespace {

std::string escape(std::string_view in) {
  fmt::memory_buffer out;
  strata::detail::append_json_string(out, in);
  return fmt::to_string(out);
}

// The quoted JSON string expected, with each '?' standing for one U+FFFD.
std::string quoted(std::string_view body) {
  std::string s = "\"";
  for (char c : body) {
    if (c == '?')
      s += "\xef\xbf\xbd";
    else
      s += c;
  }
  return s + "\"";
}

}  // namespace

TEST_CASE("json: plain ASCII is copied") {
  CHECK(escape("") == "\"\"");
  CHECK(escape("aten::softmax") == "\"aten::softmax\"");
  CHECK(escape(" ~{}[]:,/") == "\" ~{}[]:,/\"");
  CHECK(escape("\x7f") == "\"\x7f\"");  // DEL needs no escape in JSON
  const std::string long_run(1000, 'x');
  CHECK(escape(long_run) == "\"" + long_run + "\"");
}

TEST_CASE("json: quotes, backslashes and control bytes are escaped") {
  CHECK(escape("say \"hi\"") == R"("say \"hi\"")");
  CHECK(escape("C:\\path\\") == R"("C:\\path\\")");
  CHECK(escape("\"\\") == R"("\"\\")");
  CHECK(escape("a\nb\tc\rd\be\ff") == R"("a\nb\tc\rd\be\ff")");
  CHECK(escape(std::string_view("\0", 1)) == R"("\u0000")");
  CHECK(escape(std::string_view("a\0b", 3)) == R"("a\u0000b")");
  CHECK(escape("\x01\x1f\x1b") == R"("\u0001\u001f\u001b")");
  CHECK(escape("\x0b") == R"("\u000b")");  // vertical tab has no short form in JSON
  CHECK(escape(" \x1f ") == R"(" \u001f ")");
}

TEST_CASE("json: valid UTF-8 is copied unchanged, at every length boundary") {
  const char* valid[] = {
      "\xc2\x80",          // U+0080, smallest 2-byte
      "\xc3\xa9",          // é
      "\xdf\xbf",          // U+07FF, largest 2-byte
      "\xe0\xa0\x80",      // U+0800, smallest 3-byte
      "\xe2\x82\xac",      // €
      "\xed\x9f\xbf",      // U+D7FF, just below the surrogates
      "\xee\x80\x80",      // U+E000, just above them
      "\xef\xbf\xbd",      // U+FFFD itself
      "\xef\xbf\xbf",      // U+FFFF
      "\xf0\x90\x80\x80",  // U+10000, smallest 4-byte
      "\xf0\x9f\x98\x80",  // 😀
      "\xf4\x8f\xbf\xbf",  // U+10FFFF, the last code point
  };
  for (const char* s : valid) {
    CAPTURE(s);
    CHECK(escape(s) == "\"" + std::string(s) + "\"");
    CHECK(strata::detail::utf8_sequence_length(s) == std::string_view(s).size());
  }
  CHECK(escape("na\xc3\xafve \xe2\x80\x94 \xe6\xbc\xa2\xe5\xad\x97") ==
        "\"na\xc3\xafve \xe2\x80\x94 \xe6\xbc\xa2\xe5\xad\x97\"");
}

TEST_CASE("json: each byte that is not part of valid UTF-8 becomes U+FFFD") {
  SUBCASE("overlong forms") {
    CHECK(escape("\xc0\x80") == quoted("??"));      // NUL, 2 bytes
    CHECK(escape("\xc1\xbf") == quoted("??"));      // U+007F, 2 bytes
    CHECK(escape("\xe0\x80\x80") == quoted("???"));  // NUL, 3 bytes
    CHECK(escape("\xe0\x9f\xbf") == quoted("???"));  // U+07FF, 3 bytes
    CHECK(escape("\xf0\x80\x80\x80") == quoted("????"));
    CHECK(escape("\xf0\x8f\xbf\xbf") == quoted("????"));  // U+FFFF, 4 bytes
  }
  SUBCASE("UTF-16 surrogates") {
    CHECK(escape("\xed\xa0\x80") == quoted("???"));  // U+D800
    CHECK(escape("\xed\xbf\xbf") == quoted("???"));  // U+DFFF
    CHECK(escape("\xed\xa0\xbd\xed\xb8\x80") == quoted("??????"));  // a CESU-8 pair
  }
  SUBCASE("above U+10FFFF") {
    CHECK(escape("\xf4\x90\x80\x80") == quoted("????"));  // U+110000
    CHECK(escape("\xf5\x80\x80\x80") == quoted("????"));
    CHECK(escape("\xf7\xbf\xbf\xbf") == quoted("????"));
    CHECK(escape("\xf8\x88\x80\x80\x80") == quoted("?????"));  // old 5-byte form
    CHECK(escape("\xfe") == quoted("?"));
    CHECK(escape("\xff") == quoted("?"));
  }
  SUBCASE("truncated sequences") {
    CHECK(escape("\xc3") == quoted("?"));
    CHECK(escape("\xe2\x82") == quoted("??"));
    CHECK(escape("\xf0\x9f\x98") == quoted("???"));
    CHECK(escape("\xc3" "A") == quoted("?A"));
    CHECK(escape("\xe2\x82" "A") == quoted("??A"));
    CHECK(escape("\xf0\x9f\x98" "A") == quoted("???A"));
    CHECK(escape("\xe2" "\"") == quoted("?\\\""));  // the quote after it is still escaped
  }
  SUBCASE("stray continuation bytes") {
    CHECK(escape("\x80") == quoted("?"));
    CHECK(escape("\xbf\xbf") == quoted("??"));
    CHECK(escape("a\x80" "b") == quoted("a?b"));
  }
  SUBCASE("a valid sequence right after an invalid byte survives") {
    CHECK(escape("\xc3\xc3\xa9") == quoted("?\xc3\xa9"));
    CHECK(escape("\xff\xf0\x9f\x98\x80") == quoted("?\xf0\x9f\x98\x80"));
    CHECK(escape("\xe2\x82\xe2\x82\xac") == quoted("??\xe2\x82\xac"));
  }
  SUBCASE("the sequence-length check itself") {
    CHECK(strata::detail::utf8_sequence_length("\xc0\x80") == 0);
    CHECK(strata::detail::utf8_sequence_length("\xed\xa0\x80") == 0);
    CHECK(strata::detail::utf8_sequence_length("\xf4\x90\x80\x80") == 0);
    CHECK(strata::detail::utf8_sequence_length("\xe2\x82") == 0);
    CHECK(strata::detail::utf8_sequence_length("\x80") == 0);
    CHECK(strata::detail::utf8_sequence_length("\xc3\xa9rest") == 2);
  }
}
