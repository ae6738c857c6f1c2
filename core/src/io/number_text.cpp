#include "ttrace/io/number_text.h"

#include <cmath>
#include <cstdio>

namespace ttrace {

std::string formatNumber(double value) {
    if (std::isnan(value)) {
        return "nan";
    }
    if (std::isinf(value)) {
        return value > 0 ? "inf" : "-inf";
    }
    char buf[32];
    const double a = std::abs(value);
    if (value == 0.0) {
        return "0";
    }
    if (a >= 0.01 && a < 1e5) {
        std::snprintf(buf, sizeof buf, "%.3g", value);
    } else {
        std::snprintf(buf, sizeof buf, "%.2e", value);
    }
    return buf;
}

} // namespace ttrace
