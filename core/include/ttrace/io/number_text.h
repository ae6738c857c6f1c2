#pragma once
// Compact number formatting shared by every text the core writes (verdict lines, the Markdown
// report, diagnostics): "3.2e-07", "12.4", "inf". In io because the stages above all word
// numbers the same way.
#include <string>

namespace ttrace {

[[nodiscard]] std::string formatNumber(double value);

} // namespace ttrace
