#pragma once
// The agent's token file: one line of 64 hex digits (docs/protocol.md, "Authentication").
#include "ttrace/replay/replay_error.h"

#include <filesystem>
#include <string>

namespace ttrace::replay {

// Reads and checks the token; the error names the file and what is wrong with it.
Result<std::string> readTokenFile(const std::filesystem::path& file);

} // namespace ttrace::replay
