#pragma once
// Number formatting shared by the tree, the stats table and the reports, so the same value reads
// the same everywhere.
#include <QString>

#include <cstdint>

namespace ttrace::ui {

// Ratio: "0.42", "3.1", "27", "1.2e4", "3.0e-3"; "NaN" / "inf" spelled out.
QString formatRatio(double ratio);
// Errors and tolerances: always scientific, 3 significant digits ("1.23e-07").
QString formatScientific(double value);
// Counts with thousands separators ("1 048 576").
QString formatCount(std::int64_t value);

} // namespace ttrace::ui
