#include "compare/row_signatures.h"

#include "compare/error_slices.h"
#include "compare/signature_text.h"

#include <algorithm>
#include <cmath>

namespace ttrace {
namespace {

// Rows x columns view of a tensor of rank >= 2; nothing for vectors and scalars.
struct Grid {
    std::size_t rows = 0;
    std::size_t cols = 0;
};

std::optional<Grid> gridOf(const Shape& shape) {
    if (shape.size() < 2 || shape.back() < 2) {
        return std::nullopt;
    }
    const auto cols = static_cast<std::size_t>(shape.back());
    const auto total = static_cast<std::size_t>(elementCount(shape));
    if (total / cols < 2) {
        return std::nullopt;
    }
    return Grid{total / cols, cols};
}

bool explains(double residual, double tolerance, double error) {
    return residual <= std::max(tolerance, 0.05 * error);
}

// Candidate lines (rows, or columns when `columns`) that are constant (zero included) where
// the reference's are not.
std::vector<std::int64_t> flatLines(const std::vector<double>& ref, const std::vector<double>& cand,
                                    Grid g, bool columns) {
    const std::size_t lines = columns ? g.cols : g.rows;
    const std::size_t length = columns ? g.rows : g.cols;
    auto at = [&](const std::vector<double>& v, std::size_t line, std::size_t k) {
        return columns ? v[k * g.cols + line] : v[line * g.cols + k];
    };
    std::vector<std::int64_t> out;
    for (std::size_t line = 0; line < lines; ++line) {
        bool candFlat = true;
        bool refFlat = true;
        for (std::size_t k = 1; k < length; ++k) {
            candFlat = candFlat && at(cand, line, k) == at(cand, line, 0);
            refFlat = refFlat && at(ref, line, k) == at(ref, line, 0);
        }
        if (candFlat && !refFlat) {
            out.push_back(static_cast<std::int64_t>(line));
        }
    }
    return out;
}

} // namespace

std::optional<ShapeSignature> zeroedRows(const FullTensor& reference, const FullTensor& candidate,
                                         double tolerance, double error) {
    const auto g = gridOf(reference.shape);
    if (!g) {
        return std::nullopt;
    }
    for (const bool columns : {false, true}) {
        const auto lines = flatLines(reference.values, candidate.values, *g, columns);
        if (lines.empty()) {
            continue;
        }
        // Undo those lines: does the rest agree?
        auto repaired = candidate.values;
        bool zero = true;
        for (const auto line : lines) {
            const auto l = static_cast<std::size_t>(line);
            const std::size_t length = columns ? g->rows : g->cols;
            for (std::size_t k = 0; k < length; ++k) {
                const std::size_t i = columns ? k * g->cols + l : l * g->cols + k;
                zero = zero && candidate.values[i] == 0.0;
                repaired[i] = reference.values[i];
            }
        }
        if (!explains(relDiff(repaired, reference.values), tolerance, error)) {
            continue;
        }
        ShapeSignature sig;
        sig.kind = SignatureKind::ZeroedRows;
        sig.indices = lines;
        const std::string what = columns ? "columns" : "rows";
        sig.summary = std::to_string(lines.size()) + " " + what + (zero ? " zeroed" : " constant") +
                      " (of " + std::to_string(columns ? g->cols : g->rows) + "): " +
                      indexList(lines);
        sig.evidence = "with those " + what + " taken from the reference, the rest agrees";
        return sig;
    }
    return std::nullopt;
}

std::optional<ShapeSignature> transposed(const FullTensor& reference, const FullTensor& candidate,
                                         double tolerance, double error) {
    const auto& shape = reference.shape;
    if (shape.size() < 2) {
        return std::nullopt;
    }
    const auto a = static_cast<std::size_t>(shape[shape.size() - 2]);
    const auto b = static_cast<std::size_t>(shape.back());
    if (a < 2 || b < 2) {
        return std::nullopt;
    }
    // The candidate's last two dimensions read as [b, a] and transposed back.
    std::vector<double> back(candidate.values.size());
    const std::size_t mats = candidate.values.size() / (a * b);
    for (std::size_t m = 0; m < mats; ++m) {
        for (std::size_t i = 0; i < a; ++i) {
            for (std::size_t j = 0; j < b; ++j) {
                back[m * a * b + i * b + j] = candidate.values[m * a * b + j * a + i];
            }
        }
    }
    const double residual = relDiff(back, reference.values);
    if (!explains(residual, tolerance, error)) {
        return std::nullopt;
    }
    ShapeSignature sig;
    sig.kind = SignatureKind::Transpose;
    sig.summary = "the last two dimensions are transposed";
    sig.evidence = "candidate read as [" + std::to_string(b) + ", " + std::to_string(a) +
                   "] and transposed matches the reference (residual " + formatFactor(residual) +
                   ")";
    return sig;
}

std::optional<ShapeSignature> rowPermutation(const FullTensor& reference,
                                             const FullTensor& candidate, double tolerance,
                                             double error) {
    const auto g = gridOf(reference.shape);
    constexpr std::size_t kMaxRows = 1024; // an O(rows^2) search
    if (!g || g->rows > kMaxRows) {
        return std::nullopt;
    }
    const auto& ref = reference.values;
    const auto& cand = candidate.values;
    auto rowDiff = [&](std::size_t i, std::size_t j) {
        double num = 0.0;
        double den = 0.0;
        for (std::size_t k = 0; k < g->cols; ++k) {
            const double d = cand[i * g->cols + k] - ref[j * g->cols + k];
            num += d * d;
            den += ref[j * g->cols + k] * ref[j * g->cols + k];
        }
        return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
    };
    std::vector<std::int64_t> moved;
    for (std::size_t i = 0; i < g->rows; ++i) {
        if (explains(rowDiff(i, i), tolerance, error)) {
            continue;
        }
        std::size_t j = 0;
        while (j < g->rows && (j == i || !explains(rowDiff(i, j), tolerance, error))) {
            ++j;
        }
        if (j == g->rows) {
            return std::nullopt; // a row that matches no reference row: not a permutation
        }
        moved.push_back(static_cast<std::int64_t>(i));
    }
    if (moved.empty()) {
        return std::nullopt;
    }
    ShapeSignature sig;
    sig.kind = SignatureKind::RowPermutation;
    sig.indices = moved;
    sig.summary = std::to_string(moved.size()) + " of " + std::to_string(g->rows) +
                  " rows hold another row's reference values (rows mixed up)";
    sig.evidence = "every candidate row matches some reference row within tolerance; moved: " +
                   indexList(moved);
    return sig;
}

} // namespace ttrace
