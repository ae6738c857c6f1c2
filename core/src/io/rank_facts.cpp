#include "io/rank_facts.h"

#include <cstring>

namespace ttrace {

const AttrFact* findAttr(const std::vector<AttrFact>& attrs, const char* name) {
    for (const auto& a : attrs) {
        if (a.name == name) {
            return &a;
        }
    }
    return nullptr;
}

std::optional<std::string> factText(const std::vector<AttrFact>& attrs, const char* name) {
    const auto* a = findAttr(attrs, name);
    return a ? a->text : std::nullopt;
}

std::optional<IntArrayFact> factInts(const std::vector<AttrFact>& attrs, const char* name) {
    const auto* a = findAttr(attrs, name);
    return a ? a->ints : std::nullopt;
}

std::optional<std::int64_t> factInt(const std::vector<AttrFact>& attrs, const char* name) {
    const auto* a = findAttr(attrs, name);
    if (!a || !a->ints || a->ints->values.size() != 1) {
        return std::nullopt;
    }
    return a->ints->values.front();
}

bool factHas(const std::vector<AttrFact>& attrs, const char* name) {
    return findAttr(attrs, name) != nullptr;
}

const std::vector<const char*>& rootAttrNames() {
    static const std::vector<const char*> names = {
        "format",   "format_version", "rank",     "world_size", "role",     "coord_tp",
        "coord_pp", "coord_dp",       "coord_cp", "coord_ep",   "coord_vpp"};
    return names;
}

const std::vector<const char*>& datasetAttrNames() {
    static const std::vector<const char*> names = {"dtype",
                                                   "variant",
                                                   "module",
                                                   "index",
                                                   "kind",
                                                   "iteration",
                                                   "micro_batch",
                                                   "is_scalar",
                                                   "global_shape",
                                                   "placement",
                                                   "combine",
                                                   "partial_index",
                                                   "boxes",
                                                   "flat_ranges",
                                                   "layout_note",
                                                   "annotate_hint",
                                                   "placement_source",
                                                   "placement_hypothesis",
                                                   "placement_alternatives"};
    return names;
}

} // namespace ttrace
