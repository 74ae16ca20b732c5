// op_args: scopes that carry input shapes and small arguments, reflected with Hana.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/args/op_args.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/detail/impl/args.hpp"
#include "support.hpp"

using strata::layer;
using strata::record_kind;

namespace {

enum class reduction { none = 0, mean = 1 };

struct mm_args {
  BOOST_HANA_DEFINE_STRUCT(mm_args, (strata::shape, self), (strata::shape, mat2));
};

struct mixed_args {
  BOOST_HANA_DEFINE_STRUCT(mixed_args, (strata::shape, input), (float, alpha), (bool, inplace),
                           (reduction, mode), (const char*, note), (int, correlation_id));
};

constexpr strata::site mm_site{"aten::mm", "f.cpp", 1, layer::framework, record_kind::scope};

// An argument set as the implementation renders it: encoded as a scope encodes it, then
// rendered as the implementation does for a set its cache has not seen.
struct rendered_args {
  std::string input_shapes;
  std::string json;
};

template <class Args>
void render_args(const Args& args, rendered_args& out) {
  strata::detail::arg_words words;
  strata::detail::encode_args(words, args);
  REQUIRE_FALSE(words.overflowed());
  fmt::memory_buffer shapes, json;
  REQUIRE(strata::detail::render_encoded_args(words.data(), words.size(), shapes, json));
  out.input_shapes.assign(shapes.data(), shapes.size());
  out.json.assign(json.data(), json.size());
}

std::string shapes_of(const rendered_args& r) { return r.input_shapes; }
std::string json_of(const rendered_args& r) { return r.json; }

std::vector<const strata::record*> scopes_named(const strata::trace_data& d, std::string_view n) {
  std::vector<const strata::record*> out;
  for (const auto& t : d.threads)
    for (const auto& r : t.records)
      if (std::string_view(r.site->name) == n) out.push_back(&r);
  return out;
}

}  // namespace

TEST_CASE("arguments render as torch's Input Shapes text and a JSON fragment") {
  rendered_args r;
  SUBCASE("shapes only") {
    render_args(mm_args{{4, 8}, {8, 16}}, r);
    CHECK(shapes_of(r) == "[[4, 8], [8, 16]]");
    CHECK(json_of(r) == R"("Input Dims":[[4,8],[8,16]],"Input Names":["self","mat2"])");
  }
  SUBCASE("values besides shapes: [] in the shapes, and each by name; reserved names renamed") {
    render_args(
        mixed_args{{3}, 0.5f, true, reduction::mean, "say \"hi\"\n", 7}, r);
    CHECK(shapes_of(r) == "[[3], [], [], [], [], []]");
    CHECK(json_of(r) ==
          R"("Input Dims":[[3],[],[],[],[],[]],"Input Names":["input","alpha","inplace","mode",)"
          R"("note","correlation_id"],"alpha":0.5,"inplace":true,"mode":1,)"
          R"("note":"say \"hi\"\n","arg:correlation_id":7)");
  }
  SUBCASE("a scalar shape and non-finite numbers") {
    render_args(mixed_args{{}, NAN, false, reduction::none, "", -1}, r);
    CHECK(shapes_of(r) == "[[], [], [], [], [], []]");
    CHECK(json_of(r).find(R"("alpha":null,"inplace":false,"mode":0,"note":"")") != std::string::npos);
  }
}

TEST_CASE("one descriptor per call site and distinct argument set") {
  const strata::site* a = strata::detail::site_with_args(&mm_site, mm_args{{4, 8}, {8, 16}});
  const strata::site* b = strata::detail::site_with_args(&mm_site, mm_args{{4, 8}, {8, 16}});
  const strata::site* c = strata::detail::site_with_args(&mm_site, mm_args{{2, 8}, {8, 16}});
  CHECK(a == b);
  CHECK(a != c);
  CHECK(std::string_view(a->name) == "aten::mm");
  CHECK(a->layer == layer::framework);
  CHECK(a->line == 1);
  CHECK(std::string_view(a->input_shapes) == "[[4, 8], [8, 16]]");
  CHECK(std::string_view(c->input_shapes) == "[[2, 8], [8, 16]]");
  CHECK(mm_site.input_shapes == nullptr);
}

TEST_CASE("with record_shapes off, the arguments are not even built") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  int built = 0;
  prof.start();
  {
    strata::scope s = strata::scope_with_args(&mm_site, [&] {
      ++built;
      return mm_args{{4, 8}, {8, 16}};
    });
    CHECK(s.active());
  }
  prof.stop();
  CHECK(built == 0);
  const auto mm = scopes_named(prof.data(), "aten::mm");
  REQUIRE(mm.size() == 1);
  CHECK(mm[0]->site == &mm_site);
}

TEST_CASE("with record_shapes on, shapes reach the records, the trace and key_averages") {
  strata_test::temp_dir dir;
  auto config = strata_test::config_in(dir);
  config.record_shapes = true;
  strata::profiler prof(config);
  prof.start();
  for (int i = 0; i < 2; ++i) {
    strata::scope s = strata::scope_with_args(&mm_site, [] { return mm_args{{4, 8}, {8, 16}}; }, 42);
  }
  { STRATA_SCOPE_ARGS(layer::framework, "aten::mm", (mm_args{{2, 8}, {8, 16}})); }
  { STRATA_SCOPE_LAYER(layer::framework, "aten::relu"); }
  prof.stop();

  const auto mm = scopes_named(prof.data(), "aten::mm");
  REQUIRE(mm.size() == 3);
  CHECK(std::string_view(mm[0]->site->input_shapes) == "[[4, 8], [8, 16]]");
  CHECK(mm[0]->site == mm[1]->site);
  CHECK(std::string_view(mm[2]->site->input_shapes) == "[[2, 8], [8, 16]]");

  SUBCASE("key_averages groups by shape") {
    const auto avg = strata::key_averages(prof.data(), {.group_by_input_shape = true});
    int rows_seen = 0;
    for (const auto& row : avg.rows) {
      if (row.name != "aten::mm") continue;
      ++rows_seen;
      if (row.input_shapes == "[[4, 8], [8, 16]]") CHECK(row.count == 2);
      else CHECK((row.input_shapes == "[[2, 8], [8, 16]]" && row.count == 1));
    }
    CHECK(rows_seen == 2);
    const auto flat = strata::key_averages(prof.data());
    for (const auto& row : flat.rows)
      if (row.name == "aten::mm") CHECK(row.count == 3);
  }
  SUBCASE("the trace's args carry the dims, the names and the correlation id") {
    const auto path = dir / "t.json";
    strata::write_chrome_trace(prof.data(), path);
    const std::string text = strata_test::read_file(path);
    CHECK(strata_test::lines_with(text, R"("args":{"Input Dims":[[4,8],[8,16]],"Input Names":["self","mat2"],"correlation_id":42}})").size() == 2);
    CHECK(strata_test::lines_with(text, R"("args":{"Input Dims":[[2,8],[8,16]],"Input Names":["self","mat2"]}})").size() == 1);
    const auto relu = strata_test::lines_with(text, "aten::relu");
    REQUIRE(relu.size() == 1);
    CHECK(relu[0].find("args") == std::string::npos);
  }
}
