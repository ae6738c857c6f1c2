#pragma once
// The wire format between ttrace-index (child) and the tools (parent): RankFacts as
// length-prefixed little-endian fields between a magic line and an end mark. The parent
// decodes it as untrusted input: every length is checked against the bytes that remain, so a
// child that dies mid-write or prints garbage is an error, never a large allocation.
#include "io/rank_facts.h"

#include <optional>
#include <string>
#include <string_view>

namespace ttrace {

std::string encodeRankFacts(const RankFacts& facts);

// The facts, or nothing with `why` set (truncated, wrong magic, bad field).
std::optional<RankFacts> decodeRankFacts(std::string_view bytes, std::string& why);

} // namespace ttrace
