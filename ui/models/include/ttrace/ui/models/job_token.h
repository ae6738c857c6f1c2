#pragma once
// A background job's cancel flag: the GUI thread cancels, the job's work polls it. Cancelling is
// cooperative: the work stops at its next check (the core's progress callback, the agent client's
// next turn), never by killing a thread.
#include "ttrace/io/progress.h"
#include "ttrace/replay/cancel_token.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string_view>

namespace ttrace::ui {

class JobToken {
public:
    JobToken()
        : flag_(std::make_shared<std::atomic<bool>>(false)) {}

    void cancel() const { flag_->store(true); }
    [[nodiscard]] bool cancelled() const { return flag_->load(); }
    // The shared flag itself, for work that takes one (the load worker).
    [[nodiscard]] const std::shared_ptr<std::atomic<bool>>& flag() const { return flag_; }
    // The same flag as the agent client's cancel token, so a cancel reaches a request in flight.
    [[nodiscard]] replay::CancelToken replayToken() const { return replay::CancelToken(flag_); }
    // A core progress callback that hands each report to `report` and asks the engine to stop
    // once the job is cancelled.
    [[nodiscard]] ProgressFn progress(std::function<void(double, std::string_view)> report) const {
        return [flag = flag_, report = std::move(report)](double fraction, std::string_view what) {
            if (report) {
                report(fraction, what);
            }
            return !flag->load();
        };
    }

private:
    std::shared_ptr<std::atomic<bool>> flag_;
};

} // namespace ttrace::ui
