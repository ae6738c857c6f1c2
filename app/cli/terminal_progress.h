#pragma once
// `ttrace diff` and `ttrace validate` progress on a terminal: one line on stderr, redrawn at most
// a few times a second, that says the stage (rank files indexed, then tensors), tensors and bytes
// compared or checked, the rate and the time left. Silent when stderr is not a terminal (logs and
// CI stay clean) or with --quiet.
#include "ttrace/compare/diff_engine.h"
#include "ttrace/merge/validator.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>

namespace ttrace::cli {

class TerminalProgress {
public:
    // Shows progress on `out` only when `enabled` (a terminal and not --quiet).
    TerminalProgress(std::ostream& out, bool enabled);
    ~TerminalProgress();
    TerminalProgress(const TerminalProgress&) = delete;
    TerminalProgress& operator=(const TerminalProgress&) = delete;

    // The engine's callbacks; both are called from worker threads.
    [[nodiscard]] ProgressFn progressFn();
    [[nodiscard]] TensorResultFn tensorFn();
    // validate's callback: a tensor's coverage checked, with its shards' bytes.
    [[nodiscard]] CheckedTensorFn checkedFn();

    // Clears the line; called before the summary is printed.
    void finish();

private:
    using Clock = std::chrono::steady_clock;
    void draw(double fraction, std::string_view what);
    [[nodiscard]] std::string line(double fraction, std::string_view what) const;
    void count(std::int64_t bytes);

    std::ostream& out_;
    bool enabled_;
    std::mutex mutex_;
    Clock::time_point start_ = Clock::now();
    Clock::time_point lastDraw_{};
    std::int64_t tensors_ = 0;
    std::int64_t bytes_ = 0; // of the tensors compared (candidate, as merged) or checked
    std::size_t drawnWidth_ = 0;
};

// True when the stream's file descriptor (stderr) is a terminal.
bool stderrIsTerminal();

} // namespace ttrace::cli
