#pragma once
// Names read from rank files are shown, written to JSON and to caches; JSON requires UTF-8
// and nlohmann throws on anything else. Invalid bytes are escaped as \xNN once, where they
// are read, so every later use is safe and the name stays recognisable.
#include <string>
#include <string_view>

namespace ttrace {

[[nodiscard]] bool isValidUtf8(std::string_view text);
// `text` unchanged when valid; otherwise every byte that is not part of a valid UTF-8
// sequence becomes the four characters \xNN.
[[nodiscard]] std::string escapeInvalidUtf8(std::string_view text);

} // namespace ttrace
