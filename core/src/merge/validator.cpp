#include "ttrace/merge/validator.h"

#include "ttrace/io/bundle.h"
#include "ttrace/io/capture_status.h"
#include "ttrace/merge/merge.h"

#include <tbb/parallel_for.h>

#include <iomanip>
#include <optional>
#include <sstream>

namespace ttrace {
namespace {

std::string humanBytes(std::int64_t bytes) {
    std::ostringstream out;
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    auto value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    out << std::fixed << std::setprecision(unit == 0 ? 0 : 1) << value << " " << units[unit];
    return out.str();
}

void summarize(const Bundle& bundle, ValidationSummary& s) {
    s.role = bundle.manifest().role;
    s.worldSize = bundle.manifest().worldSize;
    s.modules = bundle.manifest().modules.size();
    s.variants = bundle.manifest().variants.size();
    s.logicalTensors = bundle.tensors().size();
    for (const auto& [id, shards] : bundle.tensors()) {
        s.shards += shards.size();
        for (const auto& shard : shards) {
            s.bytes += shard.bytes();
        }
        ++s.dtypes[std::string(dtypeName(shards.front().dtype))];
        ++s.kinds[std::string(tensorKindName(id.kind))];
    }
}

// Merges every tensor (in parallel) for holes, overlaps and disagreeing replicas; its
// findings in the bundle's tensor order, or nothing when cancelled.
std::optional<Diagnostics> checkCoverage(const Bundle& bundle, const ProgressFn& progress,
                                         const CheckedTensorFn& onTensor) {
    std::vector<const TensorId*> ids;
    for (const auto& [id, shards] : bundle.tensors()) {
        ids.push_back(&id);
    }
    std::vector<Diagnostics> findings(ids.size());
    ProgressTracker tracker(
        [&](double f, std::string_view what) { return !progress || progress(0.2 + 0.8 * f, what); },
        ids.size());
    tbb::parallel_for(std::size_t{0}, ids.size(), [&](std::size_t i) {
        if (tracker.cancelled()) {
            return;
        }
        findings[i] = mergeTensor(bundle, *ids[i]).findings;
        if (onTensor) {
            std::int64_t bytes = 0;
            for (const auto& shard : bundle.tensors().at(*ids[i])) {
                bytes += shard.bytes();
            }
            onTensor(*ids[i], bytes);
        }
        tracker.advance(ids[i]->module);
    });
    if (tracker.cancelled()) {
        return std::nullopt;
    }
    Diagnostics all;
    for (auto& f : findings) {
        all.insert(all.end(), f.begin(), f.end());
    }
    return all;
}

} // namespace

ValidationReport validateBundle(const std::filesystem::path& dir, const ValidateOptions& options,
                                const ProgressFn& progress, const CheckedTensorFn& onTensor) {
    ValidationReport report;
    // Indexing is the first 20% of the work, merging the rest.
    auto opened = openBundle(
        dir, [&](double f, std::string_view what) { return !progress || progress(0.2 * f, what); });
    report.diagnostics = std::move(opened.diagnostics);
    if (opened.cancelled) {
        report.cancelled = true;
        return report;
    }
    if (!opened.bundle) {
        if (isUnfinishedCapture(dir)) { // say what of it can still be compared
            auto usable = describeUsablePart(dir);
            report.diagnostics.insert(report.diagnostics.end(), usable.begin(), usable.end());
        }
        return report;
    }
    summarize(*opened.bundle, report.summary);
    if (!options.checkCoverage) {
        return report;
    }
    auto merged = checkCoverage(*opened.bundle, progress, onTensor);
    if (!merged) {
        report.cancelled = true;
        return report;
    }
    report.diagnostics.insert(report.diagnostics.end(), merged->begin(), merged->end());
    return report;
}

std::string formatSummary(const std::filesystem::path& dir, const ValidationSummary& s) {
    std::ostringstream out;
    out << "bundle     " << dir.string() << "\n";
    out << "role       " << s.role << "\n";
    out << "ranks      " << s.worldSize << "\n";
    out << "modules    " << s.modules << "\n";
    out << "variants   " << s.variants << "\n";
    out << "tensors    " << s.logicalTensors << " logical, " << s.shards << " shards\n";
    out << "bytes      " << humanBytes(s.bytes) << " (" << s.bytes << ")\n";
    out << "dtypes    ";
    for (const auto& [name, count] : s.dtypes) {
        out << " " << name << "=" << count;
    }
    out << "\nkinds     ";
    for (const auto& [name, count] : s.kinds) {
        out << " " << name << "=" << count;
    }
    out << "\n";
    return out.str();
}

} // namespace ttrace
