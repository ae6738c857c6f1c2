#pragma once
// Typed access to fields of untrusted JSON objects: each getter either returns the value or
// records why not (field name and expected type) in a message. Private to the replay client.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace::replay::json {

using Json = nlohmann::json;

// Deeply nested input would exhaust the stack of a recursive parser: this scan (strings
// skipped) rejects nesting beyond `maxDepth` before parsing.
bool nestingWithin(std::string_view text, int maxDepth);

// Parses a JSON object; nothing on malformed input, non-objects or excessive nesting.
std::optional<Json> parseObject(std::string_view text, std::string& why);

class Fields {
public:
    Fields(const Json& object, std::string context)
        : object_(object)
        , context_(std::move(context)) {}

    std::optional<std::string> string(const char* name);
    std::optional<std::int64_t> integer(const char* name);
    std::optional<double> number(const char* name);
    std::optional<bool> boolean(const char* name);
    std::optional<std::vector<std::int64_t>> integers(const char* name);
    // A list of rows of exactly `width` integers each, flattened row-major.
    std::optional<std::vector<std::int64_t>> rows(const char* name, std::size_t width);
    const Json* array(const char* name);
    const Json* object(const char* name);
    [[nodiscard]] bool has(const char* name) const { return object_.contains(name); }

    // The first problem found ("" when none): "<context>: field 'x' must be ...".
    [[nodiscard]] const std::string& problem() const { return problem_; }
    [[nodiscard]] bool ok() const { return problem_.empty(); }

private:
    const Json* field(const char* name, bool (Json::*check)() const noexcept, const char* what);
    const Json& object_;
    std::string context_;
    std::string problem_;
};

} // namespace ttrace::replay::json
