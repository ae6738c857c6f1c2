#include "ttrace/session/diff_session.h"

#include "compare/diff_pair_steps.h"
#include "ttrace/compare/cache_fingerprint.h"
#include "ttrace/compare/diff_cache.h"
#include "ttrace/io/verdict_notes.h"

namespace ttrace {
namespace {

constexpr std::string_view kChecking =
    "cached comparison shown; checking it against the bundles' bytes";

const Manifest* orNull(const std::optional<Manifest>& manifest) {
    return manifest ? &*manifest : nullptr;
}

class DiffSession {
public:
    DiffSession(const std::filesystem::path& reference, const std::filesystem::path& candidate,
                const DiffOptions& options, DiffSessionListener& listener)
        : reference_(reference)
        , candidate_(candidate)
        , options_(options)
        , listener_(listener) {}

    std::shared_ptr<DiffResult> run();

private:
    enum class Seen { None, Verified, Stale, Cancelled };

    // Every progress report goes through here, so a cancel is noticed wherever it comes.
    bool progress(double fraction, std::string_view what) {
        if (!listener_.progress(fraction, what)) {
            cancelled_ = true;
        }
        return !cancelled_;
    }
    ProgressFn progressFn(double offset = 0.0, double width = 1.0) {
        return [this, offset, width](double f, std::string_view what) {
            return progress(offset + width * f, what);
        };
    }
    TensorResultFn tensorFn() {
        return [this](const TensorResult& t) { listener_.tensorCompared(t); };
    }
    void openedFromManifests(const Diagnostics& problems) {
        listener_.bundlesOpened(orNull(manifests_.reference), orNull(manifests_.candidate),
                                problems);
    }
    Seen checkSeen();
    std::shared_ptr<DiffResult> fromCache();
    std::shared_ptr<DiffResult> compare();
    std::shared_ptr<DiffResult> finish(std::shared_ptr<DiffResult> result);

