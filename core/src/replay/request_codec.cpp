#include "request_codec.h"

#include "ttrace/replay/protocol_limits.h"

#include <nlohmann/json.hpp>

namespace ttrace::replay {
namespace {

nlohmann::json base(std::string_view op, std::int64_t id, std::string_view token) {
    return {{"protocol", kProtocolVersion}, {"token", token}, {"id", id}, {"op", op}};
}

} // namespace

std::string encodeRequest(std::string_view op, std::int64_t id, std::string_view token) {
    return base(op, id, token).dump();
}

std::string encodeReplayRequest(std::int64_t id, std::string_view token, const ReplayRequest& r) {
    auto j = base("replay", id, token);
    j["module"] = r.module;
    j["iteration"] = r.iteration;
    j["micro_batch"] = r.microBatch;
    j["phase"] = replayPhaseName(r.phase);
    j["variants"] = r.variants;
    // A module name is user input: replace invalid UTF-8 rather than throw.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace ttrace::replay
