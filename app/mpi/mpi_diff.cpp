#include "mpi_diff.h"

#include "share_check.h"
#include "shared_crc.h"

#include "commands.h"
#include "ttrace/compare/diff_cache.h"
#include "ttrace/compare/diff_parts.h"
#include "ttrace/compare/tensor_shard_plan.h"
#include "ttrace/compare/tensor_wire.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

namespace ttrace::mpi {
namespace {

constexpr std::string_view kCommand = "ttrace-mpi diff";

// Progress lines on rank 0 only (stderr, like every diagnostic); quiet with --quiet.
class RootLog {
public:
    RootLog(const MpiWorld& world, bool quiet)
        : on_(world.root() && !quiet) {}
    void line(const std::string& text) const {
        if (on_) {
            std::cerr << kCommand << ": " << text << std::endl;
        }
    }
    [[nodiscard]] ProgressFn progress(std::string what) const {
        if (!on_) {
            return {};
        }
        return [what, next = 0.1](double f, std::string_view) mutable {
            if (f >= next) {
                std::cerr << kCommand << ": " << what << " " << static_cast<int>(f * 100.0) << "%"
                          << std::endl;
                next = f + 0.1;
            }
            return true;
        };
    }

private:
    bool on_;
};

std::string sizeText(std::int64_t bytes) {
    return bytes >= (std::int64_t{1} << 20) ? std::to_string(bytes >> 20) + " MiB"
                                            : std::to_string(bytes >> 10) + " KiB";
}

// This process's share, compared, as bytes for rank 0; a failure travels as the share's error.
std::vector<std::uint8_t> compareShare(const MpiWorld& world, const OpenedPair& pair,
                                       const std::vector<TensorId>& ids, const TensorShare& share,
                                       const RootLog& log) {
    ShareResult out;
    out.rank = world.rank();
    const auto start = std::chrono::steady_clock::now();
    try {
        auto part =
            compareTensorSubset(*pair.reference.bundle, *pair.candidate.bundle, pair.options, ids,
                                share.indices, log.progress("rank 0 compared its share:"));
        out.indices = std::move(part.indices);
        out.tensors = std::move(part.tensors);
        out.cancelled = part.cancelled;
    } catch (const std::exception& e) {
        out = ShareResult{world.rank(), {}, {}, false, e.what()};
    }
    out.bytes = share.bytes;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto bytes = encodeShareResult(out);
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        bytes = encodeShareResult({world.rank(), {}, {}, false, "its results exceed 2 GiB"});
    }
    return bytes;
}

// "rank 1: 52 tensors, 12 MiB in 0.41 s (30.9 MB/s)": the per-process throughput.
std::string shareLine(const ShareResult& share) {
    std::ostringstream out;
    out << "rank " << share.rank << ": " << share.indices.size() << " tensors, "
        << sizeText(share.bytes) << " in " << std::fixed << std::setprecision(3) << share.seconds
        << " s (" << std::setprecision(1)
        << (share.seconds > 0.0 ? static_cast<double>(share.bytes) / share.seconds / 1e6 : 0.0)
        << " MB/s)";
    return out.str();
}

// Rank 0: every process's results in the ids' order, or why the run failed (naming the rank).
std::optional<std::vector<TensorResult>>
collectShares(const std::vector<std::vector<std::uint8_t>>& shares, std::size_t count,
              const RootLog& log, bool& cancelled, std::string& error) {
    std::vector<TensorResult> tensors(count);
    std::vector<char> filled(count, 0);
    for (std::size_t r = 0; r < shares.size(); ++r) {
        std::string why;
        auto share = decodeShareResult(shares[r], why);
        if (!share || !share->error.empty()) {
            error = "rank " + std::to_string(r) + " failed: " + (share ? share->error : why);
            return std::nullopt;
        }
        cancelled = cancelled || share->cancelled;
        log.line(shareLine(*share));
        for (std::size_t k = 0; k < share->indices.size(); ++k) {
            const auto i = share->indices[k];
            if (i >= count || filled[i]) {
                error = "rank " + std::to_string(r) + " sent a tensor outside its share";
                return std::nullopt;
            }
            filled[i] = 1;
            tensors[i] = std::move(share->tensors[k]);
        }
    }
    for (std::size_t i = 0; i < count; ++i) {
        if (!filled[i] && !cancelled) {
            error = "tensor " + std::to_string(i) + " was compared by no process";
            return std::nullopt;
        }
    }
    return tensors;
}

// The run's end on every process: rank 0's code, after it has written everything.
int finish(const MpiWorld& world, int rootCode) {
    return world.broadcast(rootCode);
}

int fail(const MpiWorld& world, const std::string& why) {
    if (world.root()) {
        std::cerr << kCommand << ": " << why << "\n";
    }
    return finish(world, cli::kExitBadInput);
}

// Every process compares its share; rank 0 gathers the shares and finishes the analysis.
int compareAndFinish(const MpiWorld& world, const cli::DiffArgs& args, const OpenedPair& pair,
                     const Diagnostics& notes, const std::vector<TensorId>& ids,
                     const RootLog& log) {
    const auto& ref = *pair.reference.bundle;
    const auto& cand = *pair.candidate.bundle;
    const auto shares = planTensorShares(ref, cand, ids, world.size());
    std::int64_t total = 0, largest = 0;
    for (const auto& s : shares) {
        total += s.bytes;
        largest = std::max(largest, s.bytes);
    }
    log.line(std::to_string(ids.size()) + " tensors, " + sizeText(total) + " over " +
             std::to_string(world.size()) + " processes (largest share " + sizeText(largest) + ")");
    // Taken before comparing, as `ttrace diff` does: the store after it checks the files are
    // unchanged against this key.
    const std::string cacheKey = world.root() && pair.options.useCache
                                     ? diffCacheKey(ref.dir(), cand.dir(), pair.options)
                                     : std::string();
    const auto& share = shares[static_cast<std::size_t>(world.rank())];
    const auto mine = compareShare(world, pair, ids, share, log);
    log.line("rank 0 compared its share; gathering the others");
    const auto gathered = world.gatherToRoot(mine);
    if (!world.root()) {
        return finish(world, 0);
    }
    bool cancelled = false;
    std::string error;
    auto tensors = collectShares(gathered, ids.size(), log, cancelled, error);
    if (!tensors) {
        return fail(world, error + "; no report written");
    }
    auto diff =
        finishDiff(ref, cand, pair.options, std::move(*tensors), cancelled, cacheKey, notes);
    addOpeningDiagnostics(pair.diagnostics, diff);
    return finish(world, cli::reportDiff(diff, args, kCommand));
}

} // namespace

