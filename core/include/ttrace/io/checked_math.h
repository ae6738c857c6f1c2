#pragma once
// Overflow-checked integer arithmetic for sizes read from untrusted files: a hostile shape,
// box or count must produce a message, never a wrapped value that passes a bounds check.
#include <cstdint>
#include <optional>

namespace ttrace {

[[nodiscard]] inline std::optional<std::int64_t> checkedAdd(std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) {
        return std::nullopt;
    }
    return out;
}

[[nodiscard]] inline std::optional<std::int64_t> checkedMul(std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out)) {
        return std::nullopt;
    }
    return out;
}

// a + b <= limit, without overflow; false for any negative operand.
[[nodiscard]] inline bool fitsWithin(std::int64_t a, std::int64_t b, std::int64_t limit) {
    const auto sum = checkedAdd(a, b);
    return a >= 0 && b >= 0 && sum && *sum <= limit;
}

} // namespace ttrace
