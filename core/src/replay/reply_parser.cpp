#include "ttrace/replay/reply_parser.h"

#include "reply_header_json.h"
#include "ttrace/replay/protocol_limits.h"

#include <algorithm>
#include <utility>

namespace ttrace::replay {

ReplyHeader::ReplyHeader() = default;
ReplyHeader::~ReplyHeader() = default;
ReplyHeader::ReplyHeader(ReplyHeader&&) noexcept = default;
ReplyHeader& ReplyHeader::operator=(ReplyHeader&&) noexcept = default;

namespace {

Error badReply(std::string message) {
    return {ErrorCode::BadReply, std::move(message)};
}

std::optional<Error> agentError(const json::Json& header, const std::string& status) {
    if (status == "busy") {
        return Error{ErrorCode::Busy, "the agent is busy with another replay"};
    }
    const auto it = header.find("error");
    if (it == header.end() || !it->is_object()) {
        return badReply("agent reply: status 'error' without an 'error' object");
    }
    json::Fields f(*it, "agent error");
    const auto code = f.string("code");
    const auto message = f.string("message");
    if (!f.ok()) {
        return badReply(f.problem());
    }
    Error e{agentErrorCode(*code), *message};
    if (const auto reason = it->find("reason"); reason != it->end() && reason->is_string()) {
        e.refusal = refusalOf(reason->get<std::string>());
    }
    if (e.code == ErrorCode::UnknownAgentError) {
        e.message = "agent error '" + *code + "': " + *message;
    }
    return e;
}

} // namespace

Result<ReplyHeader> ReplyHeader::parse(std::string_view text) {
    std::string why;
    auto value = json::parseObject(text, why);
    if (!value) {
        return badReply("agent reply header is " + why);
    }
    ReplyHeader h;
    json::Fields f(*value, "agent reply");
    const auto protocol = f.integer("protocol");
    const auto status = f.string("status");
    if (!f.ok()) {
        return badReply(f.problem());
    }
    h.envelope_.protocol = static_cast<int>(std::clamp<std::int64_t>(*protocol, -1, 1'000'000));
    h.envelope_.status = *status;
    const auto id = value->find("id");
    if (id == value->end() || !(id->is_null() || id->is_number_integer())) {
        return badReply("agent reply: field 'id' must be an integer or null");
    }
    if (id->is_number_integer()) {
        h.envelope_.id = id->get<std::int64_t>();
    }
    if (*status != "ok" && *status != "busy" && *status != "error") {
        return badReply("agent reply: unknown status '" + *status + "'");
    }
    if (*status != "ok") {
        h.envelope_.error = agentError(*value, *status);
    } else if (*protocol != kProtocolVersion) {
        return Error{ErrorCode::Version, "the agent speaks protocol " + std::to_string(*protocol) +
                                             ", this client " + std::to_string(kProtocolVersion)};
    }
    h.json_ = std::make_unique<Json>(Json{std::move(*value)});
    return h;
}

Result<PingReply> ReplyHeader::ping() const {
    json::Fields f(json_->value, "ping reply");
    const auto busy = f.boolean("busy");
    const auto uptime = f.number("uptime_s");
    if (!f.ok()) {
        return badReply(f.problem());
    }
    return PingReply{*busy, *uptime};
}

namespace {

std::optional<AgentModule> parseModule(const json::Json& entry, std::size_t i, std::string& why) {
    if (!entry.is_object()) {
        why = "hello reply: modules[" + std::to_string(i) + "] is not an object";
        return std::nullopt;
    }
    json::Fields f(entry, "hello reply: modules[" + std::to_string(i) + "]");
    AgentModule m;
    m.name = f.string("name").value_or("");
    m.type = f.string("type").value_or("");
    m.replayable = f.boolean("replayable").value_or(false);
    m.why = f.string("why").value_or("");
    if (!f.ok()) {
        why = f.problem();
        return std::nullopt;
    }
    return m;
}

// identity.<role>: {"capture_id": string, "created": string}; false when malformed.
bool readIdentity(const json::Json& identity, const char* role, BundleIdentity& out) {
    const auto entry = identity.find(role);
    if (entry == identity.end()) {
        return true;
    }
    if (!entry->is_object()) {
        return false;
    }
    for (const auto& [key, target] :
         {std::pair{"capture_id", &out.captureId}, std::pair{"created", &out.created}}) {
        if (const auto f = entry->find(key); f != entry->end()) {
            if (!f->is_string()) {
                return false;
            }
            *target = f->get<std::string>();
        }
    }
    return true;
}

constexpr std::int64_t kMaxSize = 1 << 24;

int clampedSize(const json::Json& v) {
    return static_cast<int>(std::clamp<std::int64_t>(v.get<std::int64_t>(), 0, kMaxSize));
}

// relaunch.layout.<which>: {"world_size": int, "parallel": {name: int}}; false when malformed.
bool readLayout(const json::Json& layout, const char* which, JobLayout& out) {
    const auto entry = layout.find(which);
    if (entry == layout.end() || !entry->is_object()) {
        return entry == layout.end();
    }
    const auto world = entry->find("world_size");
    const auto parallel = entry->find("parallel");
    if (world == entry->end() || !world->is_number_integer() || parallel == entry->end() ||
        !parallel->is_object()) {
        return false;
    }
    out.worldSize = clampedSize(*world);
    for (const auto& [key, size] : parallel->items()) {
        if (!size.is_number_integer()) {
            return false;
        }
        out.parallel[key] = clampedSize(size);
    }
    return true;
}

// The `relaunch` object of an agent started by `ttrace serve`; empty, or what is malformed.
std::string readRelaunch(const json::Json& relaunch, AgentInfo& info) {
    info.relaunched = true;
    const auto changes = relaunch.find("code_changes");
    if (changes != relaunch.end() && changes->is_array()) {
        for (const auto& line : *changes) {
            if (!line.is_string()) {
                return "hello reply: relaunch.code_changes holds a non-string";
            }
            info.codeChanges.push_back(line.get<std::string>());
        }
    }
    const auto layout = relaunch.find("layout");
    if (layout == relaunch.end()) {
        return {};
    }
    if (!layout->is_object() || !readLayout(*layout, "captured", info.capturedLayout) ||
        !readLayout(*layout, "relaunched", info.relaunchedLayout)) {
        return "hello reply: relaunch.layout is malformed";
    }
    if (const auto n = layout->find("ranks_per_rank"); n != layout->end()) {
        if (!n->is_number_integer()) {
            return "hello reply: relaunch.layout.ranks_per_rank is not an integer";
        }
        info.ranksPerRank = std::max(1, clampedSize(*n));
    }
    return {};
}

} // namespace

Result<AgentInfo> ReplyHeader::hello() const {
    const auto& v = json_->value;
    json::Fields f(v, "hello reply");
    AgentInfo info;
    info.agent = f.string("agent").value_or("");
    info.protocol = static_cast<int>(f.integer("protocol").value_or(0));
    info.worldSize =
        static_cast<int>(std::clamp<std::int64_t>(f.integer("world_size").value_or(0), 0, 1 << 24));
    info.role = f.string("role").value_or("");
    info.precision = f.string("precision").value_or("");
    info.bundle = f.string("bundle").value_or("");
    info.reference = f.string("reference").value_or("");
    info.iterations = f.integers("iterations").value_or(std::vector<std::int64_t>{});
    info.microBatches = static_cast<int>(
        std::clamp<std::int64_t>(f.integer("micro_batches").value_or(0), 0, 1 << 24));
    const auto* parallel = f.object("parallel");
    const auto* modules = f.array("modules");
    if (!f.ok()) {
        return badReply(f.problem());
    }
    for (const auto& [key, size] : parallel->items()) {
        if (!size.is_number_integer()) {
            return badReply("hello reply: parallel size '" + key + "' is not an integer");
        }
        info.parallel[key] =
            static_cast<int>(std::clamp<std::int64_t>(size.get<std::int64_t>(), 0, 1 << 24));
    }
    if (info.worldSize < 1) {
        return badReply("hello reply: world_size must be at least 1");
    }
    std::string why;
    for (std::size_t i = 0; i < modules->size(); ++i) {
        auto m = parseModule((*modules)[i], i, why);
        if (!m) {
            return badReply(why);
        }
        info.modules.push_back(std::move(*m));
    }
    if (const auto identity = v.find("identity"); identity != v.end() && identity->is_object()) {
        if (!readIdentity(*identity, "candidate", info.candidateIdentity) ||
            !readIdentity(*identity, "reference", info.referenceIdentity)) {
            return badReply("hello reply: identity holds a non-string");
        }
    }
    if (const auto relaunch = v.find("relaunch"); relaunch != v.end() && relaunch->is_object()) {
        if (auto problem = readRelaunch(*relaunch, info); !problem.empty()) {
            return badReply(std::move(problem));
        }
    }
    return info;
}

} // namespace ttrace::replay
