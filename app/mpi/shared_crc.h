#pragma once
// The rank files' CRC-32s split between the processes: each process reads a share of both
// bundles' files once, and every process adopts every result, so the open's integrity check
// and the summary cache's key read no file a second time anywhere in the job.
#include "mpi_world.h"

#include <cstddef>
#include <filesystem>

namespace ttrace::mpi {

// Returns how many files this process adopted from others (the rest it reads itself if asked).
std::size_t shareChecksums(const MpiWorld& world, const std::filesystem::path& reference,
                           const std::filesystem::path& candidate);

} // namespace ttrace::mpi
