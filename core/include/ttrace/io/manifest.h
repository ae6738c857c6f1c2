#pragma once
// manifest.json of a bundle: run metadata and the list of rank files.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/gradient_clipping.h"
#include "ttrace/io/gradient_convention.h"
#include "ttrace/io/optimizer_config.h"
#include "ttrace/io/run_environment.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

inline constexpr int kFormatVersion = 2;
// Version 1 (no repeated calls or recompute records) reads unchanged: version 2 only adds
// module names of the form `<module>@call<k>` and `<module>@recompute`.
inline constexpr int kOldestFormatVersion = 1;
inline constexpr bool isReadableFormatVersion(std::int64_t version) {
    return version >= kOldestFormatVersion && version <= kFormatVersion;
}

// Bounds on what a manifest may claim. Anything beyond them is a corrupt or hostile file, and
// trusting it costs memory (a diagnostic per missing rank) or hides bugs (a depth of 100000
// makes the derived forward tolerance infinite).
inline constexpr int kMaxWorldSize = 1 << 20;
inline constexpr int kMaxModuleDepth = 256;
inline constexpr int kMaxMicroBatches = 1 << 20;
inline constexpr int kMaxParallelSize = kMaxWorldSize;
inline constexpr std::int64_t kMaxManifestBytes = std::int64_t{64} << 20;

struct RankCoords {
    int tp = 0, pp = 0, dp = 0, cp = 0, ep = 0, vpp = 0;
    [[nodiscard]] std::string toString() const;
    bool operator==(const RankCoords&) const = default;
};

struct ModuleInfo {
    std::string name;
    int order = 0;
    int depth = 0;
    std::string type;
    // The compiled block this module runs inside (torch.compile): its activations are not
    // captured, only the block's boundary. Empty when not compiled.
    std::string compiledIn;
};

struct RankEntry {
    int rank = 0;
    std::string file;
    RankCoords coords;
    std::int64_t tensors = -1; // -1: not recorded
    std::int64_t bytes = -1;
    std::int64_t fileSize = -1;         // size of the closed file; -1: not recorded
    std::optional<std::uint32_t> crc32; // CRC-32 of the whole closed file, if recorded
};

// Where a run started when it resumed from a checkpoint (docs/bundle-format.md, `start`).
struct RunStart {
    std::string kind;       // "torch-dcp"
    std::string checkpoint; // the path as given to the job
    std::int64_t step = 0;  // optimizer steps the checkpoint had taken
    std::string metadataSha256;

    bool operator==(const RunStart&) const = default;
};

struct Manifest {
    int formatVersion = kFormatVersion;
    std::string role;
    std::vector<std::string> variants;
    int worldSize = 1;
    std::map<std::string, int> parallel; // tp, pp, dp, cp, ep, vpp
    std::string precision;
    std::string model;
    std::vector<ModuleInfo> modules; // execution order
    // Pipeline stage containers (modules holding one stage's slice of the layers, e.g.
    // Megatron's `decoder` block), by name: what each stage's copy holds ("pp 0: layers 0-1;
    // pp 1: layers 2-3"). Their activations are not captured.
    std::map<std::string, std::string> stageSlices;
    std::vector<std::int64_t> iterations;
    int microBatches = 1;
    std::vector<RankEntry> ranks;
    std::string producer;
    // Built from the status records of a capture that never finished: no module table yet (a
    // diff takes module order and depths from the reference's manifest).
    bool unfinished = false;
    std::string created;
    // One id per capture (older bundles: empty): tells a copy of this capture from another
    // capture, where paths cannot (bundles move between hosts).
    std::string captureId;
    // The optimizer's hyper-parameters per step, when the capture could record them.
    std::optional<OptimizerConfig> optimizer;
    // Whether its state is sharded over data parallelism, where the job declares it.
    std::optional<OptimizerSharding> optimizerSharding;
    // How the job reduces gradients, when the capture recorded it (older bundles: not).
    std::optional<GradientConvention> gradientConvention;
    // The global gradient norm and clip coefficient of each clipped step (older bundles and
    // runs that do not clip: none).
    std::vector<ClipStep> clipSteps;
    // The checkpoint the run resumed from (the manifest's optional `start`); nothing for a
    // fresh start or an older bundle.
    std::optional<RunStart> start;
    // Versions, devices, kernel switches and per-module kernels (the manifest's optional
    // `environment`); nothing for an older bundle.
    std::optional<RunEnvironment> environment;

    [[nodiscard]] const ModuleInfo* findModule(const std::string& name) const;
};

// Parses `bundleDir/manifest.json`. On failure returns nothing and appends errors naming the file.
std::optional<Manifest> readManifest(const std::filesystem::path& bundleDir, Diagnostics& out);

} // namespace ttrace
