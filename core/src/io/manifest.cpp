#include "ttrace/manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace ttrace {
namespace {

using nlohmann::json;

// Collects the first problem with a clear location instead of letting json throw deep inside.
class FieldReader {
public:
    FieldReader(const json& object, std::string where, Diagnostics& out)
        : object_(object)
        , where_(std::move(where))
        , out_(out) {}

    template <typename T> std::optional<T> required(const char* key) {
        if (!object_.is_object() || !object_.contains(key)) {
            fail("missing field '" + std::string(key) + "'");
            return std::nullopt;
        }
        return convert<T>(key);
    }

    template <typename T> T optional(const char* key, T fallback) {
        if (!object_.is_object() || !object_.contains(key) || object_.at(key).is_null()) {
            return fallback;
        }
        return convert<T>(key).value_or(fallback);
    }

    [[nodiscard]] bool failed() const { return failed_; }

private:
    template <typename T> std::optional<T> convert(const char* key) {
        // json converts a float to an integer with a plain cast: undefined for 1e300.
        if constexpr (std::is_integral_v<T>) {
            if (!object_.at(key).is_number_integer()) {
                fail("field '" + std::string(key) + "' must be an integer, not " +
                     (object_.at(key).is_number() ? "a fraction or exponent" :
                                                    std::string(object_.at(key).type_name())));
                return std::nullopt;
            }
        }
        try {
            return object_.at(key).get<T>();
        } catch (const json::exception&) {
            fail("field '" + std::string(key) + "' has the wrong type (" +
                 std::string(object_.at(key).type_name()) + ")");
            return std::nullopt;
        }
    }
    void fail(const std::string& message) {
        failed_ = true;
        out_.push_back(makeError("manifest-field", where_, message));
    }

    const json& object_;
    std::string where_;
    Diagnostics& out_;
    bool failed_ = false;
};

// Nothing when a coordinate is present but not an integer (json's value() would throw).
std::optional<RankCoords> parseCoords(const json& j) {
    RankCoords c;
    if (!j.is_object()) {
        return c;
    }
    const std::pair<const char*, int RankCoords::*> fields[] = {
        {"tp", &RankCoords::tp}, {"pp", &RankCoords::pp}, {"dp", &RankCoords::dp},
        {"cp", &RankCoords::cp}, {"ep", &RankCoords::ep}, {"vpp", &RankCoords::vpp}};
    for (const auto& [key, member] : fields) {
        if (!j.contains(key)) {
            continue;
        }
        if (!j[key].is_number_integer()) {
            return std::nullopt;
        }
        c.*member = j[key].get<int>();
    }
    return c;
}

} // namespace

std::string RankCoords::toString() const {
    std::ostringstream out;
    out << "tp" << tp << " pp" << pp << " dp" << dp << " cp" << cp << " ep" << ep << " vpp" << vpp;
    return out.str();
}

const ModuleInfo* Manifest::findModule(const std::string& name) const {
    for (const auto& m : modules) {
        if (m.name == name) {
            return &m;
        }
    }
    return nullptr;
}

