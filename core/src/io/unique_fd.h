#pragma once
// An owned POSIX file descriptor, closed on every return path: what every raw open in core/io
// (regular files, rank-file reads, CRC pieces, the indexer's pipe) holds. Private to core.
#include <unistd.h>

namespace ttrace {

class UniqueFd {
public:
    explicit UniqueFd(int fd = -1)
        : fd_(fd) {}
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }
    void reset() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    [[nodiscard]] int get() const { return fd_; }

private:
    int fd_;
};

} // namespace ttrace
