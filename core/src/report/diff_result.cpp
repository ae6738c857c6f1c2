#include "ttrace/diff_result.h"

namespace ttrace {

std::string_view statusName(Status status) {
    switch (status) {
    case Status::Clean: return "clean";
    case Status::Divergent: return "divergent";
    case Status::Missing: return "missing";
    case Status::Invalid: return "invalid";
    }
    return "unknown";
}

std::string_view originName(Origin origin) {
    switch (origin) {
    case Origin::None: return "none";
    case Origin::Introduced: return "introduced";
    case Origin::Inherited: return "inherited";
    }
    return "unknown";
}

const ModuleResult* DiffResult::module(const std::string& name) const {
    for (const auto& m : modules) {
        if (m.name == name) {
            return &m;
        }
    }
    return nullptr;
}

} // namespace ttrace