    std::filesystem::path reference_, candidate_;
    DiffOptions options_;
    DiffSessionListener& listener_;
    PairManifests manifests_;
    std::shared_ptr<DiffResult> seen_;
    bool cancelled_ = false;
};

std::shared_ptr<DiffResult> DiffSession::run() {
    // The tree first, from the two manifests alone, before any rank file is read (the content
    // check and the open read every byte).
    manifests_ = readPairManifests(reference_, candidate_);
    listener_.manifestsRead(orNull(manifests_.reference), orNull(manifests_.candidate));
    // A pair the manifests refuse is neither shown from the cache, hashed nor opened.
    if (auto refused = manifestRefusal(manifests_, reference_, candidate_, options_)) {
        openedFromManifests(refused->diagnostics);
        return finish(std::make_shared<DiffResult>(std::move(*refused)));
    }
    if (options_.useCache) {
        if (auto cached = fromCache()) {
            return finish(std::move(cached));
        }
        if (cancelled_) {
            return finish(std::make_shared<DiffResult>(
                earlyResult(reference_, candidate_, {}, /*cancelled=*/true)));
        }
    }
    return finish(compare());
}

// Shows the entry the file stamps point at as provisional, then checks it by content: the
// stamps never vouch for an entry, the CRC of every byte does (remembered for this process, so
// a comparison that follows reads nothing again).
DiffSession::Seen DiffSession::checkSeen() {
    const auto fingerprint = diffCacheFingerprint(reference_, candidate_, options_);
    auto seen = loadSeenDiff(fingerprint);
    if (!seen) {
        return Seen::None;
    }
    seen_ = std::make_shared<DiffResult>(std::move(seen->result));
    listener_.provisionalResult(seen_);
    progress(0.0, kChecking);
    const auto key =
        diffCacheKey(reference_, candidate_, options_,
                     [this](double f, std::string_view) { return progress(f, kChecking); });
    if (cancelled_) {
        return Seen::Cancelled;
    }
    if (key.empty() || key != seen->contentKey) {
        seen_.reset();
        listener_.provisionalStale();
        return Seen::Stale;
    }
    rememberFingerprint(fingerprint, key); // marks the pointer as used
    return Seen::Verified;
}

// The cache is checked before opening (indexing every rank file costs more than reading the
// bytes for the key), but only against the content, never against names and times. Nothing
// on a miss or a cancel.
std::shared_ptr<DiffResult> DiffSession::fromCache() {
    const bool bothRead = manifests_.reference && manifests_.candidate;
    if (bothRead && listener_.wantsProvisional()) {
        const auto seen = checkSeen();
        if (seen == Seen::Cancelled) {
            return nullptr;
        }
        if (seen == Seen::Verified) {
            openedFromManifests(openingProblems(seen_->diagnostics));
            return seen_;
        }
    }
    auto cached = contentCached(reference_, candidate_, options_, progressFn());
    if (!cached) {
        return nullptr;
    }
    // A hit still tells the front end what it is looking at: the manifests read above, and
    // what opening met (the entry's verdict notes, drift among them, belong to the result).
    openedFromManifests(openingProblems(cached->diagnostics));
    replayCached(*cached, progressFn(), tensorFn());
    return std::make_shared<DiffResult>(std::move(*cached));
}

// Opens both bundles (the first 20% of the progress), reports them, then diffs. Bundles with
// errors are still diffed (tensors that cannot be merged come out invalid); only a bundle
// that cannot be opened at all, or a pair the opened bundles refuse, ends it early.
std::shared_ptr<DiffResult> DiffSession::compare() {
    DiffCallbacks callbacks{
        progressFn(), tensorFn(),
        [this](const Manifest* ref, const Manifest* cand, const Diagnostics& problems) {
            listener_.bundlesOpened(ref, cand, problems);
        }};
    auto pair = openCheckedPair(reference_, candidate_, options_, callbacks);
    if (pair.early) {
        return std::make_shared<DiffResult>(std::move(*pair.early));
    }
    auto diff =
        std::make_shared<DiffResult>(diffBundles(*pair.reference.bundle, *pair.candidate.bundle,
                                                 pair.options, progressFn(0.2, 0.8), tensorFn()));
    addOpeningDiagnostics(pair.diagnostics, *diff);
    return diff;
}

std::shared_ptr<DiffResult> DiffSession::finish(std::shared_ptr<DiffResult> result) {
    if (cancelled_ || result->cancelled) {
        listener_.cancelled();
    } else {
        listener_.finalResult(result);
    }
    return result;
}

} // namespace

std::shared_ptr<DiffResult> runDiffSession(const std::filesystem::path& reference,
                                           const std::filesystem::path& candidate,
                                           const DiffOptions& options,
                                           DiffSessionListener& listener) {
    return DiffSession(reference, candidate, options, listener).run();
}

} // namespace ttrace

namespace ttrace {
namespace {

// diffBundleDirs's callbacks as a session listener.
class CallbacksListener final : public DiffSessionListener {
public:
    explicit CallbacksListener(const DiffCallbacks& callbacks)
        : cb_(callbacks) {}
    bool progress(double fraction, std::string_view what) override {
        return !cb_.progress || cb_.progress(fraction, what);
    }
    void bundlesOpened(const Manifest* reference, const Manifest* candidate,
                       const Diagnostics& problems) override {
        if (cb_.onOpened) {
            cb_.onOpened(reference, candidate, problems);
        }
    }
    void tensorCompared(const TensorResult& result) override {
        if (cb_.onTensor) {
            cb_.onTensor(result);
        }
    }

private:
    const DiffCallbacks& cb_;
};

} // namespace

DiffResult diffBundleDirs(const std::filesystem::path& reference,
                          const std::filesystem::path& candidate, const DiffOptions& options,
                          const DiffCallbacks& callbacks) {
    CallbacksListener listener(callbacks);
    // The listener keeps no reference to the result: it is moved out, not copied.
    return std::move(*runDiffSession(reference, candidate, options, listener));
}

DiffResult diffBundleDirs(const std::filesystem::path& reference,
                          const std::filesystem::path& candidate, const DiffOptions& options,
                          const ProgressFn& progress, const TensorResultFn& onTensor) {
    return diffBundleDirs(reference, candidate, options, DiffCallbacks{progress, onTensor, {}});
}

} // namespace ttrace
