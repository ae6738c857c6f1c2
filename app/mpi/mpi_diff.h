#pragma once
// `ttrace-mpi diff`: the diff of `ttrace diff`, its per-tensor comparisons split between the
// processes of an MPI job; rank 0 finishes the analysis and writes what `ttrace diff` writes.
#include "diff_args.h"
#include "mpi_world.h"

namespace ttrace::mpi {

// The run's exit code, the same on every process (0 clean, 1 divergent, 2 invalid or failed).
int runMpiDiff(const MpiWorld& world, const cli::DiffArgs& args);

} // namespace ttrace::mpi
