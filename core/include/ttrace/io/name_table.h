#pragma once
// One name table per enum: the stable name each value has in JSON, reports and the CLI, and
// the way back from a name. A table lists every enumerator once, in declaration order: an
// entry out of order or missing fails to compile, so a name can never drift from its value.
#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ttrace {

template <typename E, std::size_t N> class NameTable {
public:
    using Entry = std::pair<E, std::string_view>;

    // `last` is the enum's last enumerator: the table must cover 0..last, each in its place.
    consteval NameTable(E last, const std::array<Entry, N>& entries)
        : entries_(entries) {
        if (static_cast<std::size_t>(last) + 1 != N) {
            throw "the name table does not list every enumerator"; // a compile error
        }
        for (std::size_t i = 0; i < N; ++i) {
            if (static_cast<std::size_t>(entries_[i].first) != i) {
                throw "the name table is out of declaration order"; // a compile error
            }
        }
    }

    [[nodiscard]] constexpr std::string_view name(E value) const {
        const auto i = static_cast<std::size_t>(value);
        return i < N ? entries_[i].second : std::string_view();
    }

    [[nodiscard]] constexpr std::optional<E> parse(std::string_view name) const {
        for (const auto& [value, n] : entries_) {
            if (n == name) {
                return value;
            }
        }
        return std::nullopt;
    }

    [[nodiscard]] constexpr const std::array<Entry, N>& entries() const { return entries_; }

private:
    std::array<Entry, N> entries_;
};

// A field that holds an enum value and reads as its stable name where a name is wanted (JSON,
// text, code that matches a name held in a std::string). A string literal converts only while
// compiling and only when the table has it: a misspelt name is a compile error, never a
// silent mismatch.
template <typename E, const auto& Table> class NamedValue {
public:
    constexpr NamedValue(E value) // NOLINT(google-explicit-constructor)
        : value_(value) {}
    consteval NamedValue(const char* name)     // NOLINT(google-explicit-constructor)
        : value_(Table.parse(name).value()) {} // unknown: not a constant expression

    [[nodiscard]] constexpr E value() const { return value_; }
    [[nodiscard]] constexpr std::string_view name() const { return Table.name(value_); }
    operator std::string() const { return std::string(name()); } // NOLINT: reads as its name

    friend constexpr bool operator==(NamedValue, NamedValue) = default;
    friend constexpr auto operator<=>(NamedValue, NamedValue) = default;
    template <std::same_as<std::string> S> friend bool operator==(NamedValue a, const S& name) {
        return a.name() == name;
    }

private:
    E value_;
};

} // namespace ttrace
