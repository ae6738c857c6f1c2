#include "compare/carried_state.h"

#include "ttrace/compare/verdict.h"

#include <cmath>
#include <map>
#include <optional>
#include <tuple>

namespace ttrace {
namespace {

// Relative error of each compared parameter, by (iteration, module, parameter name).
using ParameterErrors = std::map<std::tuple<std::int64_t, std::string, std::string>, double>;

ParameterErrors parameterErrors(const DiffResult& result) {
    ParameterErrors out;
    for (const auto& t : result.tensors) {
        const bool compared = t.status == Status::Clean || t.status == Status::Divergent;
        if (t.id.kind == TensorKind::Parameter && compared &&
            t.structure == StructuralChange::None) {
            out[{t.id.iteration, t.id.module, t.id.index}] = t.metrics.relError;
        }
    }
    return out;
}

// The summed parameter errors on `id`'s path; nothing when one of them was not compared.
std::optional<double> carriedError(const TensorId& id, const ReductionPaths& paths,
                                   const ParameterErrors& errors) {
    double sum = 0.0;
    for (const auto& leaf : paths.parameterLeaves(id)) {
        double worst = 0.0;
        for (const auto& name : paths.parametersOf(leaf)) {
            const auto it = errors.find({id.iteration, leaf, name});
            if (it == errors.end() || !std::isfinite(it->second)) {
                return std::nullopt;
            }
            worst = std::max(worst, it->second);
        }
        sum += worst;
    }
    return sum;
}

} // namespace

void judgeCarriedState(DiffResult& result, const ReductionPaths& paths) {
    const auto errors = parameterErrors(result);
    for (auto& t : result.tensors) {
        if (t.tolerance.provisional != Provisional::CarriedState ||
            t.structure != StructuralChange::None) {
            continue;
        }
        const auto carried = carriedError(t.id, paths, errors);
        if (!carried) {
            continue;
        }
        // The ratio scales with the tolerance: a replica's own ratio (replicas that disagree)
        // is kept in it as the comparison computed it.
        const double before = t.tolerance.value;
        t.tolerance.carriedParameterError = *carried;
        t.tolerance.value += *carried;
        t.ratio = t.ratio * before / t.tolerance.value;
        if (t.ratio > 1.0) {
            t.tolerance.provisional = Provisional::None; // its own state cannot explain it
        }
        t.status = tensorVerdict(t.ratio, t.tolerance);
    }
}

} // namespace ttrace
