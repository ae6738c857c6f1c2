#include "ttrace/ui/models/warning_groups.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ttrace::ui {
namespace {

using Key = std::tuple<int, std::string, int, std::string>; // severity, code, order, module

class Grouper {
public:
    void add(const Diagnostic& d, const std::string& module, int order,
             std::optional<std::size_t> tensor) {
        // The same finding reported twice (a bundle-level copy of a tensor's) counts once.
        if (!seen_.insert(d.toString()).second) {
            return;
        }
        // By the code's name: groups are listed in name order.
        const Key key{d.severity == Severity::Error ? 0 : 1, std::string(d.code.name()), order,
                      module};
        auto& g = groups_[key];
        if (g.items.empty()) {
            g.severity = d.severity;
            g.code = d.code;
            g.module = module;
            g.tensor = tensor;
        }
        g.items.push_back(d);
    }
    std::vector<WarningGroup> take() {
        std::vector<WarningGroup> out;
        for (auto& [key, g] : groups_) {
            out.push_back(std::move(g));
        }
        return out;
    }

private:
    std::map<Key, WarningGroup> groups_;
    std::set<std::string> seen_;
};

} // namespace

std::vector<WarningGroup> groupWarnings(const DiffResult& diff) {
    std::map<std::string, int> order;
    for (const auto& m : diff.modules) {
        order[m.name] = m.order;
    }
    Grouper grouper;
    for (std::size_t i = 0; i < diff.tensors.size(); ++i) {
        const auto& t = diff.tensors[i];
        const auto it = order.find(t.id.module);
        for (const auto& d : t.findings) {
            grouper.add(d, t.id.module, it == order.end() ? -1 : it->second, i);
        }
    }
    for (const auto& d : diff.diagnostics) {
        grouper.add(d, {}, -1, std::nullopt);
    }
    return grouper.take();
}

std::vector<WarningGroup> groupWarnings(const Diagnostics& diagnostics) {
    Grouper grouper;
    for (const auto& d : diagnostics) {
        grouper.add(d, {}, -1, std::nullopt);
    }
    return grouper.take();
}

} // namespace ttrace::ui
