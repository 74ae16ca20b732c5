// layer and layer_set: which layers a profiler captures.
#include <doctest/doctest.h>

#include "strata/record.hpp"

using strata::layer;
using strata::layer_set;

// layer_set is meant for constant expressions (configs, compile-time tables).
static_assert(layer_set{layer::runtime}.contains(layer::runtime));
static_assert(!layer_set{layer::runtime}.contains(layer::device));
static_assert(layer_set::all().bits() == 0xfu);
static_assert(layer_set::none().empty());

TEST_CASE("layer_set: a list holds exactly its layers") {
  const layer_set s{layer::framework, layer::device};
  CHECK(s.contains(layer::framework));
  CHECK(s.contains(layer::device));
  CHECK_FALSE(s.contains(layer::runtime));
  CHECK_FALSE(s.contains(layer::user));
  CHECK(s.bits() == 0b0101u);
  CHECK_FALSE(s.empty());

  SUBCASE("repeating a layer changes nothing") {
    CHECK(layer_set{layer::device, layer::device, layer::framework} == s);
  }
}

TEST_CASE("layer_set: all, none and the default") {
  const layer_set all = layer_set::all();
  for (layer l : {layer::framework, layer::runtime, layer::device, layer::user})
    CHECK(all.contains(l));
  CHECK(all.bits() == 0b1111u);
  CHECK(layer_set::none().empty());
  CHECK(layer_set{}.empty());
  CHECK(layer_set{} == layer_set::none());
  CHECK(layer_set::none().bits() == 0u);
}

TEST_CASE("layer_set: from_bits keeps only defined layers") {
  SUBCASE("undefined high bits are ignored") {
    CHECK(layer_set::from_bits(0xffffffffu) == layer_set::all());
    CHECK(layer_set::from_bits(0x10u).empty());
  }
  SUBCASE("defined bits map to layers by their value") {
    const layer_set s = layer_set::from_bits(0b1010u);
    CHECK(s == layer_set{layer::runtime, layer::user});
    CHECK(s.bits() == 0b1010u);
  }
  SUBCASE("bit() is one bit per layer") {
    CHECK(layer_set::bit(layer::framework) == 1u);
    CHECK(layer_set::bit(layer::runtime) == 2u);
    CHECK(layer_set::bit(layer::device) == 4u);
    CHECK(layer_set::bit(layer::user) == 8u);
  }
}

TEST_CASE("layer_set: add grows the set and chains") {
  layer_set s;
  s.add(layer::user).add(layer::runtime);
  CHECK(s == layer_set{layer::runtime, layer::user});
  s.add(layer::user);
  CHECK(s.bits() == 0b1010u);
  CHECK_FALSE(s == layer_set::all());
}

TEST_CASE("layer names are the trace categories") {
  CHECK(strata::layer_name(layer::framework) == "framework");
  CHECK(strata::layer_name(layer::runtime) == "runtime");
  CHECK(strata::layer_name(layer::device) == "device");
  CHECK(strata::layer_name(layer::user) == "user");
  CHECK(strata::layer_name(static_cast<layer>(7)) == "unknown");
  CHECK(strata::layer_count == 4);
}
