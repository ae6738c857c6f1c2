#pragma once
// Plausibility of a parsed manifest: sizes within sane bounds and a parallel layout that
// adds up. Each problem is a typed error naming the field and rank.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/manifest.h"

#include <string>

namespace ttrace {

// world_size in [1, kMaxWorldSize]; false (with an "implausible-world-size" error) otherwise.
bool checkWorldSize(const Manifest& m, const std::string& where, Diagnostics& out);

// Module depths ("implausible-depth"), tp*pp*dp*cp == world_size ("parallel-mismatch") and
// every rank's coordinates inside the parallel sizes and distinct ("coords-mismatch").
void checkManifestPlausible(const Manifest& m, const std::string& where, Diagnostics& out);

} // namespace ttrace
