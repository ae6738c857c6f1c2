#pragma once
// Request headers as the agent expects them (docs/protocol.md, "Requests").
#include "ttrace/replay/replay_request.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace ttrace::replay {

std::string encodeRequest(std::string_view op, std::int64_t id, std::string_view token);
std::string encodeReplayRequest(std::int64_t id, std::string_view token,
                                const ReplayRequest& request);

} // namespace ttrace::replay
