#include "mpi_world.h"

#include <mpi.h>

#include <limits>
#include <stdexcept>

namespace ttrace::mpi {

MpiWorld::MpiWorld(int& argc, char**& argv) {
    MPI_Init(&argc, &argv);
    // Errors return instead of aborting, so a failure is reported with its rank; the default
    // handler would end every process without a word on which one or why.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() {
    MPI_Finalize();
}

void MpiWorld::abort(int code) const {
    MPI_Abort(MPI_COMM_WORLD, code);
}

int MpiWorld::broadcast(int value) const {
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return value;
}

std::vector<std::vector<std::uint8_t>>
MpiWorld::gatherToRoot(const std::vector<std::uint8_t>& mine) const {
    // The caller keeps each share under 2 GiB (one process throwing here would leave the
    // others waiting); a larger one is cut to nothing, which rank 0 cannot decode: an error.
    int count = mine.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())
                    ? 0
                    : static_cast<int>(mine.size());
    std::vector<int> counts(root() ? static_cast<std::size_t>(size_) : 0);
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(counts.size());
    long long total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        offsets[r] = static_cast<int>(total);
        total += counts[r];
    }
    // Rank 0 alone knows the total: it tells every process, so all of them stop together
    // instead of some waiting in the gather below (results are a few KiB per tensor).
    if (broadcast(total > std::numeric_limits<int>::max() ? 1 : 0) != 0) {
        throw std::length_error("the gathered results exceed 2 GiB");
    }
    std::vector<std::uint8_t> all(static_cast<std::size_t>(total));
    MPI_Gatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE,
                0, MPI_COMM_WORLD);
    std::vector<std::vector<std::uint8_t>> out;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        const auto* first = all.data() + offsets[r];
        out.emplace_back(first, first + counts[r]);
    }
    return out;
}

std::vector<std::string> MpiWorld::gatherToRoot(const std::string& mine) const {
    const std::vector<std::uint8_t> bytes(mine.begin(), mine.end());
    std::vector<std::string> out;
    for (const auto& b : gatherToRoot(bytes)) {
        out.emplace_back(b.begin(), b.end());
    }
    return out;
}

std::vector<std::string> MpiWorld::allGather(const std::string& mine) const {
    // Small texts (a line per file): a share too large for an int count is sent empty.
    int count = mine.size() > static_cast<std::size_t>(std::numeric_limits<int>::max() / size_)
                    ? 0
                    : static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<std::size_t>(size_));
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::vector<int> offsets(counts.size());
    int total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        offsets[r] = total;
        total += counts[r];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), count, MPI_CHAR, all.data(), counts.data(), offsets.data(),
                   MPI_CHAR, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        out.push_back(
            all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(counts[r])));
    }
    return out;
}

} // namespace ttrace::mpi
