#pragma once
// What `ttrace localize` found: one verdict per replayed module, in the order judged, and the
// modules (or the optimizer phase and its parameters) that hold the bug.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/gradient_clipping.h"
#include "ttrace/replay/replay_error.h"
#include "ttrace/replay/replay_judge.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace::replay {

// The causal phases of one iteration, in time order.
enum class LocalizePhase { Forward, Backward, Reduction, Step };
std::string_view
localizePhaseName(LocalizePhase phase); // "forward", ..., "gradient reduction", "optimizer step"

struct DivergenceStart {
    std::int64_t iteration = 0;
    LocalizePhase phase = LocalizePhase::Forward;
    auto operator<=>(const DivergenceStart&) const = default;
};

// One module to replay: where its divergence shows first.
struct Suspect {
    std::string module; // "" with phase Step: every parameter
    std::int64_t iteration = 0;
    std::int64_t microBatch = 0;
    LocalizePhase phase = LocalizePhase::Forward;
    double diffRatio = 0.0; // its worst phase-output ratio in the diff (0 when named by hand)
};

enum class Verdict {
    Introduced,    // still diverges given the reference's inputs: the bug is here
    Inherited,     // agrees given the reference's inputs: the divergence came from upstream
    NotReplayable, // cannot be judged by replay (reason says why)
};
std::string_view verdictName(Verdict verdict); // "introduced", "inherited", "not replayable"

struct ModuleVerdict {
    Suspect suspect;
    Verdict verdict = Verdict::NotReplayable;
    std::string reason;        // for NotReplayable (and notes on the others)
    double ratio = 0.0;        // worst replay ratio (error / replay tolerance)
    double agentSeconds = 0.0; // the replay's wall time on the agent
    double seconds = 0.0;      // request to judgement, as seen by the client
    ReplayJudgement judgement; // per tensor
    int level = 0;             // 0 for a root of the walk, 1 for its children, ...
    // The agent's typed error when it refused the replay (NotReplayable by the agent's word).
    std::optional<ErrorCode> refusedWith;

    // The agent refused it for its layout (`layout_too_small`: a relaunch without a group the
    // replay needs): another agent could judge it, so it is no answer, not a module's trait.
    [[nodiscard]] bool layoutRefused() const { return refusedWith == ErrorCode::LayoutTooSmall; }
};

struct LocalizeResult {
    std::optional<DivergenceStart> start; // absent: nothing diverges
    std::vector<ModuleVerdict> verdicts;  // in the order judged
    std::vector<std::string> guilty;      // the deepest introduced modules
    // For bugs outside any module's forward/backward: "gradient reduction" or "optimizer step",
    // with the modules whose parameters are affected.
    std::optional<LocalizePhase> guiltyPhase;
    std::vector<std::string> guiltyParameters;
    // When every replayed module agrees given the reference's inputs but the phase's root
    // input diverges (divergence_entry.h): the consumed tensor through which the divergence
    // enters, e.g. the loss's output gradient that the schedule scales.
    std::optional<TensorId> entry;
    // The diff's clipped step of `start`'s iteration whose coefficients differ (the clip
    // record): where a divergence no replayed module introduces is named to enter.
    std::optional<ClipComparison> clipping;
    Diagnostics problems; // transport or agent failures (the walk stopped early)
    bool cancelled = false;
    double seconds = 0.0; // the whole walk

    // Some replay was refused because the agent's relaunch is smaller than the job.
    [[nodiscard]] bool layoutRefused() const {
        for (const auto& v : verdicts) {
            if (v.layoutRefused()) {
                return true;
            }
        }
        return false;
    }
    [[nodiscard]] bool introduced() const {
        return !guilty.empty() || guiltyPhase.has_value() || entry.has_value();
    }
    // Something diverges, nothing was found introduced, and some suspect could not be
    // replayed: the walk cannot say where the bug is (never reported as "nothing introduced").
    // Named modules (no divergence read) none of which could be replayed say nothing either.
    [[nodiscard]] bool undetermined() const {
        if (introduced()) {
            return false;
        }
        const auto refused = [](const ModuleVerdict& v) {
            return v.verdict == Verdict::NotReplayable;
        };
        if (!start) {
            return !verdicts.empty() && std::all_of(verdicts.begin(), verdicts.end(), refused);
        }
        return std::any_of(verdicts.begin(), verdicts.end(), refused);
    }
    // Something diverges, every suspect was replayed and agrees given the reference's inputs,
    // and no phase or entry holds it: the divergence enters where no replayed module runs (the
    // gradient reduction, the gradient clipping, the optimizer step). A divergence, never
    // "nothing introduced".
    [[nodiscard]] bool enteredUnreplayed() const {
        return start && !introduced() && !undetermined() && problems.empty() && !cancelled;
    }
};

} // namespace ttrace::replay
