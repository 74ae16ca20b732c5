// strata/record.hpp: what a record is: the layer it belongs to, the call site it points to, and
// the fixed-size record the hot path stores.
//
// Part of the instrumentation header: nothing beyond <cstdint> and <cstddef> is allowed here
// (tests/check_light_header.py).
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {
inline namespace v1 {

/// Where in the stack a record comes from. A profiler captures a chosen set of layers, like
/// torch.profiler's activities and NeuronConfig's modes.
enum class layer : std::uint8_t {
  framework = 0,  ///< op dispatch (`aten::…`), record_function, ProfilerStep#N
  runtime = 1,    ///< submit, load, execute, queue wait, host-device copies
  device = 2,     ///< instructions on a (simulated) NeuronCore's engines
  user = 3,       ///< the application's own scopes
};

inline constexpr int layer_count = 4;

/// The name used as the Chrome trace `cat` of a layer's events and in `STRATA_LAYERS`.
constexpr const char* layer_name(layer l) noexcept {
  switch (l) {
    case layer::framework: return "framework";
    case layer::runtime: return "runtime";
    case layer::device: return "device";
    case layer::user: return "user";
  }
  return "unknown";
}

/// A set of layers, stored as one bit per layer.
///
/// **Example**
/// ```cpp
/// strata::layer_set host{strata::layer::framework, strata::layer::user};
/// ```
class layer_set {
 public:
  constexpr layer_set() noexcept = default;
  /// The layers listed: `{strata::layer::framework, strata::layer::user}`. (A variadic
  /// constructor rather than std::initializer_list keeps <initializer_list> out of the
  /// instrumentation header; brace initialisation reads the same.)
  template <class... More>
    requires(__is_same(More, layer) && ...)
  constexpr layer_set(layer first, More... more) noexcept
      : bits_(bit(first) | (0u | ... | bit(more))) {}

  static constexpr layer_set all() noexcept { return from_bits((1u << layer_count) - 1u); }
  static constexpr layer_set none() noexcept { return {}; }
  static constexpr layer_set from_bits(std::uint32_t bits) noexcept {
    layer_set s;
    s.bits_ = bits & ((1u << layer_count) - 1u);
    return s;
  }
  static constexpr std::uint32_t bit(layer l) noexcept {
    return 1u << static_cast<std::uint32_t>(l);
  }

  constexpr bool contains(layer l) const noexcept { return (bits_ & bit(l)) != 0; }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr std::uint32_t bits() const noexcept { return bits_; }
  constexpr layer_set& add(layer l) noexcept {
    bits_ |= bit(l);
    return *this;
  }
  friend constexpr bool operator==(layer_set, layer_set) noexcept = default;

 private:
  std::uint32_t bits_ = 0;
};

/// What a record describes.
enum class record_kind : std::uint8_t {
  scope = 0,    ///< an interval: begin and end ticks (Chrome `X`)
  instant = 1,  ///< a point in time (Chrome `i`)
  counter = 2,  ///< a sampled value (Chrome `C`); the value's bits travel in `record::end`
  /// An allocation, a free or a change of reserved memory (Kineto's `[memory]` instant): the
  /// address travels in `record::end`, the rest packed in `record::payload` (`memory_fields`).
  memory = 3,
};

/// The device a memory event belongs to, numbered as torch's `c10::DeviceType` (the trace's
/// `Device Type`): `cpu` is 0, `neuron` is PrivateUse1, the backend extension point that
/// torch-neuronx registers Trainium through, which is 20 in c10/core/DeviceType.h since torch
/// 2.0 (MTIA took 19; torch 1.13 numbered PrivateUse1 19).
enum class device_type : std::uint8_t {
  cpu = 0,
  neuron = 20,
};

/// Which memory a memory event is about: its device type and index (torch's `Device Id`: -1
/// for the host, a core or device number otherwise).
struct memory_device {
  device_type type = device_type::cpu;
  std::int8_t index = -1;
};

/// What a memory event records.
enum class memory_op : std::uint8_t {
  alloc = 0,    ///< `bytes` allocated at the address
  free = 1,     ///< the address freed: the session finds its size from its allocation
  reserve = 2,  ///< the device's reserved (pool) bytes change by `bytes` (negative: released)
};

/// A memory event's fields as its record's `payload` packs them: bits 0-47 the bytes (a signed
/// 48-bit value: up to 128 TiB - 1, larger sizes are clamped), bits 48-55 the device index (an
/// int8), bits 56-61 the device type, bits 62-63 the operation. The address is `record::end`.
struct memory_fields {
  memory_op op = memory_op::alloc;
  memory_device device = {};
  std::int64_t bytes = 0;

  static constexpr std::int64_t max_bytes = (std::int64_t{1} << 47) - 1;

  constexpr std::uint64_t pack() const noexcept {
    const std::int64_t b = bytes > max_bytes ? max_bytes : bytes < -max_bytes ? -max_bytes : bytes;
    return (static_cast<std::uint64_t>(b) & ((std::uint64_t{1} << 48) - 1)) |
           (std::uint64_t{static_cast<std::uint8_t>(device.index)} << 48) |
           (std::uint64_t{static_cast<std::uint8_t>(device.type) & 0x3fu} << 56) |
           (std::uint64_t{static_cast<std::uint8_t>(op) & 0x3u} << 62);
  }
  static constexpr memory_fields unpack(std::uint64_t payload) noexcept {
    memory_fields f;
    f.op = static_cast<memory_op>(payload >> 62);
    f.device.type = static_cast<device_type>((payload >> 56) & 0x3fu);
    f.device.index = static_cast<std::int8_t>(static_cast<std::uint8_t>(payload >> 48));
    const std::uint64_t low = payload & ((std::uint64_t{1} << 48) - 1);
    // sign-extend the 48-bit value
    f.bytes = static_cast<std::int64_t>(low << 16) >> 16;
    return f;
  }
};

/// A per-call-site descriptor: the record stores only a pointer to it, so names are never
/// copied per event. Macros create one `static constexpr` site per call site; run-time names
/// get one interned site per distinct (layer, kind, name). A scope that carries arguments
/// (input shapes and a few small values, see strata/args/op_args.hpp) records an interned site
/// per distinct argument set, whose two extra strings the exporter and key_averages read.
struct site {
  const char* name;
  const char* file;
  std::uint32_t line;
  ::strata::layer layer;
  record_kind kind;
  /// torch's "Input Shapes" text, e.g. `[[4, 8], [8]]`; nullptr: none recorded.
  const char* input_shapes = nullptr;
  /// The arguments as the members of a JSON object (no braces), written into the trace
  /// event's `args`; nullptr: none.
  const char* args_json = nullptr;
  /// The trace's `cat` when it is not the layer's name (static storage). A record with a
  /// category of its own is drawn in the trace but is not an op, so key_averages leaves it
  /// out: a part of a device execution (`device.engine`: one engine's instruction;
  /// `device.phase`: a kernel phase), whose time the execution's own record carries, or time
  /// a submission spent queued (`runtime.queue`).
  const char* category = nullptr;
  /// Floating-point operations of one event of this site (torch's `with_flops`), 0: none.
  /// A scope given a count records an interned site per distinct (site, count), whose
  /// `args_json` ends with `"flops":N` (strata/scope.hpp, `scope::set_flops`).
  std::uint64_t flops = 0;
};

/// One event as a thread's buffer stores it: 32 bytes, trivially copyable, no pointers to
/// anything but static (or interned, never freed) descriptors; the one exception, a step mark
/// of a steps track, points into its trace's own `trace_data::step_sites`.
struct record {
  std::uint64_t begin;        ///< ticks when the scope opened (instant and counter: when)
  std::uint64_t end;          ///< ticks when the scope closed; counter: the value's bits
  const ::strata::site* site; ///< name, layer, source location, kind
  std::uint64_t payload;      ///< correlation id (0: none) or a small payload

  record_kind kind() const noexcept { return site->kind; }
  ::strata::layer layer() const noexcept { return site->layer; }
  double counter_value() const noexcept { return __builtin_bit_cast(double, end); }
  /// A memory record's fields (kind() == record_kind::memory); its address is `end`.
  memory_fields memory() const noexcept { return memory_fields::unpack(payload); }
};

static_assert(sizeof(record) == 32, "strata::record must stay 32 bytes: two fit a cache line");
// Compiler builtins rather than <type_traits>: this header is part of the instrumentation header.
static_assert(__is_trivially_copyable(record) && __is_standard_layout(record),
              "strata::record must be a POD so that buffers can copy it field by field");
static_assert(offsetof(record, begin) == 0 && offsetof(record, end) == 8 &&
                  offsetof(record, site) == 16 && offsetof(record, payload) == 24,
              "strata::record's layout is the spill file's and the crash dump's");

}  // namespace v1
}  // namespace strata
