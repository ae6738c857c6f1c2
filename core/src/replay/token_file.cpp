#include "ttrace/replay/token_file.h"

#include <algorithm>
#include <fstream>

namespace ttrace::replay {
namespace {

constexpr std::size_t kTokenHexDigits = 64; // 256 bits
constexpr std::size_t kMaxTokenFileBytes = 1024;

bool isHex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

Error tokenError(const std::filesystem::path& file, const std::string& what) {
    return {ErrorCode::TokenFile, "token file " + file.string() + " " + what};
}

} // namespace

Result<std::string> readTokenFile(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return tokenError(file,
                          "cannot be read (does it exist? the agent prints where it wrote it)");
    }
    std::string text(kMaxTokenFileBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxTokenFileBytes) {
        return tokenError(file, "is larger than a token file can be");
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    if (text.size() != kTokenHexDigits || !std::all_of(text.begin(), text.end(), isHex)) {
        return tokenError(file, "must hold one line of " + std::to_string(kTokenHexDigits) +
                                    " hex digits");
    }
    return text;
}

} // namespace ttrace::replay
