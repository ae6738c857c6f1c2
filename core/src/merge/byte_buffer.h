#pragma once
// A byte buffer that is not zero-filled when allocated. Merged tensors are overwritten whole by
// the shards read into them, so clearing gigabytes first would only add page faults and writes.
#include <cstddef>
#include <memory>
#include <span>

namespace ttrace {

class ByteBuffer {
public:
    ByteBuffer() = default;
    explicit ByteBuffer(std::size_t size)
        : data_(std::make_unique_for_overwrite<std::byte[]>(size))
        , size_(size) {}

    [[nodiscard]] std::byte* data() { return data_.get(); }
    [[nodiscard]] const std::byte* data() const { return data_.get(); }
    [[nodiscard]] std::size_t size() const { return size_; }
    [[nodiscard]] std::span<std::byte> span() { return {data_.get(), size_}; }
    [[nodiscard]] std::span<const std::byte> span() const { return {data_.get(), size_}; }

private:
    std::unique_ptr<std::byte[]> data_;
    std::size_t size_ = 0;
};

} // namespace ttrace
