// tests/trace_writer.cpp: records a known session and writes its trace, plus what a checker
// should find in it, for check_trace.py to verify with a real JSON parser.
//
//   trace_writer basic   DIR   threads, nesting, an exception, counters, a drop-newest overflow
//   trace_writer hostile DIR   names made of any bytes; DIR/names.json lists them as byte values
//   trace_writer empty   DIR   a session that recorded nothing
//   trace_writer device  DIR   an op whose softmax-like kernel runs on a simulated NeuronCore
//   trace_writer steps   DIR   a schedule's window, a scope left open across step()
//   trace_writer spilled DIR   nested scopes, most of them spilled to disk, and one opened in an
//                              earlier session; DIR/expect.json gives the counts
//
// Writes DIR/trace.json and DIR/expect.json (basic) or DIR/names.json (hostile). With
// --all-formats, the same session also goes to DIR/trace.pftrace (Perfetto), DIR/trace.json.gz,
// DIR/trace.pftrace.gz and DIR/trace.threads.pftrace (Perfetto written by three threads), for
// check_perfetto_trace.py to hold against trace.json.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "strata/args/op_args.hpp"
#include "strata/device.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/export/perfetto_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/scope.hpp"
#include "strata/sim/neuron_core.hpp"
#include "strata/sim/record_execution.hpp"
#include "strata/strata.hpp"

