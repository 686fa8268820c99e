#pragma once
// Strong unit types. SI inside (seconds, bytes, FLOPs); conversions only through
// the named factories at the bottom, so GB (1e9) and GiB (2^30) never mix silently.
#include <compare>

namespace dtsim {

/// A double tagged with its physical unit; only same-unit arithmetic compiles.
template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : v_(v) {}
  /// The value in the SI base unit of Tag.
  [[nodiscard]] constexpr double value() const { return v_; }

  constexpr Quantity& operator+=(Quantity o) { v_ += o.v_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v_ -= o.v_; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.v_ + b.v_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.v_ - b.v_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.v_ / k); }
  /// Dimensionless ratio of two quantities of the same unit.
  friend constexpr double operator/(Quantity a, Quantity b) { return a.v_ / b.v_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;

 private:
  double v_ = 0.0;
};

struct SecondsTag {};
struct BytesTag {};
struct FlopsTag {};
struct BytesPerSecondTag {};
struct FlopsPerSecondTag {};

using Seconds = Quantity<SecondsTag>;
using Bytes = Quantity<BytesTag>;
using Flops = Quantity<FlopsTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;

/// Time to move `b` at rate `r`.
constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.value() / r.value()); }
/// Time to compute `f` at rate `r`.
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.value() / r.value()); }
/// Rate that moves `b` in `t`.
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.value() / t.value()); }
/// Rate that computes `f` in `t`.
constexpr FlopsPerSecond operator/(Flops f, Seconds t) { return FlopsPerSecond(f.value() / t.value()); }
/// Bytes moved in `t` at rate `r`.
constexpr Bytes operator*(BytesPerSecond r, Seconds t) { return Bytes(r.value() * t.value()); }

// Named factories: the only places a unit conversion factor appears.
constexpr Seconds seconds(double s) { return Seconds(s); }
constexpr Seconds ms(double v) { return Seconds(v * 1e-3); }
constexpr Seconds us(double v) { return Seconds(v * 1e-6); }
constexpr Bytes bytes(double b) { return Bytes(b); }
constexpr Bytes kib(double v) { return Bytes(v * 1024.0); }
constexpr Bytes mib(double v) { return Bytes(v * 1048576.0); }
constexpr Bytes gib(double v) { return Bytes(v * 1073741824.0); }
constexpr Bytes gb(double v) { return Bytes(v * 1e9); }
constexpr Flops flops(double f) { return Flops(f); }
constexpr FlopsPerSecond tflops(double v) { return FlopsPerSecond(v * 1e12); }
/// Gigabytes (1e9 B) per second, as NVLink and nccl-tests quote them.
constexpr BytesPerSecond gbytes_per_s(double v) { return BytesPerSecond(v * 1e9); }
/// Gigabits (1e9 b) per second, as NICs are quoted (400 Gb/s NDR = 50 GB/s).
constexpr BytesPerSecond gbits_per_s(double v) { return BytesPerSecond(v * 1e9 / 8.0); }

constexpr double to_us(Seconds s) { return s.value() * 1e6; }
constexpr double to_gib(Bytes b) { return b.value() / 1073741824.0; }
constexpr double to_gb(Bytes b) { return b.value() / 1e9; }
constexpr double to_tflops(FlopsPerSecond r) { return r.value() / 1e12; }
constexpr double to_gbytes_per_s(BytesPerSecond r) { return r.value() / 1e9; }

}  // namespace dtsim
