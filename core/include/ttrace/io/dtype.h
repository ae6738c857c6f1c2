#pragma once
// Element types of captured tensors. Low-precision types are stored as raw bits (HDF5 1.10 has
// no predefined bf16/fp8 type), so decoding to double happens here, exactly: every value of
// every supported type is representable in a double.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ttrace {

enum class DType {
    Float64,
    Float32,
    Float16,
    BFloat16,
    Float8E4M3,
    Float8E5M2,
    Int64,
    Int32,
    UInt8,
    Bool
};

std::optional<DType> parseDType(std::string_view name);
std::string_view dtypeName(DType type);
std::size_t dtypeSize(DType type);
bool isFloating(DType type);
// Unit round-off of the type (2^-p for p mantissa bits incl. the implicit one... see tolerance.md).
double machineEpsilon(DType type);

double decodeHalf(std::uint16_t bits);
double decodeBFloat16(std::uint16_t bits);
double decodeFloat8E4M3(std::uint8_t bits);
double decodeFloat8E5M2(std::uint8_t bits);

// Decodes `count` elements of `type` stored little-endian in `raw` into `out`.
void decodeElements(DType type, std::span<const std::byte> raw, std::span<double> out);

} // namespace ttrace