namespace {

// The document itself: a directory with a manifest.json that parses as JSON.
std::optional<json> parseManifestFile(const std::filesystem::path& bundleDir, Diagnostics& out) {
    const auto path = bundleDir / "manifest.json";
    std::error_code ec;
    if (!std::filesystem::is_directory(bundleDir, ec)) {
        out.push_back(makeError("not-a-bundle", bundleDir.string(),
                                "is not a directory (a bundle is a directory holding "
                                "manifest.json and rank-NNNNN.h5 files)"));
        return std::nullopt;
    }
    std::ifstream in(path);
    if (!in) {
        out.push_back(makeError("missing-manifest", path.string(),
                                "manifest.json is missing or unreadable; is this a trace bundle?"));
        return std::nullopt;
    }
    try {
        return json::parse(in);
    } catch (const json::exception& e) { // parse_error, or out_of_range for 1e+600
        out.push_back(makeError("bad-manifest", path.string(),
                                "manifest.json is not valid JSON (" + std::string(e.what()) + ")"));
        return std::nullopt;
    }
}

// Format, version and the scalar fields; nothing when the document cannot be a manifest.
std::optional<Manifest> readTopFields(const json& root, const std::string& where,
                                      Diagnostics& out) {
    FieldReader top(root, where, out);
    const auto format = top.required<std::string>("format");
    const auto version = top.required<int>("format_version");
    if (!format || !version) {
        return std::nullopt;
    }
    if (*format != "ttrace-bundle") {
        out.push_back(makeError("bad-format", where,
                                "format is '" + *format + "', expected 'ttrace-bundle'"));
        return std::nullopt;
    }
    if (*version != kFormatVersion) {
        out.push_back(makeError("unknown-version", where,
                                "format_version " + std::to_string(*version) +
                                    " is not supported (this reader understands format_version " +
                                    std::to_string(kFormatVersion) + ")"));
        return std::nullopt;
    }
    Manifest m;
    m.formatVersion = *version;
    m.role = top.required<std::string>("role").value_or("");
    m.worldSize = top.required<int>("world_size").value_or(0);
    m.variants = top.optional<std::vector<std::string>>("variants", {"nominal"});
    m.parallel = top.optional<std::map<std::string, int>>("parallel", {});
    m.precision = top.optional<std::string>("precision", "fp32");
    m.model = top.optional<std::string>("model", "");
    m.iterations = top.optional<std::vector<std::int64_t>>("iterations", {});
    m.microBatches = top.optional<int>("micro_batches", 1);
    m.producer = top.optional<std::string>("producer", "");
    m.created = top.optional<std::string>("created", "");
    if (top.failed()) {
        return std::nullopt;
    }
    return m;
}

void readModules(const json& root, const std::string& where, Manifest& m, Diagnostics& out) {
    if (!root.contains("modules") || !root["modules"].is_array()) {
        return;
    }
    int order = 0;
    for (const auto& jm : root["modules"]) {
        FieldReader fr(jm, where + " modules[" + std::to_string(order) + "]", out);
        ModuleInfo mi;
        mi.name = fr.required<std::string>("name").value_or("");
        mi.order = fr.optional<int>("order", order);
        mi.depth = fr.optional<int>("depth", 0);
        mi.type = fr.optional<std::string>("type", "");
        m.modules.push_back(std::move(mi));
        ++order;
    }
}

std::optional<std::uint32_t> parseCrc(const std::string& crc) {
    try {
        std::size_t used = 0;
        const auto value = std::stoul(crc, &used, 16);
        if (used == crc.size() && value <= 0xFFFFFFFFUL) {
            return static_cast<std::uint32_t>(value);
        }
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

// One `ranks[index]` entry; nothing when a required field is missing or wrong.
std::optional<RankEntry> readRankEntry(const json& jr, const std::string& loc, Diagnostics& out) {
    FieldReader fr(jr, loc, out);
    RankEntry e;
    e.rank = fr.required<int>("rank").value_or(-1);
    e.file = fr.required<std::string>("file").value_or("");
    e.tensors = fr.optional<std::int64_t>("tensors", -1);
    e.bytes = fr.optional<std::int64_t>("bytes", -1);
    e.fileSize = fr.optional<std::int64_t>("file_size", -1);
    if (const auto crc = fr.optional<std::string>("crc32", ""); !crc.empty()) {
        e.crc32 = parseCrc(crc);
        if (!e.crc32) {
            out.push_back(makeError("manifest-field", loc,
                                    "rank " + std::to_string(e.rank) + " crc32 '" + crc +
                                        "' is not 8 hex digits"));
        }
    }
    if (jr.is_object() && jr.contains("coords")) {
        if (const auto coords = parseCoords(jr["coords"])) {
            e.coords = *coords;
        } else {
            out.push_back(makeError("manifest-field", loc,
                                    "rank " + std::to_string(e.rank) +
                                        " coords must be integers (tp, pp, dp, cp, ep, vpp)"));
            return std::nullopt;
        }
    }
    return fr.failed() ? std::nullopt : std::optional<RankEntry>(std::move(e));
}

// Why a well-formed entry cannot be used, or empty.
std::string rankEntryProblem(const RankEntry& e, const Manifest& m, const std::set<int>& seen) {
    if (e.rank < 0 || e.rank >= m.worldSize) {
        return "rank " + std::to_string(e.rank) + " is outside world_size " +
               std::to_string(m.worldSize);
    }
    if (seen.contains(e.rank)) {
        return "rank " + std::to_string(e.rank) + " is listed twice";
    }
    if (e.file.find('/') != std::string::npos || e.file.find("..") != std::string::npos) {
        return "rank " + std::to_string(e.rank) + " file '" + e.file +
               "' must be a plain file name inside the bundle";
    }
    return {};
}

bool readRanks(const json& root, const std::string& where, Manifest& m, Diagnostics& out) {
    if (!root.contains("ranks") || !root["ranks"].is_array()) {
        out.push_back(makeError("manifest-field", where, "missing field 'ranks' (an array)"));
        return false;
    }
    std::set<int> seen;
    std::size_t index = 0; // position in the JSON array, so a skipped entry is named right
    for (const auto& jr : root["ranks"]) {
        const std::string loc = where + " ranks[" + std::to_string(index++) + "]";
        auto e = readRankEntry(jr, loc, out);
        if (!e) {
            continue;
        }
        if (const auto problem = rankEntryProblem(*e, m, seen); !problem.empty()) {
            out.push_back(makeError("manifest-field", loc, problem));
            continue;
        }
        seen.insert(e->rank);
        m.ranks.push_back(std::move(*e));
    }
    // One diagnostic per missing rank, but at most kListed of them: a world_size of 2e9 must
    // not build 2e9 messages (the loop ends after seen.size() + kListed steps).
    constexpr int kListed = 16;
    const auto missing = static_cast<std::int64_t>(m.worldSize) -
                         static_cast<std::int64_t>(seen.size());
    int listed = 0;
    for (int r = 0; r < m.worldSize && listed < kListed; ++r) {
        if (!seen.contains(r)) {
            ++listed;
            out.push_back(makeError("missing-rank", where,
                                    "rank " + std::to_string(r) + " of world_size " +
                                        std::to_string(m.worldSize) + " is not listed in ranks"));
        }
    }
    if (missing > listed) {
        out.push_back(makeError("missing-rank", where,
                                std::to_string(missing - listed) + " more ranks of world_size " +
                                    std::to_string(m.worldSize) + " are not listed in ranks"));
    }
    return true;
}

} // namespace

std::optional<Manifest> readManifest(const std::filesystem::path& bundleDir, Diagnostics& out) {
    const std::string where = (bundleDir / "manifest.json").string();
    const auto root = parseManifestFile(bundleDir, out);
    if (!root) {
        return std::nullopt;
    }
    auto m = readTopFields(*root, where, out);
    if (!m) {
        return std::nullopt;
    }
    if (m->role != "reference" && m->role != "candidate") {
        out.push_back(makeError("manifest-field", where,
                                "role is '" + m->role + "', expected 'reference' or 'candidate'"));
    }
    if (m->variants.empty() || m->variants.front() != "nominal") {
        out.push_back(makeError("manifest-field", where, "variants must start with 'nominal'"));
    }
    readModules(*root, where, *m, out);
    if (!readRanks(*root, where, *m, out)) {
        return std::nullopt;
    }
    std::sort(m->ranks.begin(), m->ranks.end(),
              [](const RankEntry& a, const RankEntry& b) { return a.rank < b.rank; });
    std::sort(m->modules.begin(), m->modules.end(),
              [](const ModuleInfo& a, const ModuleInfo& b) { return a.order < b.order; });
    return m;
}

} // namespace ttrace
