// ttrace-index: indexes one rank file and prints its facts (core/src/io/index_wire.h) on
// stdout. The tools run it as a child process for every rank file they open, so that libhdf5,
// which can crash or loop on corrupt metadata, never parses an untrusted file in their own
// process. Not meant to be run by hand, but harmless: it only reads the file.
#include "io/h5_handle.h"
#include "io/index_wire.h"
#include "io/rank_extract.h"

#include <cstdio>
#include <cstring>
#include <mutex>

int main(int argc, char** argv) {
    if (argc != 2 || std::strcmp(argv[1], "--help") == 0) {
        std::fprintf(stderr, "usage: ttrace-index RANK_FILE.h5\n"
                             "Prints the rank file's index facts (a binary format read by "
                             "ttrace and ttrace-explorer).\n");
        return 64;
    }
    std::string out;
    {
        const std::lock_guard lock(ttrace::h5::apiMutex());
        out = ttrace::encodeRankFacts(ttrace::extractRankFacts(argv[1]));
    }
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
        return 74;
    }
    return 0;
}
