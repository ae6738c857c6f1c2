#include "terminal_progress.h"

#include "ttrace/io/dtype.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace ttrace::cli {
namespace {

// Redraws more often than this only flicker and cost the workers the lock.
constexpr auto kRedrawEvery = std::chrono::milliseconds(200);

std::string humanBytes(double bytes) {
    const char* units[] = {"B", "KB", "MB", "GB", "TB"};
    int unit = 0;
    while (bytes >= 1000.0 && unit < 4) {
        bytes /= 1000.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
    return text;
}

std::string humanSeconds(double seconds) {
    const auto whole = static_cast<long>(seconds + 0.5);
    char text[32];
    if (whole < 60) {
        std::snprintf(text, sizeof text, "%ld s", whole);
    } else {
        std::snprintf(text, sizeof text, "%ld min %02ld s", whole / 60, whole % 60);
    }
    return text;
}

} // namespace

bool stderrIsTerminal() {
    return ::isatty(STDERR_FILENO) == 1;
}

TerminalProgress::TerminalProgress(std::ostream& out, bool enabled)
    : out_(out)
    , enabled_(enabled) {}

TerminalProgress::~TerminalProgress() {
    finish();
}

ProgressFn TerminalProgress::progressFn() {
    if (!enabled_) {
        return {};
    }
    return [this](double fraction, std::string_view what) {
        draw(fraction, what);
        return true; // the terminal never cancels: Ctrl-C ends the process
    };
}

TensorResultFn TerminalProgress::tensorFn() {
    if (!enabled_) {
        return {};
    }
    return [this](const TensorResult& t) {
        count(elementCount(t.shape) * static_cast<std::int64_t>(dtypeSize(t.dtype)));
    };
}

CheckedTensorFn TerminalProgress::checkedFn() {
    if (!enabled_) {
        return {};
    }
    return [this](const TensorId&, std::int64_t bytes) { count(bytes); };
}

void TerminalProgress::count(std::int64_t bytes) {
    const std::lock_guard lock(mutex_);
    ++tensors_;
    bytes_ += bytes;
}

std::string TerminalProgress::line(double fraction, std::string_view what) const {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    std::string text = "[ttrace] " + std::to_string(static_cast<int>(fraction * 100.0)) + "% ";
    text += std::string(what.substr(0, 40));
    if (tensors_ > 0) {
        text += " · " + std::to_string(tensors_) + " tensors, " +
                humanBytes(static_cast<double>(bytes_));
        if (elapsed > 0.0) {
            text += " · " + humanBytes(static_cast<double>(bytes_) / elapsed) + "/s";
        }
    }
    if (fraction > 0.05 && fraction < 1.0) {
        text += " · " + humanSeconds(elapsed * (1.0 - fraction) / fraction) + " left";
    }
    return text;
}

void TerminalProgress::draw(double fraction, std::string_view what) {
    const std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    if (now - lastDraw_ < kRedrawEvery && fraction < 1.0) {
        return;
    }
    lastDraw_ = now;
    const auto text = line(std::clamp(fraction, 0.0, 1.0), what);
    // Pads over the previous, possibly longer, line instead of relying on terminal escapes.
    out_ << '\r' << text
         << std::string(drawnWidth_ > text.size() ? drawnWidth_ - text.size() : 0, ' ')
         << std::flush;
    drawnWidth_ = text.size();
}

void TerminalProgress::finish() {
    const std::lock_guard lock(mutex_);
    if (drawnWidth_ > 0) {
        out_ << '\r' << std::string(drawnWidth_, ' ') << '\r' << std::flush;
        drawnWidth_ = 0;
    }
}

} // namespace ttrace::cli
