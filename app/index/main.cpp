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

namespace {

void printHelp() {
    std::printf("Usage: ttrace-index RANK_FILE.h5\n"
                "Index one rank file of a TTrace bundle for ttrace and ttrace-explorer.\n\n"
                "The tools run this program on every rank file they open, so that libhdf5,\n"
                "which can crash or loop on a corrupt file, never parses an untrusted file in\n"
                "their own process. It prints the file's root attributes and, per dataset, its\n"
                "type, shape, storage layout and attributes, in a binary format read by the\n"
                "tools. It only reads the file.\n\n"
                "Environment (read by the tools, not by this program):\n"
                "  TTRACE_INDEX_HELPER     run this program from another path\n"
                "  TTRACE_INDEX_TIMEOUT_S  seconds before a hung indexer is killed (120)\n\n"
                "  --help                  show this help\n"
                "  --version               show the version\n");
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--help") == 0) {
        printHelp();
        return 0;
    }
    if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
        std::printf("ttrace-index %s\n", TTRACE_VERSION);
        return 0;
    }
    if (argc != 2) {
        std::fprintf(stderr, "usage: ttrace-index RANK_FILE.h5 (see --help)\n");
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
