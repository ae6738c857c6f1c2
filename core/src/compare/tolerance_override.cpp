#include "ttrace/compare/tolerance.h"

#include <charconv>
#include <cmath>
#include <string>

namespace ttrace {

bool globMatch(std::string_view pattern, std::string_view text) {
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    std::size_t p = 0;
    std::size_t t = 0;
    std::size_t starP = std::string_view::npos;
    std::size_t starT = 0;
    while (t < text.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (p < pattern.size() && pattern[p] == '*') {
            starP = p++;
            starT = t;
        } else if (starP != std::string_view::npos) {
            p = starP + 1;
            t = ++starT;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') {
        ++p;
    }
    return p == pattern.size();
}

std::optional<ToleranceOverride> parseToleranceOverride(std::string_view spec, std::string& error) {
    const auto eq = spec.rfind('=');
    if (eq == std::string_view::npos || eq == 0) {
        error = "expected PATTERN[:KIND]=VALUE, got '" + std::string(spec) + "'";
        return std::nullopt;
    }
    ToleranceOverride o;
    std::string_view lhs = spec.substr(0, eq);
    const std::string_view rhs = spec.substr(eq + 1);
    if (const auto colon = lhs.rfind(':'); colon != std::string_view::npos) {
        const auto kindName = lhs.substr(colon + 1);
        o.kind = parseTensorKind(kindName);
        if (!o.kind) {
            error = "unknown tensor kind '" + std::string(kindName) + "' in '" + std::string(spec) +
                    "' (kinds: forward_input, forward_output, output_grad, input_grad, parameter, "
                    "param_grad, main_grad, param_after_step, optimizer_state)";
            return std::nullopt;
        }
        lhs = lhs.substr(0, colon);
    }
    o.modulePattern = lhs.empty() ? std::string("*") : std::string(lhs);
    const auto [end, ec] = std::from_chars(rhs.data(), rhs.data() + rhs.size(), o.value);
    if (ec != std::errc{} || end != rhs.data() + rhs.size() || !std::isfinite(o.value) ||
        o.value < 0.0) {
        error = "tolerance in '" + std::string(spec) + "' must be a non-negative number";
        return std::nullopt;
    }
    return o;
}

} // namespace ttrace
