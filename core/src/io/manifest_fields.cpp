#include "io/manifest_fields.h"

#include <sstream>

namespace ttrace {

std::optional<std::int64_t> jsonInteger(const nlohmann::json& j) {
    if (j.is_number_unsigned()) {
        const auto u = j.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            return std::nullopt;
        }
        return static_cast<std::int64_t>(u);
    }
    if (j.is_number_integer()) {
        return j.get<std::int64_t>();
    }
    return std::nullopt;
}

std::string describeJson(const nlohmann::json& j) {
    if (j.is_number()) {
        std::ostringstream out;
        out.precision(17);
        out << "the number " << j.get<double>();
        return out.str();
    }
    if (j.is_string()) {
        return "the string " + j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    }
    return std::string("a JSON ") + j.type_name();
}

std::int64_t FieldReader::bounded(const char* key, std::int64_t fallback, std::int64_t lo,
                                  std::int64_t hi) {
    if (!object_.is_object() || !object_.contains(key) || object_.at(key).is_null()) {
        return fallback;
    }
    const auto v = convert<std::int64_t>(key, object_.at(key));
    if (!v) {
        return fallback;
    }
    if (*v < lo || *v > hi) {
        fail("field '" + std::string(key) + "' is " + std::to_string(*v) + ", outside [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return fallback;
    }
    return *v;
}

} // namespace ttrace
