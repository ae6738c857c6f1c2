// Shard merge throughput: the same merges with oneTBB limited to one thread and with all
// hardware threads, side by side in one run, so machine noise affects both alike.
//
// usage: merge_bench [rows cols tp dp repeats]
#include "ttrace/merge/merge.h"

#include <tbb/global_control.h>
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace ttrace;

namespace {

// A [rows, cols] fp32 weight split column-wise over tp ranks and replicated over dp ranks,
// the layout of a column-parallel linear under TPxDP.
std::vector<RawShard> makeShards(std::int64_t rows, std::int64_t cols, int tp, int dp) {
    std::vector<RawShard> shards;
    const std::int64_t width = cols / tp;
    for (int d = 0; d < dp; ++d) {
        for (int t = 0; t < tp; ++t) {
            RawShard s;
            s.rank = d * tp + t;
            s.dtype = DType::Float32;
            s.localShape = {rows, width};
            s.placement.globalShape = {rows, cols};
            s.placement.combine = dp > 1 ? Combine::Replica : Combine::Copy;
            s.placement.boxes = {Box{{{0, 0, rows}, {0, t * width, width}}}};
            std::vector<float> values(static_cast<std::size_t>(rows * width));
            for (std::size_t i = 0; i < values.size(); ++i) {
                values[i] = static_cast<float>(i % 1000) * 0.001f + static_cast<float>(t);
            }
            s.raw.resize(values.size() * sizeof(float));
            std::memcpy(s.raw.data(), values.data(), s.raw.size());
            shards.push_back(std::move(s));
        }
    }
    return shards;
}

double medianSeconds(const std::vector<RawShard>& shards, int repeats) {
    const TensorId id{"nominal", 0, 0, "bench.linear", TensorKind::Parameter, "weight"};
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        auto copy = shards; // mergeShards consumes its input; copying is outside the timing
        const auto start = std::chrono::steady_clock::now();
        const auto result = mergeShards(id, std::move(copy));
        const auto stop = std::chrono::steady_clock::now();
        if (!result.tensor || !result.findings.empty()) {
            std::fprintf(stderr, "merge failed\n");
            std::exit(1);
        }
        times.push_back(std::chrono::duration<double>(stop - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2048;
    const std::int64_t cols = argc > 2 ? std::atoll(argv[2]) : 4096;
    const int tp = argc > 3 ? std::atoi(argv[3]) : 4;
    const int dp = argc > 4 ? std::atoi(argv[4]) : 2;
    const int repeats = argc > 5 ? std::atoi(argv[5]) : 5;
    const auto shards = makeShards(rows, cols, tp, dp);
    const double mib = static_cast<double>(rows * cols * 4 * dp) / (1024.0 * 1024.0);
    const int threads = tbb::info::default_concurrency();
    double serial = 0.0;
    {
        tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        serial = medianSeconds(shards, repeats);
    }
    const double parallel = medianSeconds(shards, repeats);
    std::printf("merge of a [%lld, %lld] fp32 tensor from %d shards (TP%d x DP%d replicas), "
                "%.0f MiB of shard data, median of %d\n",
                static_cast<long long>(rows), static_cast<long long>(cols), tp * dp, tp, dp, mib,
                repeats);
    std::printf("%-22s %10s %12s\n", "threads", "seconds", "MiB/s");
    std::printf("%-22d %10.4f %12.1f\n", 1, serial, mib / serial);
    std::printf("%-22d %10.4f %12.1f\n", threads, parallel, mib / parallel);
    std::printf("speedup %.2fx on %d hardware threads\n", serial / parallel, threads);
    return 0;
}
