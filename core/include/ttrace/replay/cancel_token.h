#pragma once
// Shared cancellation flag: the caller keeps a copy and cancels; the client's owner thread sees
// it at its next turn (within milliseconds) and completes the request with Cancelled.
#include <atomic>
#include <memory>
#include <utility>

namespace ttrace::replay {

class CancelToken {
public:
    CancelToken()
        : flag_(std::make_shared<std::atomic<bool>>(false)) {}
    // Shares a flag a front end already cancels through (its job runner's token).
    explicit CancelToken(std::shared_ptr<std::atomic<bool>> flag)
        : flag_(std::move(flag)) {}
    void cancel() const { flag_->store(true); }
    [[nodiscard]] bool cancelled() const { return flag_->load(); }

private:
    std::shared_ptr<std::atomic<bool>> flag_;
};

} // namespace ttrace::replay