namespace {

bool all_formats = false;

// The session's trace: trace.json, and with --all-formats its other forms.
void export_traces(strata::profiler& prof, const std::filesystem::path& dir) {
  prof.export_chrome_trace();
  if (!all_formats) return;
  // The profiler's own exports read a spilled session from its spill file; data() reads it
  // back into memory first: the gzip forms go that way, so the check holds the two against
  // each other.
  prof.export_perfetto_trace((dir / "trace.pftrace").string());
  strata::write_chrome_trace(prof.data(), dir / "trace.json.gz");
  strata::write_perfetto_trace(prof.data(), dir / "trace.pftrace.gz");
  // Written by three threads, each with tracks of its own (a session this small is otherwise
  // written by one): the same events, the packets of different tracks interleaved.
  strata::write_perfetto_trace(prof.data(), dir / "trace.threads.pftrace", {.threads = 3});
  // And with long tracks cut into spans of a few records, sequences of their own.
  strata::write_perfetto_trace(prof.data(), dir / "trace.spans.pftrace", {.threads = 3, .records_per_sequence = 4});
}

// Bytes as a JSON array of numbers, so the expectation itself needs no escaping.
std::string byte_list(std::string_view s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(static_cast<unsigned char>(s[i]));
  }
  return out + "]";
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

// --- basic ---------------------------------------------------------------------------------

constexpr int iterations = 10;
// One block of records besides each thread's current one, spilling off: the flood thread keeps
// two blocks (2 x 2048 records) and drops the rest; no other thread fills its first block.
constexpr std::size_t memory_limit = std::size_t{1} << 16;
constexpr int flood_instants = 2 * 2048 + 44;

void step(int i) {
  STRATA_SCOPE_LAYER(strata::layer::framework, "step");
  { STRATA_SCOPE_LAYER(strata::layer::runtime, "submit"); }
  {
    STRATA_SCOPE_LAYER(strata::layer::device, "execute");
    { STRATA_SCOPE("kernel"); }
    STRATA_INSTANT("issued");
  }
  STRATA_COUNTER("queue depth", i);
}

void throw_through_scopes() {
  STRATA_SCOPE("throwing outer");
  STRATA_SCOPE("throwing inner");
  throw std::runtime_error("unwinds through two scopes");
}

int basic(const std::filesystem::path& dir) {
  strata::profiler prof({.output_dir = dir,
                         .overflow = strata::overflow_policy::lossless,
                         .memory_limit = memory_limit,
                         .spill = false,
                         .process_name = "trace writer"});
  strata::set_thread_name("main");
  prof.start();
  {
    STRATA_SCOPE("main: run");
    std::vector<std::thread> threads;
    for (int w = 0; w < 3; ++w) {
      threads.emplace_back([w] {
        strata::set_thread_name("worker " + std::to_string(w));
        for (int i = 0; i < iterations; ++i) step(i);
        if (w == 0) {
          try {
            throw_through_scopes();
          } catch (const std::runtime_error&) {
          }
        }
        if (w == 1) {
          STRATA_COUNTER("nan", std::numeric_limits<double>::quiet_NaN());
          STRATA_COUNTER("inf", std::numeric_limits<double>::infinity());
        }
      });
    }
    threads.emplace_back([] {
      strata::set_thread_name("flood");
      for (int i = 0; i < flood_instants; ++i) STRATA_INSTANT("flood");
    });
    for (auto& t : threads) t.join();  // every thread exits before stop()
    // A device core's engines, timed elsewhere: two tracks of core 0 in a process of their own.
    const strata::site* mm = strata::intern(strata::layer::device, "matmul");
    const strata::site* act = strata::intern(strata::layer::device, "activation(exp)");
    // An op and the runtime call it made carry correlation id 7, as the device work does:
    // the trace draws flows op -> submit -> the first record of each device track.
    {
      strata::scope op(strata::intern(strata::layer::framework, "aten::mm"), 7);
      strata::scope submit(strata::intern(strata::layer::runtime, "submit"), 7);
    }
    const std::uint64_t t0 = static_cast<std::uint64_t>(strata::clock::steady_ns());
    const strata::record tensor[] = {{t0, t0 + 100, mm, 7}, {t0 + 100, t0 + 250, mm, 7}, {t0 + 300, t0 + 400, mm, 8}};
    const strata::record scalar[] = {{t0 + 260, t0 + 290, act, 7}, {t0 + 410, t0 + 420, act, 8}};
    strata::append_device_records({.core = 0, .core_name = "NeuronCore 0", .track = 0, .track_name = "Tensor"}, tensor);
    strata::append_device_records({.core = 0, .core_name = "NeuronCore 0", .track = 2, .track_name = "Scalar"}, scalar);
  }
  prof.stop();
  export_traces(prof, dir);

  // What the checker must find, per thread name: X and i counts by name, counter values by
  // name (null for non-finite), records lost, whether it had exited by stop().
  std::string worker_x = "\"step\":10,\"submit\":10,\"execute\":10,\"kernel\":10";
  std::string counts = "[0,1,2,3,4,5,6,7,8,9]";
  std::string expect = "{\"process_name\":\"trace writer\",\"buffer_capacity\":65536,"
                       "\"overflow_policy\":\"lossless\",\"threads\":{";
  expect += "\"main\":{\"X\":{\"main: run\":1,\"aten::mm\":1,\"submit\":1},\"i\":{},\"C\":{},\"lost\":0,\"exited\":false},";
  expect += "\"worker 0\":{\"X\":{" + worker_x + ",\"throwing outer\":1,\"throwing inner\":1},"
            "\"i\":{\"issued\":10},\"C\":{\"queue depth\":" + counts + "},\"lost\":0,\"exited\":true},";
  expect += "\"worker 1\":{\"X\":{" + worker_x + "},\"i\":{\"issued\":10},"
            "\"C\":{\"queue depth\":" + counts + ",\"nan\":[null],\"inf\":[null]},\"lost\":0,\"exited\":true},";
  expect += "\"worker 2\":{\"X\":{" + worker_x + "},\"i\":{\"issued\":10},"
            "\"C\":{\"queue depth\":" + counts + "},\"lost\":0,\"exited\":true},";
  // Two blocks of 4140 instants: the first 4096 are kept, 44 dropped.
  expect += "\"flood\":{\"X\":{},\"i\":{\"flood\":4096},\"C\":{},\"lost\":44,\"exited\":true},";
  expect += "\"Tensor\":{\"X\":{\"matmul\":3},\"i\":{},\"C\":{},\"lost\":0,\"exited\":false},";
  expect += "\"Scalar\":{\"X\":{\"activation(exp)\":2},\"i\":{},\"C\":{},\"lost\":0,\"exited\":false}";
  expect += "}}";
  write_text(dir / "expect.json", expect);
  return 0;
}

// --- hostile -------------------------------------------------------------------------------

std::vector<std::string> hostile_scope_names() {
  std::string controls;
  for (char c = 1; c < 0x20; ++c) controls += c;
  std::string long_name;
  for (int i = 0; i < 500; ++i) long_name += "x\"\\\xc3\xa9\xff";
  return {
      "quote \" backslash \\ slash /",
      controls,
      "tab\tnewline\ncarriage\rreturn",
      "\x7f delete",
      "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x98\x80",
      "\xf4\x8f\xbf\xbf last code point, \xef\xbf\xbd replacement",
      "\xff\xfe invalid lead bytes",
      "\xc0\x80 overlong nul",
      "\xe0\x80\x80 overlong 3",
      "\xf0\x82\x82\xac overlong euro",
      "\xed\xa0\x80 surrogate",
      "\xed\xa0\xbd\xed\xb8\x80 surrogate pair",
      "\xf4\x90\x80\x80 above max",
      "truncated at end \xe2\x82",
      "truncated 4 \xf0\x9f\x98",
      "\x80\xbf stray continuation",
      "ok\xc3(\xa9 mixed",
      "\"},{\"ph\":\"X\",\"name\":\"injected",
      "</script><script>alert(1)</script>",
      "",
      long_name,
  };
}

// Hostile bytes as an argument value: rendered into the trace's args once per distinct value.
struct note_args {
  BOOST_HANA_DEFINE_STRUCT(note_args, (strata::shape, input), (std::string_view, note));
};

int hostile(const std::filesystem::path& dir) {
  using namespace std::string_literals;  // ""s keeps embedded NUL bytes
  const std::string process_name = "process \"name\" \xc3\x28 with \0 nul"s;
  const std::vector<std::string> thread_names = {
      "thread with \0 nul"s,
      "\xff\xfe thread",
      "quote\" thread \\",
      "\x01\x02 control thread",
      "\xe6\xbc\xa2 thread \xf0\x9f\x98\x80",
  };
  const auto scope_names = hostile_scope_names();
  constexpr std::string_view static_name = "static \"literal\" \\ \t \xff end";

  strata::profiler prof({.output_dir = dir, .buffer_capacity = 1024, .process_name = process_name,
                         .record_shapes = true});
  prof.start();
  // This thread records the scopes under the first name; one thread per other name.
  strata::set_thread_name(thread_names[0]);
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < thread_names.size(); ++i) {
    threads.emplace_back([&name = thread_names[i]] {
      strata::set_thread_name(name);
      STRATA_INSTANT("thread marker");
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& name : scope_names) {
    STRATA_SCOPE_DYNAMIC(strata::layer::user, name);
  }
  { STRATA_SCOPE("static \"literal\" \\ \t \xff end"); }
  for (const auto& name : scope_names) {
    STRATA_SCOPE_ARGS(strata::layer::user, "hostile args", (note_args{{1, 2}, name}));
  }
  prof.stop();
  export_traces(prof, dir);

  std::string names = "{\"process\":" + byte_list(process_name) + ",\"threads\":[";
  for (std::size_t i = 0; i < thread_names.size(); ++i)
    names += (i == 0 ? "" : ",") + byte_list(thread_names[i]);
  names += "],\"scopes\":[";
  for (const auto& n : scope_names) names += byte_list(n) + ",";
  names += byte_list(static_name) + "],\"args\":[";
  for (std::size_t i = 0; i < scope_names.size(); ++i)
    names += (i == 0 ? "" : ",") + byte_list(scope_names[i]);
  names += "]}";
  write_text(dir / "names.json", names);
  return 0;
}

int empty(const std::filesystem::path& dir) {
  strata::profiler prof({.output_dir = dir, .layers = {strata::layer::device}});
  prof.start();
  { STRATA_SCOPE("not captured: user layer"); }
  prof.stop();
  export_traces(prof, dir);
  return 0;
}

// --- device --------------------------------------------------------------------------------

// A row softmax's shape of work: DMA in, exp on Scalar, reductions on Vector, DMA out; the
// Tensor and GpSimd engines stay idle, and the trace must still show their tracks.
int device(const std::filesystem::path& dir) {
  namespace sim = strata::sim;
  sim::neuron_core core{sim::core_generation::trn1};
  std::vector<float> data(128 * 64, 0.25f);
  sim::hbm_tensor x = core.upload("x", data, {128, 64});
  sim::hbm_tensor y = core.alloc_hbm("y", {128, 64});
  strata::profiler prof(
      {.output_dir = dir, .buffer_capacity = 1024, .process_name = "device writer", .with_flops = true});
  strata::set_thread_name("main");
  prof.start();
  { STRATA_SCOPE_FLOPS_LAYER(strata::layer::framework, "aten::mm", 2 * 4 * 8 * 16); }
  {
    const std::uint64_t id = strata::new_correlation_id();
    strata::scope op(strata::intern(strata::layer::framework, "aten::softmax"), id);
    strata::scope launch(strata::intern(strata::layer::runtime, "nrt::execute"), id);
    const std::int64_t start = strata::clock::steady_ns();
    const sim::execution ex = core.run("softmax_kernel", [&](sim::kernel& k) {
      sim::tile t = k.load(x, {0, 0}, {128, 64});
      sim::tile e = k.activation(t, sim::act::exp);
      static_cast<void>(k.reduce(e, sim::alu::add));
      k.store(y, {0, 0}, e);
    });
    sim::record_execution(ex, {.core = 0, .start_ns = start, .correlation_id = id});
  }
  prof.stop();
  export_traces(prof, dir);
  return 0;
}

// --- steps ---------------------------------------------------------------------------------

// A window of three steps (a schedule, written by on_trace_ready) in which the main thread keeps
// a scope open across the first step() call, while a worker records on its own.
int steps(const std::filesystem::path& dir) {
  strata::profiler prof({.output_dir = dir,
                         .process_name = "steps writer",
                         .schedule = {.active = 3, .repeat = 1},
                         .on_trace_ready = [&](strata::profiler& p) { export_traces(p, dir); }});
  strata::set_thread_name("main");
  prof.start();
  std::thread worker([] {
    strata::set_thread_name("worker");
    for (int i = 0; i < 100; ++i) STRATA_SCOPE("worker op");
  });
  {
    STRATA_SCOPE("spanning");  // opened in step 0, closed in step 1
    { STRATA_SCOPE("before the step"); }
    prof.step();
    { STRATA_SCOPE("after the step"); }
  }
  worker.join();
  prof.step();
  { STRATA_SCOPE_LAYER(strata::layer::framework, "last op"); }
  prof.step();  // the window ends: its trace is written here
  prof.stop();
  return 0;
}

// One block of records in memory, spilling on: most blocks go to the spill file, and scopes
// nest across blocks (the session's scope spans all of them), so reading the file back in order
// has to put each block's parents back before their children.
int spilled(const std::filesystem::path& dir) {
  constexpr int ops = 2500;  // 6 records each: about 7 blocks of 2048
  strata::profiler prof({.output_dir = dir,
                         .overflow = strata::overflow_policy::lossless,
                         .memory_limit = memory_limit,
                         .spill = true,
                         .process_name = "spilled writer"});
  strata::set_thread_name("main");
  prof.start();
  {
    // Opened in an earlier session, closed in this one: in neither trace.
    STRATA_SCOPE("across sessions");
    prof.stop();
    prof.start();
  }
  {
    STRATA_SCOPE("session");
    for (int i = 0; i < ops; ++i) {
      STRATA_SCOPE_LAYER(strata::layer::framework, "op");
      for (int k = 0; k < 2; ++k) {
        STRATA_SCOPE("kernel");
        STRATA_INSTANT("issued");
      }
      STRATA_COUNTER("op", i);
    }
  }
  prof.stop();
  if (prof.stats().memory.spilled == 0) throw std::runtime_error("the spilled session spilled nothing");
  export_traces(prof, dir);
  std::string values = "[";
  for (int i = 0; i < ops; ++i) values += (i == 0 ? "" : ",") + std::to_string(i);
  values += "]";
  write_text(dir / "expect.json",
             "{\"X\":{\"session\":1,\"op\":" + std::to_string(ops) + ",\"kernel\":" + std::to_string(2 * ops) +
                 "},\"i\":{\"issued\":" + std::to_string(2 * ops) + "},\"C\":{\"op\":" + values + "}}");
  return 0;
}

// Memory events on two threads and two devices, a free on another thread than its allocation,
// an unpaired free and a leak (check_perfetto_trace.py: the counter tracks match the JSON's).
int memory(const std::filesystem::path& dir) {
  alignas(64) static char host[4][256];
  alignas(64) static char hbm[2][1024];
  strata::profiler prof({.output_dir = dir, .process_name = "memory writer", .profile_memory = true});
  strata::set_thread_name("main");
  prof.start();
  {
    STRATA_SCOPE_LAYER(strata::layer::framework, "aten::empty");
    STRATA_ALLOC(host[0], 100);
    STRATA_RESERVE(strata::device_type::neuron, 0, 1 << 20);
    STRATA_ALLOC_DEVICE(strata::device_type::neuron, 0, hbm[0], 1000);
  }
  std::thread worker([] {
    strata::set_thread_name("worker");
    STRATA_SCOPE_LAYER(strata::layer::framework, "aten::add");
    STRATA_ALLOC(host[1], 200);
    STRATA_FREE(host[0]);                                      // allocated on main
    STRATA_ALLOC_DEVICE(strata::device_type::neuron, 1, hbm[1], 64);
  });
  worker.join();
  STRATA_FREE(host[3]);                                        // never allocated: unpaired
  STRATA_FREE_DEVICE(strata::device_type::neuron, 0, hbm[0]);
  STRATA_RESERVE(strata::device_type::neuron, 0, -(1 << 20));
  prof.stop();
  export_traces(prof, dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && std::string_view(argv[3]) == "--all-formats")) {
    std::fprintf(stderr, "usage: %s basic|hostile|empty|device|steps|spilled|memory DIR [--all-formats]\n", argv[0]);
    return 2;
  }
  all_formats = argc == 4;
  const std::string_view mode = argv[1];
  const std::filesystem::path dir = argv[2];
  try {
    if (mode == "basic") return basic(dir);
    if (mode == "hostile") return hostile(dir);
    if (mode == "empty") return empty(dir);
    if (mode == "device") return device(dir);
    if (mode == "steps") return steps(dir);
    if (mode == "spilled") return spilled(dir);
    if (mode == "memory") return memory(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_writer: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "trace_writer: unknown mode '%s'\n", argv[1]);
  return 2;
}
