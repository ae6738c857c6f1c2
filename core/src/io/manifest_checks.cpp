#include "io/manifest_checks.h"

#include <map>
#include <tuple>

namespace ttrace {
namespace {

int sizeOf(const Manifest& m, const char* name) {
    const auto it = m.parallel.find(name);
    return it == m.parallel.end() ? 1 : it->second;
}

void checkDepths(const Manifest& m, const std::string& where, Diagnostics& out) {
    for (const auto& mod : m.modules) {
        if (mod.depth < 0 || mod.depth > kMaxModuleDepth) {
            // The forward tolerance grows with depth: trusting 100000 would hide every bug.
            out.push_back(makeError(DiagnosticCode::ImplausibleDepth, where,
                                    "module '" + mod.name + "' claims depth " +
                                        std::to_string(mod.depth) + "; depths lie in [0, " +
                                        std::to_string(kMaxModuleDepth) + "]"));
        }
    }
}

bool checkParallelProduct(const Manifest& m, const std::string& where, Diagnostics& out) {
    if (m.parallel.empty()) {
        return true;
    }
    std::int64_t product = 1;
    for (const char* name : {"tp", "pp", "dp", "cp"}) {
        product *= sizeOf(m, name); // each <= 2^20, at most 2^80: stop once it is too large
        if (product > kMaxWorldSize) {
            break;
        }
    }
    if (product != m.worldSize) {
        out.push_back(makeError(DiagnosticCode::ParallelMismatch, where,
                                "tp*pp*dp*cp = " + std::to_string(product) +
                                    " does not equal world_size " + std::to_string(m.worldSize)));
        return false;
    }
    return true;
}

void checkCoords(const Manifest& m, const std::string& where, Diagnostics& out) {
    std::map<std::tuple<int, int, int, int>, int> owner;
    for (const auto& e : m.ranks) {
        const auto& c = e.coords;
        const std::pair<const char*, int> coords[] = {
            {"tp", c.tp}, {"pp", c.pp}, {"dp", c.dp}, {"cp", c.cp}, {"ep", c.ep}};
        for (const auto& [name, value] : coords) {
            if (value >= sizeOf(m, name)) {
                out.push_back(makeError(DiagnosticCode::CoordsMismatch, where,
                                        "rank " + std::to_string(e.rank) + " has " + name +
                                            " coordinate " + std::to_string(value) + ", but the " +
                                            name + " size is " + std::to_string(sizeOf(m, name))));
                return;
            }
        }
        const auto [it, fresh] = owner.emplace(std::tuple(c.tp, c.pp, c.dp, c.cp), e.rank);
        if (!fresh) {
            out.push_back(makeError(DiagnosticCode::CoordsMismatch, where,
                                    "rank " + std::to_string(e.rank) + " and rank " +
                                        std::to_string(it->second) +
                                        " have the same coordinates (" + c.toString() + ")"));
            return;
        }
    }
}

} // namespace

bool checkWorldSize(const Manifest& m, const std::string& where, Diagnostics& out) {
    if (m.worldSize >= 1 && m.worldSize <= kMaxWorldSize) {
        return true;
    }
    out.push_back(makeError(DiagnosticCode::ImplausibleWorldSize, where,
                            "world_size " + std::to_string(m.worldSize) + " is outside [1, " +
                                std::to_string(kMaxWorldSize) +
                                "]; the manifest is damaged or not a capture's"));
    return false;
}

void checkManifestPlausible(const Manifest& m, const std::string& where, Diagnostics& out) {
    checkDepths(m, where, out);
    if (checkParallelProduct(m, where, out)) {
        checkCoords(m, where, out);
    }
}

} // namespace ttrace
