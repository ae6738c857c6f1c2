// ttrace-mpi: the diff of `ttrace diff`, run across the processes of an MPI job where the
// bundles live (`mpirun -n N ttrace-mpi diff REF CAND [options]`).
#include "commands.h"
#include "diff_args.h"
#include "mpi_diff.h"
#include "mpi_world.h"

#include <exception>
#include <iostream>
#include <span>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
    const ttrace::mpi::MpiWorld world(argc, argv);
    const std::vector<std::string_view> args(argv + 1, argv + argc);
    const auto usage = ttrace::cli::diffUsage("mpirun -n N ttrace-mpi diff");
    if (args.empty() || args.front() != "diff") {
        if (world.root()) {
            std::cerr << "ttrace-mpi: expected the command 'diff'\n" << usage;
        }
        return ttrace::cli::kExitBadInput;
    }
    const std::span<const std::string_view> rest(args.data() + 1, args.size() - 1);
    if (ttrace::cli::wantsHelp(rest)) {
        if (world.root()) {
            std::cout << usage;
        }
        return ttrace::cli::kExitOk;
    }
    ttrace::cli::DiffArgs parsed;
    if (const auto error = ttrace::cli::parseDiffArgs(rest, parsed); !error.empty()) {
        if (world.root()) {
            std::cerr << "ttrace-mpi diff: " << error << "\n" << usage;
        }
        return ttrace::cli::kExitBadInput;
    }
    try {
        return ttrace::mpi::runMpiDiff(world, parsed);
    } catch (const std::exception& e) {
        // Outside the comparison (which reports its failures to rank 0): the other processes
        // may be waiting in a collective, so the whole job ends here, naming this process.
        std::cerr << "ttrace-mpi: rank " << world.rank() << " failed: " << e.what() << "\n";
        world.abort(ttrace::cli::kExitBadInput);
        return ttrace::cli::kExitBadInput;
    }
}
