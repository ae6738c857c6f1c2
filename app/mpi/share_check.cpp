#include "share_check.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

namespace ttrace::mpi {
namespace {

// FNV-1a: stable across processes and builds, unlike std::hash.
std::uint64_t fnv1a(std::uint64_t h, const std::string& text) {
    for (const unsigned char c : text) {
        h = (h ^ c) * 1099511628211ULL;
    }
    return (h ^ 0xffU) * 1099511628211ULL; // a separator, so ["ab","c"] != ["a","bc"]
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

} // namespace

std::string openingFingerprint(const OpenedPair& pair, const std::vector<TensorId>& ids) {
    std::uint64_t h = 14695981039346656037ULL;
    for (const auto& id : ids) {
        h = fnv1a(h, id.path());
    }
    std::ostringstream out;
    out << "tensors " << ids.size() << " ids " << std::hex << h << std::dec << " early "
        << (pair.early ? 1 : 0) << "\n";
    for (const auto& d : pair.diagnostics) {
        out << d.code.name() << " " << d.location << "\n";
    }
    return out.str();
}

std::string compareFingerprints(const std::vector<std::string>& byRank) {
    if (byRank.empty()) {
        return {};
    }
    const auto root = lines(byRank.front());
    for (std::size_t r = 1; r < byRank.size(); ++r) {
        const auto other = lines(byRank[r]);
        for (std::size_t i = 0; i < std::max(root.size(), other.size()); ++i) {
            const auto mine = i < other.size() ? other[i] : std::string("(nothing)");
            const auto theirs = i < root.size() ? root[i] : std::string("(nothing)");
            if (mine != theirs) {
                return "rank " + std::to_string(r) +
                       " opened the bundles differently from rank 0: '" + mine +
                       "' where rank 0 has '" + theirs +
                       "' (every process must see the same files)";
            }
        }
    }
    return {};
}

} // namespace ttrace::mpi
