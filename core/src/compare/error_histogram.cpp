#include "compare/error_histogram.h"

#include "ttrace/compare/metrics.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace ttrace {
namespace {

// Decades from 1e-6 to 1e6 tolerance units: below 1e-6 an element is indistinguishable from
// exact for any purpose; above 1e6 it is simply "huge".
constexpr int kMinDecade = -6;
constexpr int kMaxDecade = 6;
constexpr std::size_t kBins = kMaxDecade - kMinDecade;
constexpr std::size_t kBlock = 1 << 14;

// Edges: correctly rounded powers of ten, made once (a function-local static would cost a
// guard check per element).
const std::array<double, kBins + 1> kPowers = [] {
    std::array<double, kBins + 1> p{};
    for (int e = kMinDecade; e <= kMaxDecade; ++e) {
        p[static_cast<std::size_t>(e - kMinDecade)] = std::pow(10.0, e);
    }
    return p;
}();

// floor(log2 x) of a normal x > 0, read from its exponent bits (what std::ilogb returns,
// without the library call).
int binaryExponent(double x) {
    return static_cast<int>((std::bit_cast<std::uint64_t>(x) >> 52) & 0x7ff) - 1023;
}

// The decade bin of x > 0 without a transcendental call per element: the binary exponent
// picks floor(log2 x); log10(2) * that is within one decade of the answer, and one comparison
// against the exact power-of-ten edge settles it. Edges are the same correctly rounded powers
// of ten as before, so bins are unchanged: an element lands in bin i exactly when
// edges[i] <= x < edges[i+1] (clamped to the first and last bin).
std::size_t decadeBin(double x) {
    if (!(x >= kPowers[1])) {
        return 0; // below 1e-5 (also below 1e-6): the first bin
    }
    if (x >= kPowers[kBins - 1]) {
        return kBins - 1; // 1e5 and above: the last bin
    }
    // x is in [1e-5, 1e5), a normal number. 30103 / 100000 slightly exceeds log10(2), so the
    // guess (rounded toward minus infinity) never overshoots by more than one; the loops
    // below correct it either way.
    const int scaled = binaryExponent(x) * 30103;
    const int guess = scaled >= 0 ? scaled / 100000 : -((-scaled + 99999) / 100000);
    auto bin = static_cast<std::size_t>(std::clamp(guess, kMinDecade, kMaxDecade - 1) - kMinDecade);
    while (bin + 1 < kBins && x >= kPowers[bin + 1]) {
        ++bin;
    }
    while (bin > 0 && x < kPowers[bin]) {
        --bin;
    }
    return bin;
}

} // namespace

ErrorHistogram emptyErrorHistogram() {
    ErrorHistogram h;
    for (int e = kMinDecade; e <= kMaxDecade; ++e) {
        h.edges.push_back(std::pow(10.0, e));
    }
    h.counts.assign(kBins, 0);
    return h;
}

void addHistograms(ErrorHistogram& a, const ErrorHistogram& b) {
    for (std::size_t i = 0; i < a.counts.size(); ++i) {
        a.counts[i] += b.counts[i];
    }
    a.exactZero += b.exactZero;
    a.nonFinite += b.nonFinite;
}

double addFiniteSquares(double sum, const double* ref, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        sum += std::isfinite(ref[i]) ? ref[i] * ref[i] : 0.0;
    }
    return sum;
}

void addErrors(ErrorHistogram& h, const double* r, const double* c, std::size_t count,
               double unit) {
    for (std::size_t i = 0; i < count; ++i) {
        const double err = std::abs(c[i] - r[i]);
        if (std::isnan(err) || std::isinf(err)) {
            const bool same = (std::isnan(r[i]) && std::isnan(c[i])) || r[i] == c[i];
            same ? ++h.exactZero : ++h.nonFinite;
            continue;
        }
        if (err == 0.0) {
            ++h.exactZero;
            continue;
        }
        if (!(unit > 0.0)) {
            ++h.counts.back();
            continue;
        }
        ++h.counts[decadeBin(err / unit)];
    }
}

ErrorHistogram computeErrorHistogram(const FullTensor& reference, const FullTensor& candidate,
                                     double tolerance) {
    const auto& r = reference.values;
    const auto& c = candidate.values;
    if (r.size() != c.size()) {
        throw std::invalid_argument("computeErrorHistogram: shapes differ");
    }
    const double sumSq = addFiniteSquares(0.0, r.data(), r.size());
    const double rms = r.empty() ? 0.0 : std::sqrt(sumSq / static_cast<double>(r.size()));
    // One tolerance unit per element: the relative tolerance scaled by the reference's RMS
    // (so that a tensor whose every element sits at one unit has relError == tolerance).
    // With a zero RMS or an exact (zero) tolerance every nonzero error lands in the top bin.
    const double unit = tolerance * rms;
    auto body = [&](const tbb::blocked_range<std::size_t>& range, ErrorHistogram h) {
        addErrors(h, r.data() + range.begin(), c.data() + range.begin(), range.size(), unit);
        return h;
    };
    return tbb::parallel_reduce(tbb::blocked_range<std::size_t>(0, r.size(), kBlock),
                                emptyErrorHistogram(), body,
                                [](ErrorHistogram a, const ErrorHistogram& b) {
                                    addHistograms(a, b);
                                    return a;
                                });
}

} // namespace ttrace
