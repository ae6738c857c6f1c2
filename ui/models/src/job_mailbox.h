#pragma once
// Where a job's posts go: the runner while it lives, nowhere after. Shared by the runner and
// every copy of its jobs' contexts, so a post from a thread that outlives the runner (the agent
// client's) is dropped instead of reaching a destroyed object.
#include <mutex>

namespace ttrace::ui {

class JobRunner;

struct JobMailbox {
    std::mutex mutex;
    JobRunner* runner = nullptr; // cleared (under the mutex) when the runner is destroyed
};

} // namespace ttrace::ui
