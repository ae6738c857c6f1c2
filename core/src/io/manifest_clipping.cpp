#include "io/manifest_clipping.h"

#include <cmath>

namespace ttrace {
namespace {

bool finiteNumber(const nlohmann::json& s, const char* key) {
    return s.contains(key) && s.at(key).is_number() && std::isfinite(s.at(key).get<double>());
}

bool wellFormed(const nlohmann::json& s) {
    return s.is_object() && s.contains("iteration") && s.at("iteration").is_number_integer() &&
           finiteNumber(s, "total_norm") && finiteNumber(s, "max_norm") &&
           finiteNumber(s, "coefficient") && s.at("max_norm").get<double>() > 0.0;
}

ClipStep readStep(const nlohmann::json& s) {
    ClipStep c;
    c.iteration = s.at("iteration").get<std::int64_t>();
    c.totalNorm = s.at("total_norm").get<double>();
    c.maxNorm = s.at("max_norm").get<double>();
    c.coefficient = s.at("coefficient").get<double>();
    if (s.contains("variant") && s.at("variant").is_string()) {
        c.variant = s.at("variant").get<std::string>();
    }
    if (s.contains("source") && s.at("source").is_string()) {
        c.source = s.at("source").get<std::string>();
    }
    return c;
}

} // namespace

std::vector<ClipStep> readClippingSection(const nlohmann::json& root, const std::string& where,
                                          Diagnostics& out) {
    if (!root.contains("gradient_clipping") || root.at("gradient_clipping").is_null()) {
        return {};
    }
    const auto& section = root.at("gradient_clipping");
    const bool listed =
        section.is_object() && section.contains("steps") && section.at("steps").is_array();
    std::vector<ClipStep> steps;
    if (listed) {
        for (const auto& s : section.at("steps")) {
            if (!wellFormed(s)) {
                steps.clear();
                break;
            }
            steps.push_back(readStep(s));
        }
    }
    if (!listed || (steps.empty() && !section.at("steps").empty())) {
        out.push_back(makeWarning(DiagnosticCode::ManifestGradientClipping, where,
                                  "gradient_clipping needs a list 'steps' of objects with an "
                                  "integer 'iteration' and finite numbers 'total_norm', "
                                  "'max_norm' > 0 and 'coefficient'; clipped steps are compared "
                                  "without the recorded coefficients"));
        return {};
    }
    return steps;
}

} // namespace ttrace
