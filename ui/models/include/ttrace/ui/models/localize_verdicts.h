#pragma once
// The replay verdicts of this session, by module: what the layer tree badges and the drill-down
// compares. Verdicts arrive one at a time (a walk reports each as it is reached); badges are
// kept consistent as they come: a module judged "introduced" becomes "introduced below" once
// one of its descendants is judged "introduced" too, since only the deepest one holds the bug
// (the rule of the core's walk, docs/localize.md).
#include "ttrace/replay/localize_result.h"
#include "ttrace/ui/models/localize_badge.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ttrace::ui {

class LocalizeVerdicts {
public:
    void clear();
    // A replay of `module` started; returns the modules whose badge changed.
    std::vector<std::string> setReplaying(const std::string& module);
    // One verdict as it arrives; returns the modules whose badge changed.
    std::vector<std::string> add(const replay::ModuleVerdict& verdict);
    // The walk's end: guilty phases badge their parameters' modules; replays still marked as
    // running (a cancelled walk) lose their mark. Returns the modules whose badge changed.
    std::vector<std::string> finish(const replay::LocalizeResult& result);

    [[nodiscard]] LocalizeBadge badge(const std::string& module) const;
    [[nodiscard]] const replay::ModuleVerdict* verdict(const std::string& module) const;
    // The optimizer-step replay over every parameter (a walk that starts in the reduction or
    // step phase), if one was judged.
    [[nodiscard]] const replay::ModuleVerdict* stepVerdict() const;
    [[nodiscard]] const std::optional<replay::LocalizeResult>& lastResult() const { return last_; }
    // Modules whose badge names the bug, in name order.
    [[nodiscard]] std::vector<std::string> guiltyModules() const;
    [[nodiscard]] bool empty() const { return modules_.empty() && !step_; }

private:
    struct Entry {
        LocalizeBadge badge = LocalizeBadge::None;
        std::optional<replay::ModuleVerdict> verdict;
    };
    void setBadge(const std::string& module, LocalizeBadge badge,
                  std::vector<std::string>& changed);
    [[nodiscard]] bool hasIntroducedDescendant(const std::string& module) const;

    std::map<std::string, Entry> modules_;
    std::optional<replay::ModuleVerdict> step_;
    std::optional<replay::LocalizeResult> last_;
};

} // namespace ttrace::ui
