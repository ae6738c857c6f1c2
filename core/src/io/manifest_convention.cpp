#include "io/manifest_convention.h"

#include "ttrace/io/manifest.h"

#include <cmath>

namespace ttrace {

std::optional<GradientConvention>
readConventionSection(const nlohmann::json& root, const std::string& where, Diagnostics& out) {
    if (!root.contains("gradient_convention") || root.at("gradient_convention").is_null()) {
        return std::nullopt;
    }
    const auto& s = root.at("gradient_convention");
    const bool ok = s.is_object() && s.contains("reduction") && s.at("reduction").is_string() &&
                    s.contains("divide_factor") && s.at("divide_factor").is_number() &&
                    std::isfinite(s.at("divide_factor").get<double>()) &&
                    s.at("divide_factor").get<double>() > 0.0 && s.contains("source") &&
                    s.at("source").is_string();
    if (!ok) {
        out.push_back(makeWarning(DiagnosticCode::ManifestGradientConvention, where,
                                  "gradient_convention needs a string 'reduction', a number "
                                  "'divide_factor' > 0 and a string 'source'; reports leave the "
                                  "job's convention unnamed"));
        return std::nullopt;
    }
    GradientConvention c;
    c.reduction = s.at("reduction").get<std::string>();
    c.divideFactor = s.at("divide_factor").get<double>();
    c.source = s.at("source").get<std::string>();
    // Optional fields of another type are left at their defaults, never thrown on.
    const auto& determined = s.contains("determined") ? s.at("determined") : nlohmann::json();
    c.determined = !determined.is_boolean() || determined.get<bool>();
    const auto& mb = s.contains("micro_batches") ? s.at("micro_batches") : nlohmann::json();
    c.microBatches = mb.is_number_integer() && mb.get<std::int64_t>() >= 1 &&
                             mb.get<std::int64_t>() <= kMaxMicroBatches
                         ? static_cast<int>(mb.get<std::int64_t>())
                         : 1;
    return c;
}

} // namespace ttrace
