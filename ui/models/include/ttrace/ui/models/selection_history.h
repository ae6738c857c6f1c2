#pragma once
// Back and forward through the cells the user selected, as browsers and RenderDoc go back and
// forward: selecting a new cell after going back drops the forward part; selecting the cell
// already current records nothing. Plain data: the window drives it and restores the cell.
#include <QString>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ttrace::ui {

struct SelectionPlace {
    QString module;
    int column = 0;
    std::optional<std::int64_t> iteration; // the step filter's iteration; none: all
    bool operator==(const SelectionPlace&) const = default;
};

class SelectionHistory {
public:
    // Records a selection the user made (not one made by back/forward).
    void visit(const SelectionPlace& place);
    [[nodiscard]] bool canGoBack() const { return current_ > 0; }
    [[nodiscard]] bool canGoForward() const { return current_ + 1 < places_.size(); }
    // The place to restore, or nothing at either end.
    std::optional<SelectionPlace> back();
    std::optional<SelectionPlace> forward();
    [[nodiscard]] std::optional<SelectionPlace> current() const;
    [[nodiscard]] std::size_t size() const { return places_.size(); }
    void clear();

private:
    static constexpr std::size_t kLimit = 200; // oldest places are dropped beyond this
    std::vector<SelectionPlace> places_;
    std::size_t current_ = 0; // index into places_ (0 when empty)
};

} // namespace ttrace::ui
