#pragma once
// One diff of two bundle directories as every front end runs it: the manifests (read once),
// a provisional result from the summary cache by the pair's file stamps, its check against the
// bundles' bytes, then the final result (verified from the cache, or compared afresh). The
// explorer's loader, `ttrace diff` and `diffBundleDirs` are adapters over this one use case,
// so the cache-first policy and the order of what a front end is told live here alone.
#include "ttrace/compare/diff_engine.h"
#include "ttrace/io/manifest.h"

#include <filesystem>
#include <memory>
#include <string_view>

namespace ttrace {

// What a diff session reports, in this order:
//   manifestsRead                 once, before any rank file is read;
//   provisionalResult             (only if wantsProvisional) a cached result the pair's file
//                                 stamps point at, unverified; provisionalStale follows when
//                                 the bytes are not those it was computed from;
//   bundlesOpened                 the pair's manifests and the problems found (the errors a
//                                 front end shows); a null manifest means that bundle cannot
//                                 be opened at all, and no tensor is compared;
//   tensorCompared                per tensor (also for a result answered from the cache);
//   finalResult or cancelled      exactly one of them, last.
// progress comes throughout; returning false cancels the session.
class DiffSessionListener {
public:
    virtual ~DiffSessionListener() = default;

    // A window can show a cached result at once; a printer waits for the final one anyway.
    [[nodiscard]] virtual bool wantsProvisional() const { return false; }
    virtual void manifestsRead(const Manifest* /*reference*/, const Manifest* /*candidate*/) {}
    virtual bool progress(double /*fraction*/, std::string_view /*what*/) { return true; }
    virtual void provisionalResult(const std::shared_ptr<const DiffResult>& /*result*/) {}
    virtual void provisionalStale() {}
    virtual void bundlesOpened(const Manifest* /*reference*/, const Manifest* /*candidate*/,
                               const Diagnostics& /*problems*/) {}
    // From the engine's worker threads, one call at a time.
    virtual void tensorCompared(const TensorResult& /*result*/) {}
    // The same object as the provisional result when the check confirmed it. Also given for a
    // pair that could not be compared (a refused pair, a bundle that cannot be opened): the
    // result then holds only the diagnostics.
    virtual void finalResult(const std::shared_ptr<const DiffResult>& /*result*/) {}
    virtual void cancelled() {}
};

// Runs the session on the caller's thread; the result is the one given to finalResult (or,
// when cancelled, what was compared until then). Never throws on bad input.
std::shared_ptr<DiffResult> runDiffSession(const std::filesystem::path& reference,
                                           const std::filesystem::path& candidate,
                                           const DiffOptions& options,
                                           DiffSessionListener& listener);

} // namespace ttrace
