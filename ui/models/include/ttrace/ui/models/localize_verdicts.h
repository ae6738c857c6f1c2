#pragma once
// The replay verdicts of this session, by module and by the iteration each replay judged: what
// the layer tree badges and the drill-down compares. Verdicts arrive one at a time (a walk
// reports each as it is reached) and are kept: a later Localize All replaces only the verdicts
// of the modules and iterations it replays again, never a single Localize's of another. Badges
// are kept consistent as they come: a module judged "introduced" becomes "introduced below"
// once one of its descendants is judged "introduced" in the same iteration, since only the
// deepest one holds the bug (the rule of the core's walk, docs/localize.md). The words come
// from the core (ttrace/replay/localize_text.h), as `ttrace localize` prints them.
#include "ttrace/replay/localize_result.h"
#include "ttrace/ui/models/localize_badge.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ttrace::ui {

class LocalizeVerdicts {
public:
    void clear();
    // A replay of `module` started; returns the modules whose badge changed.
    std::vector<std::string> setReplaying(const std::string& module);
    // One verdict as it arrives; returns the modules whose badge changed.
    std::vector<std::string> add(const replay::ModuleVerdict& verdict);
    // The run's end: guilty phases badge their parameters' modules; replays still marked as
    // running (a cancelled walk) lose their mark. Returns the modules whose badge changed.
    std::vector<std::string> finish(const replay::LocalizeResult& result);

    // The badge of the module's latest judged iteration (what the tree shows).
    [[nodiscard]] LocalizeBadge badge(const std::string& module) const;
    [[nodiscard]] LocalizeBadge badge(const std::string& module, std::int64_t iteration) const;
    // The module's latest verdict, or the one of `iteration`.
    [[nodiscard]] const replay::ModuleVerdict* verdict(const std::string& module) const;
    [[nodiscard]] const replay::ModuleVerdict* verdict(const std::string& module,
                                                       std::int64_t iteration) const;
    // Iterations the module has a verdict for, ascending.
    [[nodiscard]] std::vector<std::int64_t> iterations(const std::string& module) const;
    // The optimizer-step replay over every parameter (a walk that starts in the reduction or
    // step phase), the latest or that of `iteration`, if one was judged.
    [[nodiscard]] const replay::ModuleVerdict* stepVerdict() const;
    [[nodiscard]] const replay::ModuleVerdict* stepVerdict(std::int64_t iteration) const;
    [[nodiscard]] const std::optional<replay::LocalizeResult>& lastResult() const { return last_; }
    // Modules whose latest badge names the bug, in name order.
    [[nodiscard]] std::vector<std::string> guiltyModules() const;
    [[nodiscard]] bool empty() const { return modules_.empty() && steps_.empty(); }

private:
    struct Entry {
        LocalizeBadge badge = LocalizeBadge::None;
        std::optional<replay::ModuleVerdict> verdict;
    };
    using Key = std::pair<std::string, std::int64_t>; // module, iteration
    void setBadge(const Key& key, LocalizeBadge badge, std::vector<std::string>& changed);
    [[nodiscard]] bool hasIntroducedDescendant(const Key& key) const;
    [[nodiscard]] const Entry* latest(const std::string& module) const;

    std::map<Key, Entry> modules_;
    std::map<std::string, std::int64_t> latestIteration_; // per module, its last judged one
    std::map<std::int64_t, replay::ModuleVerdict> steps_; // per iteration
    std::optional<std::int64_t> latestStep_;
    std::set<std::string> replaying_; // replays under way, badged "replaying…" meanwhile
    std::optional<replay::LocalizeResult> last_;
};

} // namespace ttrace::ui
