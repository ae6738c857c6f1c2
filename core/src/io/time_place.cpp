#include "ttrace/io/time_place.h"

namespace ttrace {

TimePlace timePlaceOf(const TensorId& id) {
    if (id.kind == TensorKind::Parameter && id.iteration > 0) {
        return {id.iteration - 1, Phase::OptimizerStep};
    }
    return {id.iteration, phaseOf(id.kind)};
}

} // namespace ttrace
