#include "json_fields.h"

namespace ttrace::replay::json {

bool nestingWithin(std::string_view text, int maxDepth) {
    int depth = 0;
    bool inString = false;
    bool escaped = false;
    for (const char c : text) {
        if (inString) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                inString = false;
            }
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > maxDepth) {
                return false;
            }
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return true;
}

std::optional<Json> parseObject(std::string_view text, std::string& why) {
    constexpr int kMaxNesting = 32; // replies nest 4 levels deep (tensors -> entry -> boxes -> row)
    if (!nestingWithin(text, kMaxNesting)) {
        why = "nested deeper than " + std::to_string(kMaxNesting) + " levels";
        return std::nullopt;
    }
    Json value = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
        why = "not valid UTF-8 JSON";
        return std::nullopt;
    }
    if (!value.is_object()) {
        why = "not a JSON object";
        return std::nullopt;
    }
    return value;
}

const Json* Fields::field(const char* name, bool (Json::*check)() const noexcept,
                          const char* what) {
    if (!problem_.empty()) {
        return nullptr;
    }
    const auto it = object_.find(name);
    if (it == object_.end()) {
        problem_ = context_ + ": field '" + name + "' is missing";
        return nullptr;
    }
    if (!((*it).*check)()) {
        problem_ = context_ + ": field '" + name + "' must be " + what;
        return nullptr;
    }
    return &*it;
}

std::optional<std::string> Fields::string(const char* name) {
    const auto* v = field(name, &Json::is_string, "a string");
    return v ? std::optional(v->get<std::string>()) : std::nullopt;
}

std::optional<std::int64_t> Fields::integer(const char* name) {
    const auto* v = field(name, &Json::is_number_integer, "an integer");
    if (!v) {
        return std::nullopt;
    }
    if (v->is_number_unsigned() &&
        v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
        problem_ = context_ + ": field '" + name + "' is out of range";
        return std::nullopt;
    }
    return v->get<std::int64_t>();
}

std::optional<double> Fields::number(const char* name) {
    const auto* v = field(name, &Json::is_number, "a number");
    return v ? std::optional(v->get<double>()) : std::nullopt;
}

std::optional<bool> Fields::boolean(const char* name) {
    const auto* v = field(name, &Json::is_boolean, "true or false");
    return v ? std::optional(v->get<bool>()) : std::nullopt;
}

const Json* Fields::array(const char* name) {
    return field(name, &Json::is_array, "a list");
}

const Json* Fields::object(const char* name) {
    return field(name, &Json::is_object, "an object");
}

std::optional<std::vector<std::int64_t>> Fields::integers(const char* name) {
    const auto* v = array(name);
    if (!v) {
        return std::nullopt;
    }
    std::vector<std::int64_t> out;
    out.reserve(v->size());
    for (const auto& x : *v) {
        if (!x.is_number_integer() ||
            (x.is_number_unsigned() &&
             x.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))) {
            problem_ = context_ + ": field '" + name + "' must be a list of integers";
            return std::nullopt;
        }
        out.push_back(x.get<std::int64_t>());
    }
    return out;
}

std::optional<std::vector<std::int64_t>> Fields::rows(const char* name, std::size_t width) {
    const auto* v = array(name);
    if (!v) {
        return std::nullopt;
    }
    std::vector<std::int64_t> out;
    for (const auto& row : *v) {
        if (!row.is_array() || row.size() != width) {
            problem_ = context_ + ": field '" + name + "' must be a list of rows of " +
                       std::to_string(width) + " integers";
            return std::nullopt;
        }
        for (const auto& x : row) {
            if (!x.is_number_integer() ||
                (x.is_number_unsigned() &&
                 x.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))) {
                problem_ = context_ + ": field '" + name + "' must hold integers only";
                return std::nullopt;
            }
            out.push_back(x.get<std::int64_t>());
        }
    }
    return out;
}

} // namespace ttrace::replay::json
