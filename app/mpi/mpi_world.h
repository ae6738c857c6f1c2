#pragma once
// The few collectives the MPI diff needs, over MPI_COMM_WORLD, with MPI kept out of every other
// file. Every process must call each collective in the same order.
#include <cstdint>
#include <string>
#include <vector>

namespace ttrace::mpi {

// Initializes MPI for the life of the object (RAII: MPI_Finalize on destruction).
class MpiWorld {
public:
    MpiWorld(int& argc, char**& argv);
    ~MpiWorld();
    MpiWorld(const MpiWorld&) = delete;
    MpiWorld& operator=(const MpiWorld&) = delete;

    [[nodiscard]] int rank() const { return rank_; }
    [[nodiscard]] int size() const { return size_; }
    [[nodiscard]] bool root() const { return rank_ == 0; }

    // Ends every process of the job with `code` (MPI_Abort).
    void abort(int code) const;
    // Rank 0's value, on every process.
    [[nodiscard]] int broadcast(int value) const;
    // Every process's bytes, in rank order, on rank 0 (empty elsewhere). MPI counts are int:
    // a share over 2 GiB arrives empty; every process throws std::length_error when all of
    // them together exceed 2 GiB.
    [[nodiscard]] std::vector<std::vector<std::uint8_t>>
    gatherToRoot(const std::vector<std::uint8_t>& mine) const;
    [[nodiscard]] std::vector<std::string> gatherToRoot(const std::string& mine) const;
    // Every process's text, in rank order, on every process.
    [[nodiscard]] std::vector<std::string> allGather(const std::string& mine) const;

private:
    int rank_ = 0;
    int size_ = 1;
};

} // namespace ttrace::mpi
