#include "ttrace/diff_result.h"

namespace ttrace {

std::string_view statusName(Status status) {
    switch (status) {
    case Status::Clean: return "clean";
    case Status::Divergent: return "divergent";
    case Status::Missing: return "missing";
    case Status::Invalid: return "invalid";
    case Status::Unresolved: return "unresolved";
    }
    return "unknown";
}

int severity(Status status) {
    switch (status) {
    case Status::Clean: return 0;
    case Status::Divergent: return 1;
    case Status::Unresolved: return 2;
    case Status::Missing: return 3;
    case Status::Invalid: return 4;
    }
    return 0;
}

bool isFlagged(Status status) {
    return status != Status::Clean;
}

std::string InvalidReason::toString() const {
    std::string out;
    auto add = [&out](const std::string& part) {
        if (!part.empty()) {
            out += (out.empty() ? "" : "; ") + part;
        }
    };
    // Equal shapes say nothing about why: the cause is in the findings (a hole, a rank file).
    if ((!referenceShape.empty() || !candidateShape.empty()) && referenceShape != candidateShape) {
        add("reference shape " + (referenceShape.empty() ? "?" : referenceShape) +
            " vs candidate shape " + (candidateShape.empty() ? "?" : candidateShape));
    }
    if (!candidateLayout.empty()) {
        add("candidate layout tried: " + candidateLayout);
    }
    if (!layoutNote.empty()) {
        add("capture inferred: " + layoutNote);
    }
    if (!annotateHint.empty()) {
        add("fix: " + annotateHint);
    }
    return out;
}

std::string PlacementResolution::toString() const {
    if (!chosen.empty()) {
        return "placement " + chosen + " (inferred" +
               (chosen == hypothesis ? "" : "; capture's hypothesis was " + hypothesis) +
               "), the only one that rebuilds the reference";
    }
    std::string out = "placement unresolved: ";
    if (alternatives.empty()) {
        out += "no layout capture considered rebuilds the reference";
    } else {
        for (std::size_t i = 0; i < alternatives.size(); ++i) {
            out += (i ? " or " : "") + alternatives[i];
        }
        out += " could each rebuild the reference";
    }
    for (const auto& why : excluded) {
        out += "; not " + why;
    }
    return out;
}

std::string_view originName(Origin origin) {
    switch (origin) {
    case Origin::None: return "none";
    case Origin::Introduced: return "introduced";
    case Origin::Inherited: return "inherited";
    case Origin::Undetermined: return "undetermined";
    }
    return "unknown";
}

const ModuleResult* DiffResult::module(const std::string& name) const {
    for (const auto& m : modules) {
        if (m.name == name) {
            return &m;
        }
    }
    return nullptr;
}

std::string earlierUncomparedText(const DiffResult& r) {
    if (!r.earlierUncompared || *r.earlierUncompared >= r.tensors.size()) {
        return {};
    }
    const auto& t = r.tensors[*r.earlierUncompared];
    std::string out =
        t.id.label() + " is " + std::string(statusName(t.status)) + ", " +
        (r.firstDivergence ? "earlier than the first divergence" : "and no tensor diverges");
    // The merge's own finding first: it names what is absent (a hole and the ranks present).
    std::string why;
    for (const auto& f : t.findings) {
        if (f.severity == Severity::Error && why.empty()) {
            why = f.message;
        }
    }
    if (const auto reason = t.invalid.toString(); !reason.empty()) {
        why += (why.empty() ? "" : "; ") + reason;
    }
    if (why.empty() && !t.findings.empty()) {
        why = t.findings.front().message;
    }
    if (why.empty() && t.status == Status::Missing) {
        why = "it is in one bundle only";
    }
    return why.empty() ? out : out + ": " + why;
}

} // namespace ttrace
