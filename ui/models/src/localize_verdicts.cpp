#include "ttrace/ui/models/localize_verdicts.h"

#include "ttrace/replay/localize_text.h"

#include <algorithm>

namespace ttrace::ui {
namespace {

using replay::LocalizePhase;
using replay::ModuleFinding;

bool isAncestor(const std::string& ancestor, const std::string& module) {
    return module.size() > ancestor.size() + 1 && module.starts_with(ancestor) &&
           module[ancestor.size()] == '.';
}

bool introduces(LocalizeBadge b) {
    return b == LocalizeBadge::IntroducedHere || b == LocalizeBadge::IntroducedBelow;
}

LocalizeBadge badgeOfFinding(ModuleFinding f) {
    switch (f) {
    case ModuleFinding::None: return LocalizeBadge::None;
    case ModuleFinding::IntroducedHere: return LocalizeBadge::IntroducedHere;
    case ModuleFinding::IntroducedBelow: return LocalizeBadge::IntroducedBelow;
    case ModuleFinding::Inherited: return LocalizeBadge::Inherited;
    case ModuleFinding::NotReplayable: return LocalizeBadge::NotReplayable;
    case ModuleFinding::ReductionGuilty: return LocalizeBadge::ReductionGuilty;
    case ModuleFinding::StepGuilty: return LocalizeBadge::StepGuilty;
    }
    return LocalizeBadge::None;
}

// The badge one verdict earns on its own, by the core's rule (`ttrace localize` words it so):
// a step replay that agrees blames the reduction only when the run's result says so.
LocalizeBadge badgeOf(const replay::ModuleVerdict& v) {
    return badgeOfFinding(replay::findingOf(v));
}

} // namespace

void LocalizeVerdicts::clear() {
    modules_.clear();
    latestIteration_.clear();
    steps_.clear();
    latestStep_.reset();
    replaying_.clear();
    last_.reset();
}

void LocalizeVerdicts::setBadge(const Key& key, LocalizeBadge badge,
                                std::vector<std::string>& changed) {
    auto& entry = modules_[key];
    const LocalizeBadge shown = this->badge(key.first);
    entry.badge = badge;
    latestIteration_[key.first] = key.second;
    if (shown != this->badge(key.first)) {
        changed.push_back(key.first);
    }
}

bool LocalizeVerdicts::hasIntroducedDescendant(const Key& key) const {
    for (auto it = modules_.upper_bound({key.first, INT64_MAX}); it != modules_.end(); ++it) {
        if (!it->first.first.starts_with(key.first)) {
            break; // the map is ordered by name: descendants follow their ancestor
        }
        if (it->first.second == key.second && isAncestor(key.first, it->first.first) &&
            introduces(it->second.badge)) {
            return true;
        }
    }
    return false;
}

const LocalizeVerdicts::Entry* LocalizeVerdicts::latest(const std::string& module) const {
    const auto at = latestIteration_.find(module);
    if (at == latestIteration_.end()) {
        return nullptr;
    }
    const auto it = modules_.find({module, at->second});
    return it == modules_.end() ? nullptr : &it->second;
}

std::vector<std::string> LocalizeVerdicts::setReplaying(const std::string& module) {
    if (module.empty() || !replaying_.insert(module).second) {
        return {};
    }
    return {module};
}

std::vector<std::string> LocalizeVerdicts::add(const replay::ModuleVerdict& verdict) {
    std::vector<std::string> changed;
    const std::string& module = verdict.suspect.module;
    const std::int64_t iteration = verdict.suspect.iteration;
    if (module.empty()) {
        steps_[iteration] = verdict; // every parameter at once: badges follow from the result
        latestStep_ = iteration;
        return changed;
    }
    if (replaying_.erase(module) > 0) {
        changed.push_back(module);
    }
    const Key key{module, iteration};
    LocalizeBadge badge = badgeOf(verdict);
    if (badge == LocalizeBadge::IntroducedHere && hasIntroducedDescendant(key)) {
        badge = LocalizeBadge::IntroducedBelow;
    }
    modules_[key].verdict = verdict;
    setBadge(key, badge, changed);
    if (introduces(badge)) {
        for (auto& [k, entry] : modules_) {
            if (k.second == iteration && isAncestor(k.first, module) &&
                entry.badge == LocalizeBadge::IntroducedHere) {
                entry.badge = LocalizeBadge::IntroducedBelow;
                changed.push_back(k.first);
            }
        }
    }
    return changed;
}

std::vector<std::string> LocalizeVerdicts::finish(const replay::LocalizeResult& result) {
    std::vector<std::string> changed(replaying_.begin(), replaying_.end());
    replaying_.clear();
    if (result.guiltyPhase) {
        const auto badge = *result.guiltyPhase == LocalizePhase::Reduction
                               ? LocalizeBadge::ReductionGuilty
                               : LocalizeBadge::StepGuilty;
        for (const auto& module : result.guiltyParameters) {
            // The iteration the replay judged: the module's own, else the step's over all.
            const auto own = std::find_if(
                result.verdicts.rbegin(), result.verdicts.rend(),
                [&](const replay::ModuleVerdict& v) { return v.suspect.module == module; });
            const auto step = std::find_if(
                result.verdicts.rbegin(), result.verdicts.rend(),
                [](const replay::ModuleVerdict& v) { return v.suspect.module.empty(); });
            const std::int64_t iteration = own != result.verdicts.rend() ? own->suspect.iteration
                                           : step != result.verdicts.rend()
                                               ? step->suspect.iteration
                                               : 0;
            setBadge({module, iteration}, badge, changed);
        }
    }
    last_ = result;
    return changed;
}

LocalizeBadge LocalizeVerdicts::badge(const std::string& module) const {
    if (replaying_.contains(module)) {
        return LocalizeBadge::Replaying;
    }
    const Entry* e = latest(module);
    return e ? e->badge : LocalizeBadge::None;
}

LocalizeBadge LocalizeVerdicts::badge(const std::string& module, std::int64_t iteration) const {
    const auto it = modules_.find({module, iteration});
    return it == modules_.end() ? LocalizeBadge::None : it->second.badge;
}

const replay::ModuleVerdict* LocalizeVerdicts::verdict(const std::string& module) const {
    const Entry* e = latest(module);
    return e && e->verdict ? &*e->verdict : nullptr;
}

const replay::ModuleVerdict* LocalizeVerdicts::verdict(const std::string& module,
                                                       std::int64_t iteration) const {
    const auto it = modules_.find({module, iteration});
    return it == modules_.end() || !it->second.verdict ? nullptr : &*it->second.verdict;
}

std::vector<std::int64_t> LocalizeVerdicts::iterations(const std::string& module) const {
    std::vector<std::int64_t> out;
    for (auto it = modules_.lower_bound({module, INT64_MIN});
         it != modules_.end() && it->first.first == module; ++it) {
        out.push_back(it->first.second);
    }
    return out;
}

const replay::ModuleVerdict* LocalizeVerdicts::stepVerdict() const {
    return latestStep_ ? stepVerdict(*latestStep_) : nullptr;
}

const replay::ModuleVerdict* LocalizeVerdicts::stepVerdict(std::int64_t iteration) const {
    const auto it = steps_.find(iteration);
    return it == steps_.end() ? nullptr : &it->second;
}

std::vector<std::string> LocalizeVerdicts::guiltyModules() const {
    std::vector<std::string> out;
    for (const auto& [module, iteration] : latestIteration_) {
        if (isGuiltyBadge(badge(module))) {
            out.push_back(module);
        }
    }
    return out;
}

} // namespace ttrace::ui
