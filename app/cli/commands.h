#pragma once
// Subcommands of the headless `ttrace` CLI. Each returns the process exit code:
// 0 success/clean, 1 divergence found, 2 bad input or usage.
#include "ttrace/io/exit_code.h"

#include <span>
#include <string_view>

namespace ttrace::cli {

inline constexpr int kExitOk = exitStatus(ExitCode::Ok);
inline constexpr int kExitDivergent = exitStatus(ExitCode::Divergent);
inline constexpr int kExitBadInput = exitStatus(ExitCode::BadInput);

int runValidate(std::span<const std::string_view> args);
int runDiff(std::span<const std::string_view> args);
int runLocalize(std::span<const std::string_view> args);
int runServe(std::span<const std::string_view> args);
int runCapture(std::span<const std::string_view> args);

} // namespace ttrace::cli
