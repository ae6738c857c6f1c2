#include "io/placement_alternatives.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>

namespace ttrace {
namespace {

using nlohmann::json;

// Rows of integers (a JSON array of arrays) flattened, with their common width; nothing when
// the value is not such a table.
bool readRows(const json& rows, std::optional<std::vector<std::int64_t>>& values,
              std::optional<std::int64_t>& width) {
    if (!rows.is_array()) {
        return false;
    }
    std::vector<std::int64_t> flat;
    std::optional<std::size_t> w;
    for (const auto& row : rows) {
        if (!row.is_array() || (w && row.size() != *w)) {
            return false;
        }
        w = row.size();
        for (const auto& v : row) {
            if (!v.is_number_integer()) {
                return false;
            }
            flat.push_back(v.get<std::int64_t>());
        }
    }
    values = std::move(flat);
    width = static_cast<std::int64_t>(w.value_or(0));
    return true;
}

// The attributes of one entry, or a message saying what is wrong with it.
std::optional<PlacementAttributes> entryAttributes(const json& e, bool isScalar, std::string& why) {
    PlacementAttributes a;
    a.isScalar = isScalar;
    const auto shape = e.find("global_shape");
    if (!e.is_object() || shape == e.end() || !shape->is_array() || !e.contains("placement") ||
        !e["placement"].is_string() || !e.contains("combine") || !e["combine"].is_string()) {
        why = "needs 'global_shape', 'placement' and 'combine'";
        return std::nullopt;
    }
    for (const auto& n : *shape) {
        if (!n.is_number_integer()) {
            why = "'global_shape' must hold integers";
            return std::nullopt;
        }
        a.globalShape.push_back(n.get<std::int64_t>());
    }
    a.placement = e["placement"].get<std::string>();
    a.combine = e["combine"].get<std::string>();
    if (const auto p = e.find("partial_index"); p != e.end()) {
        if (!p->is_number_integer()) {
            why = "'partial_index' must be an integer";
            return std::nullopt;
        }
        a.partialIndex = p->get<std::int64_t>();
    }
    const char* table = a.placement == "flat" ? "flat_ranges" : "boxes";
    const auto rows = e.find(table);
    const bool ok =
        rows != e.end() && (a.placement == "flat" ? readRows(*rows, a.flatRanges, a.flatWidth)
                                                  : readRows(*rows, a.boxes, a.boxesWidth));
    if (!ok) {
        why = std::string("'") + table + "' must be a table of integers";
        return std::nullopt;
    }
    return a;
}

} // namespace

std::optional<std::vector<PlacementAlternative>>
parsePlacementAlternatives(const std::string& text, const Shape& localShape, bool isScalar,
                           PlacementSource source, PlacementProblem& problem) {
    problem.code = DiagnosticCode::BadPlacement;
    const auto doc = json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_array()) {
        problem.message = "attribute 'placement_alternatives' is not a JSON array";
        return std::nullopt;
    }
    std::vector<PlacementAlternative> out;
    for (std::size_t i = 0; i < doc.size(); ++i) {
        const auto& e = doc[i];
        std::string why;
        auto attributes = entryAttributes(e, isScalar, why);
        std::optional<Placement> placement;
        if (attributes) {
            PlacementProblem inner;
            placement = placementFromAttributes(*attributes, localShape, inner);
            why = inner.message;
        }
        if (!placement) {
            problem.message = "placement_alternatives entry " + std::to_string(i) + ": " + why;
            return std::nullopt;
        }
        placement->source = source;
        const auto label = e.find("label");
        out.push_back({label != e.end() && label->is_string() ? label->get<std::string>()
                                                              : "alternative " + std::to_string(i),
                       std::move(*placement)});
    }
    return out;
}

} // namespace ttrace
