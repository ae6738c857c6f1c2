#pragma once
// Signatures that look at a tensor as rows (every leading dimension) x its last dimension:
// zeroed or constant rows/columns, a transpose, rows (tokens) that moved. Private to core.
#include "ttrace/compare/shape_diagnosis.h"

#include <optional>

namespace ttrace {

std::optional<ShapeSignature> zeroedRows(const FullTensor& reference, const FullTensor& candidate,
                                         double tolerance, double error);
std::optional<ShapeSignature> transposed(const FullTensor& reference, const FullTensor& candidate,
                                         double tolerance, double error);
std::optional<ShapeSignature> rowPermutation(const FullTensor& reference,
                                             const FullTensor& candidate, double tolerance,
                                             double error);

} // namespace ttrace
