#pragma once
// Decode buffers reused by every comparison on a thread, so the hot loops never allocate.
// Private to core. A buffer is held only inside one leaf task body that starts no parallel
// work of its own: nothing else can run on that thread (and take the same buffer) meanwhile.
#include <tbb/enumerable_thread_specific.h>

#include <cstddef>
#include <span>
#include <vector>

namespace ttrace {

class ScratchPool {
public:
    // The calling thread's buffer number `slot`, grown to at least `count` doubles.
    std::span<double> get(std::size_t slot, std::size_t count) {
        auto& mine = buffers_.local();
        if (mine.size() <= slot) {
            mine.resize(slot + 1);
        }
        if (mine[slot].size() < count) {
            mine[slot].resize(count);
        }
        return {mine[slot].data(), count};
    }

    // The one pool of the process.
    static ScratchPool& shared() {
        static ScratchPool pool;
        return pool;
    }

private:
    tbb::enumerable_thread_specific<std::vector<std::vector<double>>> buffers_;
};

} // namespace ttrace
