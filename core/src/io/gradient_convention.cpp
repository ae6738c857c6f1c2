#include "ttrace/io/gradient_convention.h"

#include <cstdio>

namespace ttrace {
namespace {

std::string number(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

} // namespace

std::string GradientConvention::toString() const {
    return reduction + ", divide factor " + number(divideFactor) +
           (determined ? "" : ", undetermined") + " (" + source + ")";
}

std::string ConventionMismatch::toString() const {
    return "every capture-side gradient of the candidate (" + std::to_string(tensors) +
           " tensors: activation gradients, per-rank parameter gradients, the per-rank loss) is " +
           factorName +
           " the reference's, and everything after the reduction (main gradients, the step, the "
           "parameters) agrees: a gradient convention taken wrongly, not a bug in the training; "
           "judged after the factor. Candidate's recorded convention: " +
           declared;
}

} // namespace ttrace
