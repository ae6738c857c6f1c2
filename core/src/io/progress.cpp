#include "ttrace/io/progress.h"

#include <utility>

namespace ttrace {

ProgressTracker::ProgressTracker(ProgressFn fn, std::size_t totalUnits)
    : fn_(std::move(fn))
    , total_(totalUnits == 0 ? 1 : totalUnits) {}

bool ProgressTracker::advance(std::string_view what) {
    const std::size_t done = ++done_;
    if (cancelled_.load()) {
        return false;
    }
    if (fn_) {
        const std::lock_guard lock(callMutex_);
        if (!fn_(static_cast<double>(done) / static_cast<double>(total_), what)) {
            cancelled_.store(true);
            return false;
        }
    }
    return true;
}

} // namespace ttrace
