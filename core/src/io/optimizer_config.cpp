#include "ttrace/io/optimizer_config.h"

#include <algorithm>

namespace ttrace {

std::string_view optimizerTypeName(OptimizerType type) {
    return type == OptimizerType::Adam ? "adam" : "adamw";
}

std::optional<OptimizerType> parseOptimizerType(std::string_view name) {
    if (name == "adam") {
        return OptimizerType::Adam;
    }
    if (name == "adamw") {
        return OptimizerType::AdamW;
    }
    return std::nullopt;
}

const OptimizerStepInfo* OptimizerGroup::stepAt(std::int64_t iteration) const {
    const auto it = std::find_if(steps.begin(), steps.end(),
                                 [iteration](const auto& s) { return s.iteration == iteration; });
    return it == steps.end() ? nullptr : &*it;
}

const OptimizerGroup* OptimizerConfig::groupFor(std::string_view module,
                                                std::string_view param) const {
    const std::string name = std::string(module) + "/" + std::string(param);
    for (const auto& g : groups) {
        if (g.params.empty() ||
            std::find(g.params.begin(), g.params.end(), name) != g.params.end()) {
            return &g;
        }
    }
    return nullptr;
}

} // namespace ttrace
