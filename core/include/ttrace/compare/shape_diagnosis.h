#pragma once
// The shape of a divergent tensor's error: how the merged candidate differs from the reference
// (a clean factor, one slice wrong, slices swapped, rows zeroed, replicas apart, a transpose).
// The shape usually names the bug class (docs/bug-zoo.md); "no signature" is a valid answer.
#include "ttrace/merge/merge.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace {

enum class SignatureKind {
    ConstantFactor,   // cand = c * ref
    SliceFactors,     // each placement slice has its own clean factor (a slice-sized norm)
    SliceLocal,       // the error lives in some placement slices; the others agree
    SlicePermutation, // slices along the sharded dimension are swapped or permuted
    RowPermutation,   // whole rows (tokens) are permuted
    ZeroedRows,       // some rows (or columns) are zero (or constant) in the candidate only
    ReplicasDisagree, // copies of the same elements on different ranks differ
    SignFlip,         // cand = -ref
    Transpose,        // cand is the reference transposed
};
std::string_view signatureKindName(SignatureKind kind);
std::optional<SignatureKind> parseSignatureKind(std::string_view name);

struct ShapeSignature {
    SignatureKind kind = SignatureKind::ConstantFactor;
    std::string summary;    // one line, e.g. "x0.5 (= 1/dp)"
    std::string evidence;   // the numbers behind it
    double factor = 0.0;    // ConstantFactor / SignFlip
    double residual = 0.0;  // ConstantFactor / SignFlip: ||cand / factor - ref|| / ||ref||
    std::vector<int> ranks; // SliceLocal, ReplicasDisagree: the ranks that carry it
    std::vector<std::int64_t> indices; // SlicePermutation: the matching order; ZeroedRows: rows
};

// Parallel sizes of the candidate (manifest "parallel": tp, dp, cp, pp, ep, ...), used to name
// factors (x dp, x 1/tp).
using ParallelSizes = std::map<std::string, int>;

struct DiagnosisInput {
    const FullTensor& reference;
    const FullTensor& candidate;
    double tolerance = 0.0; // the tensor's relative tolerance: "agrees" means within it
    const ParallelSizes& parallel;
    const Diagnostics& findings; // merge findings (replica disagreement names the ranks)
};

// Tests the candidate against each signature; returns those that explain the error, most
// specific first. Empty when no signature fits. When the merged tensor agrees (it holds the
// lowest rank's copy of replicated elements) only replicas that disagree are looked for.
std::vector<ShapeSignature> diagnoseShape(const DiagnosisInput& input);

} // namespace ttrace
