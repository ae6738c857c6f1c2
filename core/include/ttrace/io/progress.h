#pragma once
// Progress reporting with cancellation for long engine work (loading, merging, diffing).
// The callback returns false to cancel; engine code checks it between units of work.
#include <atomic>
#include <functional>
#include <mutex>
#include <string_view>

namespace ttrace {

using ProgressFn = std::function<bool(double fraction, std::string_view what)>;

// Thread-safe wrapper used inside parallel loops: reports at most once per completed unit and
// latches cancellation so every worker sees it.
class ProgressTracker {
public:
    ProgressTracker(ProgressFn fn, std::size_t totalUnits);
    // Marks one unit done; returns false once cancelled.
    bool advance(std::string_view what);
    [[nodiscard]] bool cancelled() const { return cancelled_.load(); }

private:
    ProgressFn fn_;
    std::size_t total_;
    std::atomic<std::size_t> done_{0};
    std::atomic<bool> cancelled_{false};
    std::mutex callMutex_; // front ends need not make their callback thread-safe
};

} // namespace ttrace
