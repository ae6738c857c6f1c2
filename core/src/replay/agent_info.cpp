#include "ttrace/replay/agent_info.h"

namespace ttrace::replay {

const AgentModule* AgentInfo::findModule(const std::string& name) const {
    for (const auto& m : modules) {
        if (m.name == name) {
            return &m;
        }
    }
    return nullptr;
}

} // namespace ttrace::replay
