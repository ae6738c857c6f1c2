#include "ttrace/compare/diff_result.h"

#include "ttrace/io/name_table.h"

namespace ttrace {
namespace {

// The names in the diff JSON (docs/diff-json.md): one table each, both ways.
constexpr NameTable kStatusNames{Status::Drift, std::array<std::pair<Status, std::string_view>, 6>{{
                                                    {Status::Clean, "clean"},
                                                    {Status::Divergent, "divergent"},
                                                    {Status::Missing, "missing"},
                                                    {Status::Invalid, "invalid"},
                                                    {Status::Unresolved, "unresolved"},
                                                    {Status::Drift, "drift"},
                                                }}};

constexpr NameTable kOriginNames{Origin::Drift, std::array<std::pair<Origin, std::string_view>, 5>{{
                                                    {Origin::None, "none"},
                                                    {Origin::Introduced, "introduced"},
                                                    {Origin::Inherited, "inherited"},
                                                    {Origin::Undetermined, "undetermined"},
                                                    {Origin::Drift, "drift"},
                                                }}};

} // namespace

std::string_view statusName(Status status) {
    return kStatusNames.name(status);
}

std::optional<Status> parseStatus(std::string_view name) {
    return kStatusNames.parse(name);
}

int severity(Status status) {
    switch (status) {
    case Status::Clean: return 0;
    case Status::Drift: return 1;
    case Status::Divergent: return 2;
    case Status::Unresolved: return 3;
    case Status::Missing: return 4;
    case Status::Invalid: return 5;
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
    return kOriginNames.name(origin);
}

std::optional<Origin> parseOrigin(std::string_view name) {
    return kOriginNames.parse(name);
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
