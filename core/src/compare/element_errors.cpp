#include "ttrace/compare/element_errors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

namespace ttrace {
namespace {

constexpr std::size_t kChunk = 1 << 16; // elements between progress reports

std::vector<std::int64_t> unravel(std::size_t flat, const Shape& shape) {
    std::vector<std::int64_t> index(shape.size(), 0);
    for (std::size_t d = shape.size(); d-- > 0;) {
        const auto extent = static_cast<std::size_t>(std::max<std::int64_t>(shape[d], 1));
        index[d] = static_cast<std::int64_t>(flat % extent);
        flat /= extent;
    }
    return index;
}

double elementError(double r, double c) {
    if (std::isfinite(r) && std::isfinite(c)) {
        return std::abs(c - r);
    }
    const bool same = (std::isnan(r) && std::isnan(c)) || r == c;
    return same ? 0.0 : std::numeric_limits<double>::infinity();
}

double referenceRms(const std::vector<double>& ref) {
    double sum = 0.0;
    for (const double v : ref) {
        sum += std::isfinite(v) ? v * v : 0.0;
    }
    return ref.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(ref.size()));
}

// Stride of `dimension` in row-major order and its extent.
std::pair<std::size_t, std::size_t> strideOf(const Shape& shape, int dimension) {
    std::size_t stride = 1;
    for (std::size_t d = shape.size(); d-- > static_cast<std::size_t>(dimension) + 1;) {
        stride *= static_cast<std::size_t>(shape[d]);
    }
    return {stride, static_cast<std::size_t>(shape[static_cast<std::size_t>(dimension)])};
}

struct SliceSums {
    double diffSq = 0.0;
    double refSq = 0.0;
    double maxAbs = 0.0;
};

std::vector<SliceError> finishSlices(const std::vector<SliceSums>& sums, double tolerance) {
    std::vector<SliceError> out;
    for (std::size_t k = 0; k < sums.size(); ++k) {
        const auto& s = sums[k];
        SliceError e;
        e.index = static_cast<std::int64_t>(k);
        e.relError = s.refSq > 0.0 ? std::sqrt(s.diffSq / s.refSq) : std::sqrt(s.diffSq);
        e.ratio = tolerance > 0.0
                      ? e.relError / tolerance
                      : (e.relError > 0.0 ? std::numeric_limits<double>::infinity() : 0.0);
        e.maxAbsError = s.maxAbs;
        out.push_back(e);
    }
    return out;
}

} // namespace

ElementReport elementErrors(const FullTensor& reference, const FullTensor& candidate,
                            const ElementQuery& query, const ProgressFn& progress) {
    ElementReport report;
    report.id = query.id;
    report.shape = reference.shape;
    const auto& r = reference.values;
    const auto& c = candidate.values;
    if (reference.shape != candidate.shape || r.size() != c.size()) {
        report.problems.push_back(
            makeError(DiagnosticCode::ShapeMismatch, "tensor " + query.id.path(),
                      "reference shape " + shapeToString(reference.shape) + " vs candidate shape " +
                          shapeToString(candidate.shape) + ": elements cannot be paired"));
        return report;
    }
    report.elementTolerance = query.tolerance * referenceRms(r);
    const bool sliced =
        query.dimension >= 0 && static_cast<std::size_t>(query.dimension) < reference.shape.size();
    report.dimension = sliced ? query.dimension : -1;
    const auto [stride, extent] = sliced ? strideOf(reference.shape, query.dimension)
                                         : std::pair<std::size_t, std::size_t>{1, 1};
    std::vector<SliceSums> sums(sliced ? extent : 0);
    // The worst `top` so far: a min-heap on the error, so the smallest of them is replaced.
    using Item = std::pair<double, std::size_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> worst;
    for (std::size_t i = 0; i < r.size(); ++i) {
        if (i % kChunk == 0 && progress &&
            !progress(static_cast<double>(i) / static_cast<double>(r.size()), "elements")) {
            report.cancelled = true;
            return report;
        }
        const double e = elementError(r[i], c[i]);
        if (query.top > 0 && (worst.size() < query.top || e > worst.top().first)) {
            worst.emplace(e, i);
            if (worst.size() > query.top) {
                worst.pop();
            }
        }
        if (sliced) {
            auto& s = sums[(i / stride) % extent];
            s.diffSq += std::isfinite(e) ? e * e : 0.0;
            s.refSq += std::isfinite(r[i]) ? r[i] * r[i] : 0.0;
            s.maxAbs = std::max(s.maxAbs, e);
        }
    }
    for (; !worst.empty(); worst.pop()) {
        const auto [e, i] = worst.top();
        report.largest.push_back(
            {unravel(i, reference.shape), r[i], c[i], e, report.elementTolerance});
    }
    std::reverse(report.largest.begin(), report.largest.end());
    report.slices = finishSlices(sums, query.tolerance);
    if (progress) {
        progress(1.0, "elements");
    }
    return report;
}

ElementReport inspectElements(const Bundle& reference, const Bundle& candidate,
                              const ElementQuery& query, const ProgressFn& progress) {
    ElementReport report;
    report.id = query.id;
    const auto read = [&](const Bundle& bundle, const char* side) -> std::optional<FullTensor> {
        auto merged = mergeTensor(bundle, query.id);
        if (!merged.tensor) {
            report.problems.push_back(
                makeError(DiagnosticCode::NotReadable, bundle.dir().string(),
                          std::string(side) + " tensor " + query.id.path() + " cannot be rebuilt" +
                              (merged.findings.empty() ? std::string()
                                                       : ": " + merged.findings.front().message)));
        }
        return std::move(merged.tensor);
    };
    const auto ref = read(reference, "reference");
    if (progress && !progress(0.0, "reading")) {
        report.cancelled = true;
        return report;
    }
    const auto cand = read(candidate, "candidate");
    if (!ref || !cand) {
        return report;
    }
    return elementErrors(*ref, *cand, query, progress);
}

} // namespace ttrace
