// Instrumented functions for check_compiled_out.py, which compiles this file twice at -O2: with
// -DSTRATA_ENABLED=0, and with every line that starts with STRATA_ (and the strata include)
// deleted. The two disassemblies must be the same: compiled out, instrumentation costs nothing.
// Keep each macro on a line of its own, so that deleting the line deletes exactly the macro.
#include "strata/macros.hpp"

#include <string>

// Defined elsewhere, so the optimizer cannot fold the functions below into constants.
int work(int x);
std::string name_of(int x);
void consume(const char* what);

// Counts the calls that STRATA_COUNTER's argument makes: it must not run when compiled out.
int calls = 0;

int one_scope(int x) {
  STRATA_SCOPE("one_scope");
  return work(x) + 1;
}

int layer_scope(int x) {
  STRATA_SCOPE_LAYER(strata::layer::framework, "aten::add");
  return work(x) * 2;
}

int dynamic_scope(int x) {
  STRATA_SCOPE_DYNAMIC(strata::layer::runtime, name_of(x));
  return work(x + 1);
}

int flops_scopes(int x) {
  STRATA_SCOPE_FLOPS("gemm", work(x) * 2);
  STRATA_SCOPE_FLOPS_LAYER(strata::layer::framework, "aten::mm", ++calls);
  return work(x) + calls;
}

void instants(int x) {
  STRATA_INSTANT("start");
  consume("between");
  STRATA_INSTANT_LAYER(strata::layer::device, "device instant");
  STRATA_INSTANT_DYNAMIC(strata::layer::user, name_of(x));
}

int counter_with_side_effect(int x) {
  STRATA_COUNTER("calls", ++calls);
  STRATA_COUNTER_LAYER(strata::layer::device, "work", work(x));
  return x + calls;
}

// Memory events: the pointer and size expressions vanish with the macros.
int memory_events(int x) {
  STRATA_ALLOC(&calls + x, static_cast<unsigned>(++calls));
  STRATA_ALLOC_DEVICE(strata::device_type::neuron, work(x), &calls, 64u);
  STRATA_RESERVE(strata::device_type::neuron, 0, work(x));
  STRATA_FREE_DEVICE(strata::device_type::neuron, 0, &calls);
  STRATA_FREE(&calls + x);
  return x + calls;
}

long nested_in_loop(const int* values, int n) {
  STRATA_SCOPE("outer");
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    STRATA_SCOPE("iteration");
    STRATA_COUNTER("partial", sum);
    {
      STRATA_SCOPE_LAYER(strata::layer::device, "inner");
      sum += work(values[i]);
    }
  }
  STRATA_INSTANT("done");
  return sum;
}

int early_return(int x) {
  STRATA_SCOPE("early_return");
  if (x < 0) return -1;
  STRATA_SCOPE("second");
  return work(x);
}
