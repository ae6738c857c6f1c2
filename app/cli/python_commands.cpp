// `ttrace serve` (relaunch a candidate's training script from its bundles and serve localize
// replays, docs/localize.md) and `ttrace capture` (run an unchanged training script as a
// capture, docs/integrations.md). Both run the job's own Python code, so these commands only
// hand over to the capture package (`python -m ttrace <command>`): one implementation,
// whichever front end starts it.
#include "commands.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

namespace ttrace::cli {

namespace {

int handOverToPython(std::string_view command, std::span<const std::string_view> args) {
    // The interpreter whose environment holds ttrace, torch and the training code.
    const char* fromEnv = std::getenv("TTRACE_PYTHON");
    const std::string python = (fromEnv != nullptr && *fromEnv != '\0') ? fromEnv : "python3";
    std::vector<std::string> words{python, "-m", "ttrace", std::string(command)};
    for (const auto arg : args) {
        words.emplace_back(arg);
    }
    std::vector<char*> argv;
    argv.reserve(words.size() + 1);
    for (auto& word : words) {
        argv.push_back(word.data());
    }
    argv.push_back(nullptr);
    std::cout.flush();
    ::execvp(python.c_str(), argv.data());
    std::cerr << "ttrace " << command << ": cannot run " << python << ": " << std::strerror(errno)
              << " (set TTRACE_PYTHON to the interpreter that has the ttrace package)\n";
    return kExitBadInput;
}

} // namespace

int runServe(std::span<const std::string_view> args) {
    return handOverToPython("serve", args);
}

int runCapture(std::span<const std::string_view> args) {
    return handOverToPython("capture", args);
}

} // namespace ttrace::cli
