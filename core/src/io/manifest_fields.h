#pragma once
// Typed reading of manifest.json fields: a field of the wrong type or range becomes one
// "manifest-field" diagnostic naming the field, never an nlohmann exception or a silent
// conversion (1e300 read as an int gave -2147483648).
#include "ttrace/io/diagnostic.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace ttrace {

// The value when `j` is an integer that fits in int64 (a float, even 2.0, is not).
std::optional<std::int64_t> jsonInteger(const nlohmann::json& j);
// "the number 1e+300", "a string", ... for messages.
std::string describeJson(const nlohmann::json& j);

class FieldReader {
public:
    FieldReader(const nlohmann::json& object, std::string where, Diagnostics& out)
        : object_(object)
        , where_(std::move(where))
        , out_(out) {}

    template <typename T> std::optional<T> required(const char* key) {
        if (!object_.is_object() || !object_.contains(key)) {
            fail("missing field '" + std::string(key) + "'");
            return std::nullopt;
        }
        return convert<T>(key, object_.at(key));
    }

    template <typename T> T optional(const char* key, T fallback) {
        if (!object_.is_object() || !object_.contains(key) || object_.at(key).is_null()) {
            return fallback;
        }
        return convert<T>(key, object_.at(key)).value_or(fallback);
    }

    // An integer field in [lo, hi] (when present); outside it is an error naming the field.
    std::int64_t bounded(const char* key, std::int64_t fallback, std::int64_t lo, std::int64_t hi);

    void fail(const std::string& message, DiagnosticCode code = DiagnosticCode::ManifestField) {
        failed_ = true;
        out_.push_back(makeError(code, where_, message));
    }
    [[nodiscard]] bool failed() const { return failed_; }
    [[nodiscard]] const std::string& where() const { return where_; }

private:
    template <typename T>
    std::optional<T> convert(const std::string& key, const nlohmann::json& value) {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            const auto v = jsonInteger(value);
            if (v && *v >= std::numeric_limits<T>::min() && *v <= std::numeric_limits<T>::max()) {
                return static_cast<T>(*v);
            }
            fail("field '" + key + "' must be an integer that fits in " +
                 std::to_string(sizeof(T) * 8) + " bits, not " + describeJson(value));
            return std::nullopt;
        } else {
            try {
                return value.get<T>();
            } catch (const nlohmann::json::exception&) {
                fail("field '" + key + "' must be " + expected<T>() + ", not " +
                     describeJson(value));
                return std::nullopt;
            }
        }
    }
    template <typename T> static const char* expected() {
        if constexpr (std::is_same_v<T, std::string>) {
            return "a string";
        } else {
            return "a list of strings";
        }
    }

    const nlohmann::json& object_;
    std::string where_;
    Diagnostics& out_;
    bool failed_ = false;
};

} // namespace ttrace
