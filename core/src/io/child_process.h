#pragma once
// Runs a helper program with a deadline and a bounded stdout: what the tools use to let a
// separate process do work that may crash or hang on hostile input (libhdf5 on a corrupt rank
// file). Nothing the child does can take the parent down or keep it waiting past the deadline.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace ttrace {

struct ChildResult {
    enum class Outcome { Exited, Signalled, TimedOut, TooMuchOutput, SpawnFailed };
    Outcome outcome = Outcome::SpawnFailed;
    int status = 0;     // exit code (Exited) or signal number (Signalled)
    std::string output; // stdout, at most the limit given
    std::string error;  // why it could not be started (SpawnFailed)
};

// Runs `program args...` with stdin and stderr on /dev/null, collecting at most `maxOutput`
// bytes of stdout. A child still running at `timeout`, or writing more, is killed (SIGKILL).
ChildResult runChild(const std::filesystem::path& program, const std::vector<std::string>& args,
                     std::size_t maxOutput, std::chrono::milliseconds timeout);

} // namespace ttrace
