// gzip output: zlib loaded at run time writes a valid gzip stream (header, CRC-32 and size
// trailer checked here by hand), atomically; trace writers compress a path ending in ".gz".
// check_perfetto_trace.py decompresses whole traces with Python's gzip module.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <zlib.h>  // only to compare strata's declaration of z_stream with zlib's

#include "strata/export/chrome_trace.hpp"
#include "strata/export/write_trace.hpp"
#include "strata/detail/trace_file.hpp"
#include "support.hpp"

using strata_test::read_file;

// strata declares zlib's stream struct itself (so that programs need no zlib.h); it must match.
static_assert(sizeof(strata::detail::zlib_stream) == sizeof(z_stream));
static_assert(offsetof(strata::detail::zlib_stream, next_in) == offsetof(z_stream, next_in));
static_assert(offsetof(strata::detail::zlib_stream, avail_in) == offsetof(z_stream, avail_in));
static_assert(offsetof(strata::detail::zlib_stream, total_in) == offsetof(z_stream, total_in));
static_assert(offsetof(strata::detail::zlib_stream, next_out) == offsetof(z_stream, next_out));
static_assert(offsetof(strata::detail::zlib_stream, avail_out) == offsetof(z_stream, avail_out));
static_assert(offsetof(strata::detail::zlib_stream, total_out) == offsetof(z_stream, total_out));
static_assert(offsetof(strata::detail::zlib_stream, msg) == offsetof(z_stream, msg));
static_assert(offsetof(strata::detail::zlib_stream, state) == offsetof(z_stream, state));
static_assert(offsetof(strata::detail::zlib_stream, zalloc) == offsetof(z_stream, zalloc));
static_assert(offsetof(strata::detail::zlib_stream, zfree) == offsetof(z_stream, zfree));
static_assert(offsetof(strata::detail::zlib_stream, opaque) == offsetof(z_stream, opaque));
static_assert(offsetof(strata::detail::zlib_stream, data_type) == offsetof(z_stream, data_type));
static_assert(offsetof(strata::detail::zlib_stream, adler) == offsetof(z_stream, adler));
static_assert(offsetof(strata::detail::zlib_stream, reserved) == offsetof(z_stream, reserved));
static_assert(strata::detail::zlib_api::finish == Z_FINISH && strata::detail::zlib_api::no_flush == Z_NO_FLUSH);
static_assert(strata::detail::zlib_api::stream_end == Z_STREAM_END && strata::detail::zlib_api::deflated == Z_DEFLATED);

namespace gzip_test {

// CRC-32 (IEEE, reflected, as gzip's trailer has it), bit by bit: independent of zlib.
std::uint32_t crc32_of(std::string_view s) {
  std::uint32_t crc = 0xffffffffu;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::uint32_t le32(std::string_view s, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)]);
  return v;
}

// A gzip member (RFC 1952): magic, deflate, and a trailer holding the input's CRC-32 and size.
void check_gzip_of(std::string_view file, std::string_view input) {
  REQUIRE(file.size() >= 18);
  CHECK(static_cast<unsigned char>(file[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(file[1]) == 0x8b);
  CHECK(file[2] == 8);
  CHECK(le32(file, file.size() - 8) == crc32_of(input));
  CHECK(le32(file, file.size() - 4) == static_cast<std::uint32_t>(input.size()));
}

}  // namespace gzip_test

TEST_CASE("gzip_file: a valid gzip stream of everything written, renamed into place on commit") {
  strata_test::temp_dir dir;
  std::string input;
  for (int i = 0; i < 200000; ++i) input += "{\"ph\":\"X\",\"name\":\"step " + std::to_string(i % 97) + "\"},\n";
  REQUIRE(input.size() > (std::size_t{1} << 22));  // several output chunks
  strata::detail::gzip_file f(dir / "t.gz");
  f.write(std::string_view(input).substr(0, 1000));
  f.write(std::string_view(input).substr(1000));
  CHECK(dir.entries().size() == 1);  // only the temporary file so far
  CHECK(dir.entries()[0] != "t.gz");
  f.commit();
  CHECK(dir.entries() == std::vector<std::string>{"t.gz"});
  const std::string file = read_file(dir / "t.gz");
  CHECK(f.bytes_written() == file.size());
  CHECK(file.size() < input.size() / 5);
  gzip_test::check_gzip_of(file, input);
}

TEST_CASE("gzip_file: an empty input and an abandoned file") {
  strata_test::temp_dir dir;
  {
    strata::detail::gzip_file f(dir / "empty.gz");
    f.commit();
  }
  gzip_test::check_gzip_of(read_file(dir / "empty.gz"), "");
  {
    strata::detail::gzip_file f(dir / "abandoned.gz");
    f.write("never committed");
  }
  CHECK(dir.entries() == std::vector<std::string>{"empty.gz"});
}

TEST_CASE("trace writers compress a path ending in .gz and only that") {
  CHECK(strata::detail::trace_file::is_gzip_path("a/trace.json.gz"));
  CHECK(strata::detail::trace_file::is_gzip_path("trace.pftrace.gz"));
  CHECK_FALSE(strata::detail::trace_file::is_gzip_path("trace.json"));
  CHECK_FALSE(strata::detail::trace_file::is_gzip_path("trace.gzip"));
  CHECK_FALSE(strata::detail::trace_file::is_gzip_path("gz"));

  strata_test::temp_dir dir;
  strata::trace_data d;
  d.pid = 7;
  d.process_name = "proc";
  const auto plain = strata::write_chrome_trace(d, dir / "trace.json");
  const auto packed = strata::write_chrome_trace(d, dir / "trace.json.gz");
  const std::string json = read_file(dir / "trace.json");
  CHECK(json.front() == '{');
  CHECK(plain.bytes == json.size());
  CHECK(packed.events == plain.events);
  CHECK(packed.bytes == std::filesystem::file_size(dir / "trace.json.gz"));
  gzip_test::check_gzip_of(read_file(dir / "trace.json.gz"), json);
}

TEST_CASE("trace_output: a tool's own trace text, plain or gzip, in place only once committed") {
  strata_test::temp_dir dir;
  const std::string text = "{\"traceEvents\":[\n{\"ph\":\"X\",\"name\":\"a\"}\n]}\n";
  SUBCASE("plain") {
    strata::trace_output out(dir / "job.json");
    out.write(std::string_view(text).substr(0, 5));
    out.write(std::string_view(text).substr(5));
    CHECK(out.bytes_written() == text.size());
    CHECK_FALSE(std::filesystem::exists(dir / "job.json"));
    out.commit();
    CHECK(read_file(dir / "job.json") == text);
    CHECK(dir.entries() == std::vector<std::string>{"job.json"});
  }
  SUBCASE(".gz: compressed") {
    strata::trace_output out(dir / "job.json.gz");
    out.write(text);
    out.commit();
    gzip_test::check_gzip_of(read_file(dir / "job.json.gz"), text);
    CHECK(dir.entries() == std::vector<std::string>{"job.json.gz"});
  }
  SUBCASE("destroyed uncommitted: nothing left, an earlier file untouched") {
    strata_test::write_file(dir / "job.json", "earlier");
    {
      strata::trace_output out(dir / "job.json");
      out.write(text);
    }
    CHECK(read_file(dir / "job.json") == "earlier");
    CHECK(dir.entries() == std::vector<std::string>{"job.json"});
  }
  SUBCASE("an output directory that does not exist") {
    CHECK_THROWS_WITH_AS(strata::trace_output(dir / "missing" / "job.json"),
                         doctest::Contains("choose a writable output directory"), strata::error);
  }
}
