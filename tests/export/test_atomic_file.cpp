// atomic_file: a file appears complete or not at all, and failures are strata::error.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "strata/detail/trace_file.hpp"
#include "support.hpp"
#include "write_limit.hpp"

using strata_test::read_file;
using strata_test::temp_dir;

TEST_CASE("atomic_file: commit puts exactly the written bytes in place") {
  temp_dir dir("atomic");
  const auto target = dir / "out.json";

  SUBCASE("a new file") {
    strata::detail::atomic_file f(target);
    f.write("{\"a\":");
    f.write("");
    f.write("1}");
    CHECK(f.bytes_written() == 7);
    CHECK_FALSE(std::filesystem::exists(target));  // nothing visible before commit
    f.commit();
    CHECK(read_file(target) == "{\"a\":1}");
    CHECK(dir.entries() == std::vector<std::string>{"out.json"});  // no temporary left
  }
  SUBCASE("an existing file is replaced whole") {
    strata_test::write_file(target, "old content that is longer than the new one");
    strata::detail::atomic_file f(target);
    f.write("new");
    CHECK(read_file(target) == "old content that is longer than the new one");
    f.commit();
    CHECK(read_file(target) == "new");
    CHECK(dir.entries() == std::vector<std::string>{"out.json"});
  }
}

TEST_CASE("atomic_file: abandoned without commit, it leaves no file behind") {
  temp_dir dir("atomic-abandon");
  const auto target = dir / "out.json";

  SUBCASE("no file before") {
    {
      strata::detail::atomic_file f(target);
      f.write("half a trace");
      CHECK(dir.entries().size() == 1);  // the temporary file
    }
    CHECK(dir.entries().empty());
  }
  SUBCASE("an existing file keeps its content") {
    strata_test::write_file(target, "previous trace");
    {
      strata::detail::atomic_file f(target);
      f.write("half a trace");
    }
    CHECK(read_file(target) == "previous trace");
    CHECK(dir.entries() == std::vector<std::string>{"out.json"});
  }
}

TEST_CASE("atomic_file: failures raise strata::error and remove the temporary file") {
  temp_dir dir("atomic-fail");

  SUBCASE("a directory that cannot exist (below a regular file)") {
    strata_test::write_file(dir / "a_file", "x");
    const auto target = dir / "a_file" / "sub" / "out.json";
    CHECK_THROWS_WITH_AS(strata::detail::atomic_file{target}, doctest::Contains("cannot write"),
                         strata::error);
    CHECK(dir.entries() == std::vector<std::string>{"a_file"});
  }
  SUBCASE("the rename fails: the target is a directory") {
    std::filesystem::create_directory(dir / "taken");
    strata_test::write_file(dir / "taken" / "inside", "kept");
    {
      strata::detail::atomic_file f(dir / "taken");
      f.write("data");
      CHECK_THROWS_WITH_AS(f.commit(), doctest::Contains("cannot rename"), strata::error);
    }
    CHECK(dir.entries() == std::vector<std::string>{"taken"});
    CHECK(read_file(dir / "taken" / "inside") == "kept");
  }
  SUBCASE("a write fails (file size limit): large writes fail in write()") {
    strata_test::write_file(dir / "out.json", "previous");
    {
      strata::detail::atomic_file f(dir / "out.json");
      strata_test::write_limit limit(1000);
      CHECK_THROWS_AS(f.write(std::string(100000, 'x')), strata::error);
    }
    CHECK(read_file(dir / "out.json") == "previous");
    CHECK(dir.entries() == std::vector<std::string>{"out.json"});
  }
  SUBCASE("a write fails (file size limit): small buffered writes fail at commit()") {
    {
      strata::detail::atomic_file f(dir / "out.json");
      strata_test::write_limit limit(1000);
      for (int i = 0; i < 100; ++i) f.write("0123456789abcdef0123");  // 2000 bytes, buffered
      CHECK_THROWS_WITH_AS(f.commit(), doctest::Contains("cannot"), strata::error);
    }
    CHECK(dir.entries().empty());
  }
}
