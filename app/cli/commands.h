#pragma once
// Subcommands of the headless `ttrace` CLI. Each returns the process exit code:
// 0 success/clean, 1 divergence found, 2 bad input or usage.
#include <span>
#include <string_view>

namespace ttrace::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDivergent = 1;
inline constexpr int kExitBadInput = 2;

int runValidate(std::span<const std::string_view> args);
int runDiff(std::span<const std::string_view> args);
int runLocalize(std::span<const std::string_view> args);
int runServe(std::span<const std::string_view> args);
int runCapture(std::span<const std::string_view> args);

} // namespace ttrace::cli
