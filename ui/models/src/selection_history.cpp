#include "ttrace/ui/models/selection_history.h"

namespace ttrace::ui {

void SelectionHistory::visit(const SelectionPlace& place) {
    if (!places_.empty() && places_[current_] == place) {
        return;
    }
    if (!places_.empty()) {
        places_.resize(current_ + 1); // a new branch: the forward part is gone
    }
    places_.push_back(place);
    if (places_.size() > kLimit) {
        places_.erase(places_.begin());
    }
    current_ = places_.size() - 1;
}

std::optional<SelectionPlace> SelectionHistory::back() {
    if (!canGoBack()) {
        return std::nullopt;
    }
    return places_[--current_];
}

std::optional<SelectionPlace> SelectionHistory::forward() {
    if (!canGoForward()) {
        return std::nullopt;
    }
    return places_[++current_];
}

std::optional<SelectionPlace> SelectionHistory::current() const {
    return places_.empty() ? std::nullopt : std::optional(places_[current_]);
}

void SelectionHistory::clear() {
    places_.clear();
    current_ = 0;
}

} // namespace ttrace::ui
