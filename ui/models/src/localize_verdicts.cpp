#include "ttrace/ui/models/localize_verdicts.h"

namespace ttrace::ui {
namespace {

using replay::LocalizePhase;
using replay::Verdict;

bool isAncestor(const std::string& ancestor, const std::string& module) {
    return module.size() > ancestor.size() + 1 && module.starts_with(ancestor) &&
           module[ancestor.size()] == '.';
}

bool introduces(LocalizeBadge b) {
    return b == LocalizeBadge::IntroducedHere || b == LocalizeBadge::IntroducedBelow;
}

// The badge one verdict earns on its own. A step replay of a module's parameters fed the
// reference's main_grad: right means the main_grad it was given was wrong, which for a
// reduction-phase suspect is the reduction's fault (the walk's rule for the whole step).
LocalizeBadge badgeOf(const replay::ModuleVerdict& v) {
    switch (v.verdict) {
    case Verdict::NotReplayable: return LocalizeBadge::NotReplayable;
    case Verdict::Introduced:
        return v.suspect.phase == LocalizePhase::Step || v.suspect.phase == LocalizePhase::Reduction
                   ? LocalizeBadge::StepGuilty
                   : LocalizeBadge::IntroducedHere;
    case Verdict::Inherited:
        return v.suspect.phase == LocalizePhase::Reduction ? LocalizeBadge::ReductionGuilty
                                                           : LocalizeBadge::Inherited;
    }
    return LocalizeBadge::None;
}

} // namespace

void LocalizeVerdicts::clear() {
    modules_.clear();
    step_.reset();
    last_.reset();
}

void LocalizeVerdicts::setBadge(const std::string& module, LocalizeBadge badge,
                                std::vector<std::string>& changed) {
    auto& entry = modules_[module];
    if (entry.badge != badge) {
        entry.badge = badge;
        changed.push_back(module);
    }
}

bool LocalizeVerdicts::hasIntroducedDescendant(const std::string& module) const {
    for (auto it = modules_.upper_bound(module); it != modules_.end(); ++it) {
        if (!it->first.starts_with(module)) {
            break; // the map is ordered by name: descendants follow their ancestor
        }
        if (isAncestor(module, it->first) && introduces(it->second.badge)) {
            return true;
        }
    }
    return false;
}

std::vector<std::string> LocalizeVerdicts::setReplaying(const std::string& module) {
    std::vector<std::string> changed;
    if (!module.empty()) {
        setBadge(module, LocalizeBadge::Replaying, changed);
    }
    return changed;
}

std::vector<std::string> LocalizeVerdicts::add(const replay::ModuleVerdict& verdict) {
    std::vector<std::string> changed;
    const std::string& module = verdict.suspect.module;
    if (module.empty()) {
        step_ = verdict; // every parameter at once: badges follow from the walk's result
        return changed;
    }
    LocalizeBadge badge = badgeOf(verdict);
    if (badge == LocalizeBadge::IntroducedHere && hasIntroducedDescendant(module)) {
        badge = LocalizeBadge::IntroducedBelow;
    }
    modules_[module].verdict = verdict;
    setBadge(module, badge, changed);
    if (introduces(badge)) {
        for (auto& [name, entry] : modules_) {
            if (isAncestor(name, module) && entry.badge == LocalizeBadge::IntroducedHere) {
                entry.badge = LocalizeBadge::IntroducedBelow;
                changed.push_back(name);
            }
        }
    }
    return changed;
}

std::vector<std::string> LocalizeVerdicts::finish(const replay::LocalizeResult& result) {
    std::vector<std::string> changed;
    for (auto& [name, entry] : modules_) {
        if (entry.badge == LocalizeBadge::Replaying) {
            entry.badge = entry.verdict ? badgeOf(*entry.verdict) : LocalizeBadge::None;
            changed.push_back(name);
        }
    }
    if (result.guiltyPhase) {
        const auto badge = *result.guiltyPhase == LocalizePhase::Reduction
                               ? LocalizeBadge::ReductionGuilty
                               : LocalizeBadge::StepGuilty;
        for (const auto& module : result.guiltyParameters) {
            setBadge(module, badge, changed);
        }
    }
    last_ = result;
    return changed;
}

LocalizeBadge LocalizeVerdicts::badge(const std::string& module) const {
    const auto it = modules_.find(module);
    return it == modules_.end() ? LocalizeBadge::None : it->second.badge;
}

const replay::ModuleVerdict* LocalizeVerdicts::verdict(const std::string& module) const {
    const auto it = modules_.find(module);
    return it == modules_.end() || !it->second.verdict ? nullptr : &*it->second.verdict;
}

const replay::ModuleVerdict* LocalizeVerdicts::stepVerdict() const {
    return step_ ? &*step_ : nullptr;
}

std::vector<std::string> LocalizeVerdicts::guiltyModules() const {
    std::vector<std::string> out;
    for (const auto& [name, entry] : modules_) {
        if (isGuiltyBadge(entry.badge)) {
            out.push_back(name);
        }
    }
    return out;
}

} // namespace ttrace::ui
