// strata/sim/ops.hpp: the arithmetic of simulated instructions: ALU operators (Vector engine)
// and activation functions (Scalar engine), computed in float like the engines compute in fp32.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace strata {
inline namespace v1 {
namespace sim {

/// Binary operators of tensor_tensor, tensor_scalar and reduce.
enum class alu : std::uint8_t { add, subtract, multiply, divide, max, min };

/// Scalar-engine functions; activation computes func(x * scale + bias).
enum class act : std::uint8_t {
  identity, exp, tanh, gelu, relu, sigmoid, square, rsqrt, reciprocal
};

constexpr std::string_view to_string(alu op) noexcept {
  switch (op) {
    case alu::add: return "add";
    case alu::subtract: return "subtract";
    case alu::multiply: return "multiply";
    case alu::divide: return "divide";
    case alu::max: return "max";
    case alu::min: return "min";
  }
  return "?";
}

constexpr std::string_view to_string(act f) noexcept {
  switch (f) {
    case act::identity: return "identity";
    case act::exp: return "exp";
    case act::tanh: return "tanh";
    case act::gelu: return "gelu";
    case act::relu: return "relu";
    case act::sigmoid: return "sigmoid";
    case act::square: return "square";
    case act::rsqrt: return "rsqrt";
    case act::reciprocal: return "reciprocal";
  }
  return "?";
}

/// a op b.
inline float apply(alu op, float a, float b) noexcept {
  switch (op) {
    case alu::add: return a + b;
    case alu::subtract: return a - b;
    case alu::multiply: return a * b;
    case alu::divide: return a / b;
    case alu::max: return std::max(a, b);
    case alu::min: return std::min(a, b);
  }
  return a;
}

/// f(x). gelu is the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline float apply(act f, float x) noexcept {
  switch (f) {
    case act::identity: return x;
    case act::exp: return std::exp(x);
    case act::tanh: return std::tanh(x);
    case act::gelu: {
      constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
      return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
    }
    case act::relu: return std::max(x, 0.0f);
    case act::sigmoid: return 1.0f / (1.0f + std::exp(-x));
    case act::square: return x * x;
    case act::rsqrt: return 1.0f / std::sqrt(x);
    case act::reciprocal: return 1.0f / x;
  }
  return x;
}

namespace detail {
// Instruction names live in static storage: the timeline stores views of them.
constexpr std::string_view activation_name(act f) noexcept {
  switch (f) {
    case act::identity: return "activation(identity)";
    case act::exp: return "activation(exp)";
    case act::tanh: return "activation(tanh)";
    case act::gelu: return "activation(gelu)";
    case act::relu: return "activation(relu)";
    case act::sigmoid: return "activation(sigmoid)";
    case act::square: return "activation(square)";
    case act::rsqrt: return "activation(rsqrt)";
    case act::reciprocal: return "activation(reciprocal)";
  }
  return "activation";
}

constexpr std::string_view tensor_tensor_name(alu op) noexcept {
  switch (op) {
    case alu::add: return "tensor_tensor(add)";
    case alu::subtract: return "tensor_tensor(subtract)";
    case alu::multiply: return "tensor_tensor(multiply)";
    case alu::divide: return "tensor_tensor(divide)";
    case alu::max: return "tensor_tensor(max)";
    case alu::min: return "tensor_tensor(min)";
  }
  return "tensor_tensor";
}

constexpr std::string_view tensor_scalar_name(alu op) noexcept {
  switch (op) {
    case alu::add: return "tensor_scalar(add)";
    case alu::subtract: return "tensor_scalar(subtract)";
    case alu::multiply: return "tensor_scalar(multiply)";
    case alu::divide: return "tensor_scalar(divide)";
    case alu::max: return "tensor_scalar(max)";
    case alu::min: return "tensor_scalar(min)";
  }
  return "tensor_scalar";
}

constexpr std::string_view reduce_name(alu op) noexcept {
  switch (op) {
    case alu::add: return "reduce(add)";
    case alu::max: return "reduce(max)";
    case alu::min: return "reduce(min)";
    default: break;
  }
  return "reduce";
}
}  // namespace detail

}  // namespace sim
}  // namespace v1
}  // namespace strata
