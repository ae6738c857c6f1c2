#pragma once
// Builds well-formed localize replies (docs/protocol.md) for the replay tests, which then
// break them one field at a time.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace ttrace::replay::test {

using nlohmann::json;

// One float32 shard: rows [rowStart, rowStart + rows) of a [totalRows, cols] tensor.
inline json rowShardEntry(const std::string& variant, const std::string& module, int rank,
                          std::int64_t rowStart, std::int64_t rows, std::int64_t totalRows,
                          std::int64_t cols, int frame,
                          const std::string& kind = "forward_output") {
    return {{"variant", variant},
            {"module", module},
            {"kind", kind},
            {"index", "0"},
            {"iteration", 0},
            {"micro_batch", 0},
            {"rank", rank},
            {"dtype", "float32"},
            {"shape", {rows, cols}},
            {"global_shape", {totalRows, cols}},
            {"placement", "boxes"},
            {"boxes", json::array({json::array({0, rowStart, rows, 0, 0, cols})})},
            {"combine", "copy"},
            {"frame", frame},
            {"bytes", rows * cols * 4}};
}

inline std::vector<std::byte> floatBytes(const std::vector<float>& values) {
    std::vector<std::byte> out(values.size() * sizeof(float));
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

inline json replayHeader(std::int64_t id, const json& tensors) {
    return {{"protocol", 2}, {"id", id}, {"status", "ok"}, {"seconds", 0.25}, {"tensors", tensors}};
}

inline json helloHeader(std::int64_t id) {
    return {
        {"protocol", 2},
        {"id", id},
        {"status", "ok"},
        {"agent", "ttrace 0.1.0"},
        {"world_size", 4},
        {"parallel", {{"tp", 2}, {"dp", 2}}},
        {"role", "candidate"},
        {"precision", "fp32"},
        {"bundle", "/tmp/cand"},
        {"reference", "/tmp/ref"},
        {"iterations", {0, 1}},
        {"micro_batches", 2},
        {"modules",
         json::array({{{"name", "layers.0"}, {"type", "Block"}, {"replayable", true}, {"why", ""}},
                      {{"name", "layers.0.drop"},
                       {"type", "Dropout"},
                       {"replayable", false},
                       {"why", "stochastic: draws random numbers"}}})}};
}

} // namespace ttrace::replay::test
