// The `replay` reply body: one entry per returned shard, each checked against its payload.
#include "reply_header_json.h"
#include "ttrace/io/placement_attributes.h"

#include <set>

namespace ttrace::replay {
namespace {

constexpr std::size_t kMaxDims = 32;

Error badReply(std::string message) {
    return {ErrorCode::BadReply, std::move(message)};
}

// prod(shape) * itemsize, or nothing when it overflows (shape values are already >= 0).
std::optional<std::uint64_t> byteSize(const Shape& shape, std::size_t itemsize) {
    std::uint64_t n = itemsize;
    for (const auto d : shape) {
        const auto u = static_cast<std::uint64_t>(d);
        if (u != 0 && n > UINT64_MAX / u) {
            return std::nullopt;
        }
        n *= u;
    }
    return n;
}

bool validShape(const std::optional<Shape>& shape) {
    if (!shape || shape->size() > kMaxDims) {
        return false;
    }
    return std::all_of(shape->begin(), shape->end(), [](std::int64_t d) { return d >= 0; });
}

std::optional<TensorId> parseIdentity(json::Fields& f, std::string& why) {
    TensorId id;
    id.variant = f.string("variant").value_or("");
    id.module = f.string("module").value_or("");
    const auto kind = f.string("kind");
    id.iteration = f.integer("iteration").value_or(0);
    id.microBatch = f.integer("micro_batch").value_or(0);
    std::optional<std::string> index = f.string("index");
    if (!f.ok()) {
        return std::nullopt; // the caller reports f.problem()
    }
    const auto parsedKind = parseTensorKind(*kind);
    if (!parsedKind) {
        why = "unknown tensor kind '" + *kind + "'";
        return std::nullopt;
    }
    id.kind = *parsedKind;
    id.index = *index;
    return id;
}

std::optional<Placement> parsePlacement(json::Fields& f, const json::Json& entry,
                                        const Shape& localShape, const Shape& globalShape,
                                        std::string& why) {
    PlacementAttributes a;
    a.globalShape = globalShape;
    a.placement = f.string("placement").value_or("");
    a.combine = f.string("combine").value_or("");
    a.isScalar = entry.contains("is_scalar") ? f.boolean("is_scalar").value_or(false) : false;
    if (entry.contains("partial_index")) {
        a.partialIndex = f.integer("partial_index").value_or(0);
    }
    if (a.placement == "boxes") {
        a.boxes = f.rows("boxes", 3 * globalShape.size());
        a.boxesWidth = static_cast<std::int64_t>(3 * globalShape.size());
    } else if (a.placement == "flat") {
        a.flatRanges = f.rows("flat_ranges", 3);
        a.flatWidth = 3;
    }
    if (!f.ok()) {
        why = f.problem();
        return std::nullopt;
    }
    PlacementProblem problem;
    auto p = placementFromAttributes(a, localShape, problem);
    if (!p) {
        why = problem.message;
    }
    return p;
}

// The payload frame an entry names: within the reply, not taken by another entry, and
// exactly prod(shape) * itemsize bytes, as the entry's `bytes` must say too.
const std::span<const std::byte>* payloadOf(std::int64_t frame, std::int64_t bytes,
                                            const Shape& shape, DType dtype,
                                            std::span<const std::span<const std::byte>> payloads,
                                            std::set<std::int64_t>& used, std::string& why) {
    if (frame < 1 || static_cast<std::uint64_t>(frame) > payloads.size() ||
        !used.insert(frame).second) {
        why = "frame " + std::to_string(frame) +
              " does not name an unused payload frame (the reply has " +
              std::to_string(payloads.size()) + ")";
        return nullptr;
    }
    const auto expected = byteSize(shape, dtypeSize(dtype));
    const auto& payload = payloads[static_cast<std::size_t>(frame - 1)];
    if (!expected || bytes < 0 || static_cast<std::uint64_t>(bytes) != *expected ||
        payload.size() != *expected) {
        why = "shape " + shapeToString(shape) + " of " + std::string(dtypeName(dtype)) + " needs " +
              (expected ? std::to_string(*expected) : std::string("more than 2^64")) +
              " bytes; the entry says " + std::to_string(bytes) + ", frame " +
              std::to_string(frame) + " holds " + std::to_string(payload.size());
        return nullptr;
    }
    return &payload;
}

// One entry; `payloads` are frames 1..n, `used` collects the frame indices taken.
std::optional<ReplayShard> parseEntry(const json::Json& entry, std::size_t i,
                                      std::span<const std::span<const std::byte>> payloads,
                                      std::set<std::int64_t>& used, std::string& why) {
    const std::string where = "replay reply: tensors[" + std::to_string(i) + "]";
    if (!entry.is_object()) {
        why = where + " is not an object";
        return std::nullopt;
    }
    json::Fields f(entry, where);
    auto id = parseIdentity(f, why);
    const auto rank = f.integer("rank");
    const auto dtypeText = f.string("dtype");
    const auto shape = f.integers("shape");
    const auto globalShape = f.integers("global_shape");
    const auto frame = f.integer("frame");
    const auto bytes = f.integer("bytes");
    if (!f.ok()) {
        why = f.problem();
        return std::nullopt;
    }
    if (!id) {
        why = where + ": " + why;
        return std::nullopt;
    }
    const std::string tensor = where + " (" + id->path() + ")";
    const auto dtype = parseDType(*dtypeText);
    if (!dtype) {
        why = tensor + ": unknown dtype '" + *dtypeText + "'";
        return std::nullopt;
    }
    if (*rank < 0 || *rank > (1 << 24)) {
        why = tensor + ": rank " + std::to_string(*rank) + " is out of range";
        return std::nullopt;
    }
    if (!validShape(shape) || !validShape(globalShape)) {
        why = tensor + ": shape and global_shape must be lists of at most " +
              std::to_string(kMaxDims) + " non-negative integers";
        return std::nullopt;
    }
    auto placement = parsePlacement(f, entry, *shape, *globalShape, why);
    if (!placement) {
        why = tensor + ": " + why;
        return std::nullopt;
    }
    const auto* payload = payloadOf(*frame, *bytes, *shape, *dtype, payloads, used, why);
    if (!payload) {
        why = tensor + ": " + why;
        return std::nullopt;
    }
    ReplayShard s;
    s.id = std::move(*id);
    s.shard.rank = static_cast<int>(*rank);
    s.shard.dtype = *dtype;
    s.shard.localShape = *shape;
    s.shard.placement = std::move(*placement);
    s.shard.raw.assign(payload->begin(), payload->end());
    return s;
}

} // namespace

Result<ReplayReply>
ReplyHeader::replay(std::span<const std::span<const std::byte>> payloads) const {
    const auto& v = json_->value;
    json::Fields f(v, "replay reply");
    const auto seconds = f.number("seconds");
    const auto* tensors = f.array("tensors");
    if (!f.ok()) {
        return badReply(f.problem());
    }
    if (tensors->size() != payloads.size()) {
        return badReply("replay reply lists " + std::to_string(tensors->size()) +
                        " tensors but carries " + std::to_string(payloads.size()) +
                        " payload frames");
    }
    ReplayReply reply;
    reply.seconds = *seconds;
    std::set<std::int64_t> used;
    std::string why;
    for (std::size_t i = 0; i < tensors->size(); ++i) {
        auto shard = parseEntry((*tensors)[i], i, payloads, used, why);
        if (!shard) {
            return badReply(why);
        }
        reply.shards.push_back(std::move(*shard));
    }
    return reply;
}

} // namespace ttrace::replay
