#include "io/child_process.h"

#include "io/unique_fd.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace ttrace {
namespace {

using Clock = std::chrono::steady_clock;

int msLeft(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

// Spawns the child with stdout on `writeEnd`; returns its pid or -1 with `error` set.
pid_t spawn(const std::filesystem::path& program, const std::vector<std::string>& args,
            int writeEnd, std::string& error) {
    std::vector<std::string> argvStore{program.string()};
    argvStore.insert(argvStore.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argvStore) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, writeEnd, 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        error = "cannot start " + program.string() + ": " + std::strerror(rc);
        return -1;
    }
    return pid;
}

// Reads stdout until EOF, the limit or the deadline. Returns the outcome so far (Exited
// meaning "reached EOF in time").
ChildResult::Outcome drain(int fd, std::size_t maxOutput, Clock::time_point deadline,
                           std::string& output) {
    char buf[65536];
    while (true) {
        const int wait = msLeft(deadline);
        if (wait == 0) {
            return ChildResult::Outcome::TimedOut;
        }
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, wait);
        if (ready < 0 && errno != EINTR) {
            return ChildResult::Outcome::Exited; // treat as EOF; the exit status decides
        }
        if (ready <= 0) {
            continue;
        }
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            return ChildResult::Outcome::Exited;
        }
        if (output.size() + static_cast<std::size_t>(n) > maxOutput) {
            return ChildResult::Outcome::TooMuchOutput;
        }
        output.append(buf, static_cast<std::size_t>(n));
    }
}

// Waits for the child to end by `deadline`; kills it otherwise. Returns false on timeout.
bool reap(pid_t pid, Clock::time_point deadline, int& status) {
    while (true) {
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) {
            return true;
        }
        if (Clock::now() >= deadline) {
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

} // namespace

ChildResult runChild(const std::filesystem::path& program, const std::vector<std::string>& args,
                     std::size_t maxOutput, std::chrono::milliseconds timeout) {
    ChildResult result;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        result.error = std::string("cannot create a pipe: ") + std::strerror(errno);
        return result;
    }
    UniqueFd readEnd(fds[0]);
    UniqueFd writeEnd(fds[1]);
    const pid_t pid = spawn(program, args, writeEnd.get(), result.error);
    writeEnd.reset(); // the child holds its own copy; EOF comes when it exits
    if (pid < 0) {
        return result;
    }
    const auto deadline = Clock::now() + timeout;
    result.outcome = drain(readEnd.get(), maxOutput, deadline, result.output);
    if (result.outcome != ChildResult::Outcome::Exited) {
        ::kill(pid, SIGKILL);
    }
    int status = 0;
    if (!reap(pid, deadline, status)) {
        result.outcome = ChildResult::Outcome::TimedOut;
    }
    if (result.outcome == ChildResult::Outcome::Exited) {
        if (WIFSIGNALED(status)) {
            result.outcome = ChildResult::Outcome::Signalled;
            result.status = WTERMSIG(status);
        } else {
            result.status = WEXITSTATUS(status);
        }
    }
    return result;
}

} // namespace ttrace
