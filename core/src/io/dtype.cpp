#include "ttrace/io/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace ttrace {
namespace {

struct DTypeInfo {
    DType type;
    std::string_view name;
    std::size_t size;
    bool floating;
    double eps; // torch.finfo(dtype).eps convention: 2^-(mantissa bits)
};

constexpr std::array<DTypeInfo, 10> kInfo{{
    {DType::Float64, "float64", 8, true, 0x1p-52},
    {DType::Float32, "float32", 4, true, 0x1p-23},
    {DType::Float16, "float16", 2, true, 0x1p-10},
    {DType::BFloat16, "bfloat16", 2, true, 0x1p-7},
    {DType::Float8E4M3, "float8_e4m3fn", 1, true, 0x1p-3},
    {DType::Float8E5M2, "float8_e5m2", 1, true, 0x1p-2},
    {DType::Int64, "int64", 8, false, 0.0},
    {DType::Int32, "int32", 4, false, 0.0},
    {DType::UInt8, "uint8", 1, false, 0.0},
    {DType::Bool, "bool", 1, false, 0.0},
}};

const DTypeInfo& info(DType type) {
    for (const auto& i : kInfo) {
        if (i.type == type) {
            return i;
        }
    }
    throw std::logic_error("unknown dtype enumerator");
}

template <typename T> T loadLE(const std::byte* p) {
    static_assert(std::endian::native == std::endian::little, "big-endian hosts unsupported");
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

// Generic decoder of a small IEEE-like binary format with an implicit leading one.
double decodeMiniFloat(unsigned bits, int expBits, int mantBits, int bias, bool hasInf) {
    const unsigned sign = (bits >> (expBits + mantBits)) & 1U;
    const unsigned exp = (bits >> mantBits) & ((1U << expBits) - 1U);
    const unsigned mant = bits & ((1U << mantBits) - 1U);
    const unsigned expMax = (1U << expBits) - 1U;
    double magnitude = 0.0;
    if (exp == 0) {
        magnitude = std::ldexp(static_cast<double>(mant), 1 - bias - mantBits);
    } else if (hasInf && exp == expMax) {
        magnitude = mant == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
    } else {
        magnitude = std::ldexp(static_cast<double>(mant + (1U << mantBits)),
                               static_cast<int>(exp) - bias - mantBits);
    }
    return sign ? -magnitude : magnitude;
}

} // namespace

std::optional<DType> parseDType(std::string_view name) {
    for (const auto& i : kInfo) {
        if (i.name == name) {
            return i.type;
        }
    }
    return std::nullopt;
}

std::string_view dtypeName(DType type) {
    return info(type).name;
}
std::size_t dtypeSize(DType type) {
    return info(type).size;
}
bool isFloating(DType type) {
    return info(type).floating;
}
double machineEpsilon(DType type) {
    return info(type).eps;
}

double decodeHalf(std::uint16_t bits) {
    return decodeMiniFloat(bits, 5, 10, 15, true);
}

double decodeBFloat16(std::uint16_t bits) {
    return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16U));
}

double decodeFloat8E4M3(std::uint8_t bits) {
    // e4m3fn ("finite"): no infinities; only S.1111.111 is NaN, so 0x7e decodes to 448.
    if ((bits & 0x7FU) == 0x7FU) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    return decodeMiniFloat(bits, 4, 3, 7, false);
}

double decodeFloat8E5M2(std::uint8_t bits) {
    return decodeMiniFloat(bits, 5, 2, 15, true);
}

namespace {

// One tight loop per dtype: the switch is decided once per call, not once per element.
template <typename Storage, typename Convert>
void decodeLoop(std::span<const std::byte> raw, std::span<double> out, Convert convert) {
    const std::byte* p = raw.data();
    for (std::size_t i = 0; i < out.size(); ++i, p += sizeof(Storage)) {
        out[i] = convert(loadLE<Storage>(p));
    }
}

} // namespace

void decodeElements(DType type, std::span<const std::byte> raw, std::span<double> out) {
    if (raw.size() != out.size() * dtypeSize(type)) {
        throw std::invalid_argument("decodeElements: byte count does not match element count");
    }
    const auto cast = [](auto v) { return static_cast<double>(v); };
    switch (type) {
    case DType::Float64: decodeLoop<double>(raw, out, cast); break;
    case DType::Float32: decodeLoop<float>(raw, out, cast); break;
    case DType::Float16: decodeLoop<std::uint16_t>(raw, out, decodeHalf); break;
    case DType::BFloat16: decodeLoop<std::uint16_t>(raw, out, decodeBFloat16); break;
    case DType::Float8E4M3: decodeLoop<std::uint8_t>(raw, out, decodeFloat8E4M3); break;
    case DType::Float8E5M2: decodeLoop<std::uint8_t>(raw, out, decodeFloat8E5M2); break;
    case DType::Int64: decodeLoop<std::int64_t>(raw, out, cast); break;
    case DType::Int32: decodeLoop<std::int32_t>(raw, out, cast); break;
    case DType::UInt8:
    case DType::Bool: decodeLoop<std::uint8_t>(raw, out, cast); break;
    }
}

} // namespace ttrace
