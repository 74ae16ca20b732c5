// A translation unit built with STRATA_ENABLED=0 (meson passes -DSTRATA_ENABLED=0): every macro
// is a no-op that does not even compile its arguments, and the RAII types stay declared.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "strata/args/op_args.hpp"
#include "strata/ondemand.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.h"
#include "strata/strata.hpp"
#include "support.hpp"

static_assert(STRATA_ENABLED == 0, "this file must be compiled with -DSTRATA_ENABLED=0");

namespace {

int evaluated = 0;

struct one_arg {
  BOOST_HANA_DEFINE_STRUCT(one_arg, (strata::shape, input));
};

int side_effect() {
  ++evaluated;
  return 1;
}

}  // namespace

TEST_CASE("compiled out: macros record nothing and evaluate no argument") {
  strata_test::temp_dir dir("disabled");
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  {
    STRATA_SCOPE("scope");
    STRATA_SCOPE_LAYER(strata::layer::framework, "framework scope");
    STRATA_SCOPE_DYNAMIC(strata::layer::runtime, std::to_string(side_effect()));
    STRATA_INSTANT("instant");
    STRATA_INSTANT_LAYER(strata::layer::device, "device instant");
    STRATA_INSTANT_DYNAMIC(strata::layer::user, std::to_string(side_effect()));
    STRATA_COUNTER("counter", side_effect());
    STRATA_COUNTER_LAYER(strata::layer::device, "device counter", side_effect());
    // The arguments are dropped before compilation: even names that do not exist are fine.
    STRATA_COUNTER("never compiled", no_such_variable + 1);
    STRATA_SCOPE_DYNAMIC(strata::layer::user, no_such_function());
    STRATA_SCOPE_ARGS(strata::layer::framework, "aten::mm", no_such_args{side_effect()});
    STRATA_ALLOC(no_such_pointer, side_effect());
    STRATA_FREE(no_such_pointer);
    STRATA_ALLOC_DEVICE(strata::device_type::neuron, side_effect(), &evaluated, 64);
    STRATA_FREE_DEVICE(strata::device_type::neuron, side_effect(), &evaluated);
    STRATA_RESERVE(strata::device_type::neuron, 0, side_effect());
    strata_alloc(&evaluated, 64);
    strata_free(&evaluated);
    strata_alloc_device(STRATA_DEVICE_NEURON, 0, &evaluated, 64);
    strata_free_device(STRATA_DEVICE_NEURON, 0, &evaluated);
    strata_reserve_device(STRATA_DEVICE_NEURON, 0, 4096);
  }
  prof.stop();
  CHECK(evaluated == 0);
  CHECK(prof.stats().recorded == 0);
  CHECK(prof.stats().compiled_out);
  CHECK(prof.data().threads.empty());
  const strata::averages avg = prof.key_averages({.device_name = "TRN"});
  CHECK(avg.device_name == "TRN");
  CHECK(avg.rows.empty());
  CHECK(avg.sorted("cpu_time_total").empty());
  CHECK(avg.table().find("compiled out") != std::string::npos);
  CHECK(avg.to_json().find("\"compiled_out\":true") != std::string::npos);
}

// The compiled-out implementation defines these without reading strata/ondemand.hpp: a
// definition that drifted from the declaration would not link.
TEST_CASE("compiled out: an on-demand capture is refused, saying why") {
  const strata::capture_result r = strata::request_capture({.steps = 3, .duration = std::chrono::seconds(1)});
  CHECK_FALSE(r);
  CHECK(r.outcome == strata::capture_outcome::compiled_out);
  CHECK(r.message.find("compiled out") != std::string::npos);
  const strata::capture_state s = strata::ondemand_state();
  CHECK_FALSE(s.running);
  CHECK(s.written == 0);
}

TEST_CASE("compiled out: code that names the RAII types still compiles and does nothing") {
  static constexpr strata::site where{"manual", __FILE__, __LINE__, strata::layer::user,
                                      strata::record_kind::scope};
  strata_test::temp_dir dir("disabled-raii");
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  {
    strata::scope s{&where, 7};
    s.set_payload(8);
    CHECK_FALSE(s.active());
    strata::scope dynamic{strata::detail::dynamic_name, strata::layer::user, [] {
                            ++evaluated;
                            return std::string("dynamic");
                          }};
    CHECK_FALSE(dynamic.active());
    strata::detail::emit_instant(&where);
    strata::detail::emit_counter(&where, [] { return side_effect(); });
    strata::scope with_args = strata::scope_with_args(&where, [] {
      ++evaluated;
      return one_arg{strata::shape{2}};
    });
    CHECK_FALSE(with_args.active());
  }
  prof.stop();
  CHECK(evaluated == 0);
  CHECK(prof.data().recorded() == 0);
}

TEST_CASE("compiled out, the C API is empty inline functions that succeed") {
  strata_config c = STRATA_CONFIG_INIT;
  c.output = "not written.json";
  CHECK(strata_start_ex(&c) == STRATA_OK);
  CHECK(strata_start("not created") == STRATA_OK);
  strata_push("range");
  strata_push_layer(STRATA_LAYER_FRAMEWORK, "op");
  strata_instant("mark");
  strata_instant_layer(STRATA_LAYER_RUNTIME, "mark");
  strata_counter("count", 1.0);
  strata_counter_layer(STRATA_LAYER_DEVICE, "count", 2.0);
  strata_set_thread_name("thread");
  strata_step();
  strata_pop();
  strata_pop();
  CHECK(strata_snapshot(nullptr) == STRATA_OK);
  CHECK(strata_request_capture(1, 0) == STRATA_OK);
  CHECK(strata_stop() == STRATA_OK);
  CHECK(strata_export(nullptr) == STRATA_OK);
  CHECK(strata_stop_and_export() == STRATA_OK);
  char table[8] = "xxxxxxx";  // filled, so that the empty string below is strata_table's
  CHECK(strata_table(table, sizeof table, nullptr, 0) == 0);
  CHECK(table[0] == '\0');
  CHECK(strata_table(nullptr, 0, nullptr, 0) == 0);
  CHECK(strata_export_stacks("not written.folded", nullptr) == STRATA_OK);
  CHECK_FALSE(std::filesystem::exists("not written.folded"));
  CHECK_FALSE(std::filesystem::exists("not written.json"));
  CHECK_FALSE(std::filesystem::exists("not created"));
}
