#include "ttrace/ui/models/report_modules.h"

namespace ttrace::ui {

std::vector<ModuleInfo> modulesOfReport(const DiffResult& result) {
    std::vector<ModuleInfo> out;
    out.reserve(result.modules.size());
    for (const auto& m : result.modules) {
        out.push_back(ModuleInfo{
            .name = m.name, .order = m.order, .depth = m.depth, .type = m.type, .compiledIn = {}});
    }
    return out;
}

} // namespace ttrace::ui
