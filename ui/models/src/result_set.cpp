#include "ttrace/ui/models/result_set.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace ttrace::ui {
namespace {

double sortableRatio(double ratio) {
    return std::isnan(ratio) ? HUGE_VAL : ratio;
}

} // namespace

void ResultSet::clear() {
    streamed_.clear();
    final_.reset();
    cells_.clear();
    modules_.clear();
}

const std::vector<TensorResult>& ResultSet::tensors() const {
    return final_ ? final_->tensors : streamed_;
}

std::size_t ResultSet::add(TensorResult result) {
    if (final_) {
        return npos;
    }
    streamed_.push_back(std::move(result));
    index(streamed_.size() - 1);
    return streamed_.size() - 1;
}

void ResultSet::setFinal(std::shared_ptr<const DiffResult> result) {
    streamed_.clear();
    streamed_.shrink_to_fit();
    cells_.clear();
    modules_.clear();
    final_ = std::move(result);
    if (!final_) {
        return;
    }
    for (std::size_t i = 0; i < final_->tensors.size(); ++i) {
        index(i);
    }
    for (std::size_t i = 0; i < final_->modules.size(); ++i) {
        modules_.emplace(final_->modules[i].name, i);
    }
}

void ResultSet::index(std::size_t i) {
    const auto& id = tensors()[i].id;
    cells_[{id.module, id.kind}].push_back(i);
}

const ModuleResult* ResultSet::module(const std::string& name) const {
    const auto it = modules_.find(name);
    return it == modules_.end() ? nullptr : &final_->modules[it->second];
}

const std::vector<std::size_t>& ResultSet::cell(const std::string& module, TensorKind kind) const {
    static const std::vector<std::size_t> empty;
    const auto it = cells_.find({module, kind});
    return it == cells_.end() ? empty : it->second;
}

std::optional<std::size_t> ResultSet::worst(const std::string& module, TensorKind kind,
                                            const StepFilter& filter) const {
    std::optional<std::size_t> best;
    for (const auto i : cell(module, kind)) {
        const auto& t = tensors()[i];
        if (filter.matches(t.id) && (!best || worse(t, tensors()[*best]))) {
            best = i;
        }
    }
    return best;
}

std::vector<std::size_t> ResultSet::history(const TensorId& id, bool allMicroBatches) const {
    std::vector<std::size_t> out;
    for (const auto i : cell(id.module, id.kind)) {
        const auto& other = tensors()[i].id;
        if (other.index == id.index && (allMicroBatches || other.microBatch == id.microBatch)) {
            out.push_back(i);
        }
    }
    std::sort(out.begin(), out.end(), [this](std::size_t a, std::size_t b) {
        const auto& x = tensors()[a].id;
        const auto& y = tensors()[b].id;
        return std::pair(x.iteration, x.microBatch) < std::pair(y.iteration, y.microBatch);
    });
    return out;
}

std::vector<std::int64_t> ResultSet::iterations() const {
    std::set<std::int64_t> seen;
    for (const auto& t : tensors()) {
        seen.insert(t.id.iteration);
    }
    return {seen.begin(), seen.end()};
}

std::vector<std::int64_t> ResultSet::microBatches() const {
    std::set<std::int64_t> seen;
    for (const auto& t : tensors()) {
        if (t.id.microBatch >= 0) {
            seen.insert(t.id.microBatch);
        }
    }
    return {seen.begin(), seen.end()};
}

bool ResultSet::worse(const TensorResult& a, const TensorResult& b) {
    const int sa = severity(a.status);
    const int sb = severity(b.status);
    if (sa != sb) {
        return sa > sb;
    }
    return sortableRatio(a.ratio) > sortableRatio(b.ratio);
}

} // namespace ttrace::ui
