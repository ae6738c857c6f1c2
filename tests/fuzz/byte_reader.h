#pragma once
// Reads a fuzzer input as a little-endian stream of small fields. Past the end every field
// reads as zero, so every input decodes to something (libFuzzer's mutations may cut anywhere).
// make_seeds.py writes the same layout with struct.pack("<...").
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ttrace::fuzz {

class ByteReader {
public:
    ByteReader(const std::uint8_t* data, std::size_t size)
        : data_(data)
        , size_(size) {}

    [[nodiscard]] bool empty() const { return pos_ >= size_; }

    std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }

    std::uint16_t u16() {
        const auto low = u8();
        return static_cast<std::uint16_t>(low | (u8() << 8));
    }

    std::int64_t i64() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 8) {
            v |= static_cast<std::uint64_t>(u8()) << shift;
        }
        return static_cast<std::int64_t>(v);
    }

    // A u8 length, then that many bytes.
    std::string str() {
        const std::size_t n = u8();
        std::string out;
        for (std::size_t i = 0; i < n && !empty(); ++i) {
            out.push_back(static_cast<char>(u8()));
        }
        return out;
    }

    // A u16 count (at most `maxCount`), then that many int64 values.
    std::vector<std::int64_t> i64s(std::size_t maxCount) {
        const std::size_t n = u16() % (maxCount + 1);
        std::vector<std::int64_t> out;
        for (std::size_t i = 0; i < n && !empty(); ++i) {
            out.push_back(i64());
        }
        return out;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

} // namespace ttrace::fuzz
