#pragma once
// Columns of the layer tree: the module name, its worst ratio, then one column per tensor kind
// in the order a user reads a training step (forward, backward, optimizer).
#include "ttrace/io/tensor_id.h"

#include <QString>

#include <optional>

namespace ttrace::ui {

inline constexpr int kNameColumn = 0;
inline constexpr int kWorstColumn = 1;
inline constexpr int kFirstKindColumn = 2;
inline constexpr int kKindColumnCount = 7;
inline constexpr int kLayerTreeColumnCount = kFirstKindColumn + kKindColumnCount;

// The tensor kind a column shows, or nothing for the name and worst columns.
std::optional<TensorKind> kindOfColumn(int column);
// The column showing `kind`, or nothing for kinds the tree does not show (parameters before the
// step, optimizer state: they are compared but rarely where a bug shows first).
std::optional<int> columnOfKind(TensorKind kind);
QString columnTitle(int column);
QString columnDescription(int column);
// Short human name of a tensor kind, e.g. "output grad".
QString kindTitle(TensorKind kind);

} // namespace ttrace::ui
