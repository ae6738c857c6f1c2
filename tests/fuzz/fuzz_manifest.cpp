// libFuzzer target: arbitrary bytes as a bundle's manifest.json, read by readManifest.
// Anything may come back as diagnostics; nothing may crash, leak, hang or allocate without
// bound. Parsed manifests are checked for the invariants the rest of the engine relies on.
#include "scratch_dir.h"
#include "ttrace/io/manifest.h"

#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

namespace {

// The reader's promises to its callers (openBundle and the front ends index by rank).
void checkInvariants(const ttrace::Manifest& m) {
    std::set<int> ranks;
    for (const auto& entry : m.ranks) {
        if (entry.rank < 0 || entry.rank >= m.worldSize || !ranks.insert(entry.rank).second) {
            __builtin_trap();
        }
        if (entry.file.find('/') != std::string::npos) {
            __builtin_trap();
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const ttrace::fuzz::ScratchDir scratch;
    scratch.write("manifest.json", std::string_view(reinterpret_cast<const char*>(data), size));
    ttrace::Diagnostics diagnostics;
    if (const auto manifest = ttrace::readManifest(scratch.path(), diagnostics)) {
        checkInvariants(*manifest);
    } else if (!ttrace::hasErrors(diagnostics)) {
        __builtin_trap(); // a rejected manifest must say why
    }
    return 0;
}