int runMpiDiff(const MpiWorld& world, const cli::DiffArgs& args) {
    const RootLog log(world, args.quiet);
    const std::filesystem::path refDir = args.bundles[0], candDir = args.bundles[1];
    // Each file read once in the whole job for its CRC-32, before anything needs one.
    const auto adopted = shareChecksums(world, refDir, candDir);
    log.line("checksummed the rank files across the processes (rank 0 adopted " +
             std::to_string(adopted) + " from the others)");
    // The summary cache first, on rank 0 alone: a hit needs no process but that one.
    std::optional<DiffResult> cached;
    if (world.root()) {
        cached = cachedDiff(refDir, candDir, args.options, {});
    }
    if (world.broadcast(cached ? 1 : 0) != 0) {
        log.line("answered from the summary cache");
        return finish(world, world.root() ? cli::reportDiff(*cached, args, kCommand) : 0);
    }
    log.line("opening the bundles on " + std::to_string(world.size()) + " processes");
    OpenedPair pair;
    Diagnostics notes;
    std::vector<TensorId> ids;
    std::string failure;
    try {
        pair = openDiffPair(refDir, candDir, args.options, {});
        if (!pair.early) {
            // Every process compares against the same view of the reference as ttrace diff.
            auto compared = referenceForComparison(*pair.reference.bundle, *pair.candidate.bundle);
            if (compared.view) {
                pair.reference.bundle = std::move(compared.view);
            }
            notes = std::move(compared.notes);
            ids = diffTensorIds(*pair.reference.bundle, *pair.candidate.bundle, pair.options);
        }
    } catch (const std::exception& e) {
        failure =
            "rank " + std::to_string(world.rank()) + " failed to open the bundles: " + e.what();
    }
    const auto prints =
        world.gatherToRoot(failure.empty() ? openingFingerprint(pair, ids) : "failed: " + failure);
    std::string mismatch;
    if (world.root()) {
        for (const auto& p : prints) {
            if (p.starts_with("failed: ")) {
                mismatch = p.substr(8);
                break;
            }
        }
        if (mismatch.empty()) {
            mismatch = compareFingerprints(prints);
        }
    }
    if (world.broadcast(mismatch.empty() ? 0 : 1) != 0) {
        return fail(world, mismatch + "; no report written");
    }
    if (pair.early) {
        return finish(world, world.root() ? cli::reportDiff(*pair.early, args, kCommand) : 0);
    }
    return compareAndFinish(world, args, pair, notes, ids, log);
}

} // namespace ttrace::mpi
