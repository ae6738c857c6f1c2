#include "ttrace/io/manifest.h"

#include "io/manifest_checks.h"
#include "io/manifest_clipping.h"
#include "io/manifest_convention.h"
#include "io/manifest_environment.h"
#include "io/manifest_fields.h"
#include "io/manifest_optimizer.h"
#include "io/manifest_start.h"
#include "io/regular_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <sstream>

namespace ttrace {

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

using nlohmann::json;

// The document itself: a directory with a regular manifest.json that parses as a JSON object.
std::optional<json> parseManifestFile(const std::filesystem::path& bundleDir, Diagnostics& out) {
    const auto path = bundleDir / "manifest.json";
    if (fileKind(bundleDir) != FileKind::Directory) {
        out.push_back(makeError(DiagnosticCode::NotABundle, bundleDir.string(),
                                "is not a directory (a bundle is a directory holding "
                                "manifest.json and rank-NNNNN.h5 files)"));
        return std::nullopt;
    }
    if (const auto kind = fileKind(path); kind == FileKind::Missing) {
        out.push_back(makeError(DiagnosticCode::MissingManifest, path.string(),
                                "manifest.json is missing or unreadable; is this a trace bundle?"));
        return std::nullopt;
    }
    const auto file = readSmallFile(path, kMaxManifestBytes);
    if (!file.error.empty()) {
        const bool regular = fileKind(path) == FileKind::Regular;
        out.push_back(
            makeError(regular ? DiagnosticCode::MissingManifest : DiagnosticCode::NotRegularFile,
                      path.string(), "manifest.json " + file.error));
        return std::nullopt;
    }
    try {
        auto root = json::parse(file.text);
        if (!root.is_object()) {
            out.push_back(
                makeError(DiagnosticCode::BadManifest, path.string(),
                          "manifest.json is " + describeJson(root) + ", not a JSON object"));
            return std::nullopt;
        }
        return root;
    } catch (const json::exception& e) {
        out.push_back(makeError(DiagnosticCode::BadManifest, path.string(),
                                "manifest.json is not valid JSON (" + std::string(e.what()) + ")"));
        return std::nullopt;
    }
}

// A JSON object of integer sizes (parallel) or an array of integers (iterations).
std::map<std::string, int> readParallel(const json& root, FieldReader& top) {
    std::map<std::string, int> sizes;
    if (!root.contains("parallel") || root["parallel"].is_null()) {
        return sizes;
    }
    if (!root["parallel"].is_object()) {
        top.fail("field 'parallel' must be an object of sizes, not " +
                 describeJson(root["parallel"]));
        return sizes;
    }
    for (const auto& [name, value] : root["parallel"].items()) {
        const auto v = jsonInteger(value);
        if (!v || *v < 1 || *v > kMaxParallelSize) {
            top.fail("parallel size '" + name + "' must be an integer in [1, " +
                     std::to_string(kMaxParallelSize) + "], not " + describeJson(value));
            continue;
        }
        sizes[name] = static_cast<int>(*v);
    }
    return sizes;
}

std::vector<std::int64_t> readIterations(const json& root, FieldReader& top) {
    std::vector<std::int64_t> out;
    if (!root.contains("iterations") || root["iterations"].is_null()) {
        return out;
    }
    if (!root["iterations"].is_array()) {
        top.fail("field 'iterations' must be a list of integers");
        return out;
    }
    for (const auto& it : root["iterations"]) {
        const auto v = jsonInteger(it);
        if (!v || *v < 0) {
            top.fail("field 'iterations' holds " + describeJson(it) + ", not an integer >= 0");
            return {};
        }
        out.push_back(*v);
    }
    return out;
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
        out.push_back(makeError(DiagnosticCode::BadFormat, where,
                                "format is '" + *format + "', expected 'ttrace-bundle'"));
        return std::nullopt;
    }
    if (!isReadableFormatVersion(*version)) {
        out.push_back(makeError(DiagnosticCode::UnknownVersion, where,
                                "format_version " + std::to_string(*version) +
                                    " is not supported (this reader understands format_version " +
                                    std::to_string(kOldestFormatVersion) + " to " +
                                    std::to_string(kFormatVersion) + ")"));
        return std::nullopt;
    }
    Manifest m;
    m.formatVersion = *version;
    m.role = top.required<std::string>("role").value_or("");
    m.worldSize = top.required<int>("world_size").value_or(0);
    m.variants = top.optional<std::vector<std::string>>("variants", {"nominal"});
    m.parallel = readParallel(root, top);
    m.precision = top.optional<std::string>("precision", "fp32");
    m.model = top.optional<std::string>("model", "");
    m.iterations = readIterations(root, top);
    m.microBatches = static_cast<int>(top.bounded("micro_batches", 1, 1, kMaxMicroBatches));
    m.producer = top.optional<std::string>("producer", "");
    m.created = top.optional<std::string>("created", "");
    m.captureId = top.optional<std::string>("capture_id", "");
    if (top.failed()) {
        return std::nullopt;
    }
    return m;
}

// The module table; a table of the wrong type or an entry without a name is an error.
void readModules(const json& root, const std::string& where, Manifest& m, Diagnostics& out) {
    if (!root.contains("modules")) {
        return;
    }
    if (!root["modules"].is_array()) {
        out.push_back(makeError(DiagnosticCode::ManifestField, where,
                                "field 'modules' must be a list of modules, not " +
                                    describeJson(root["modules"])));
        return;
    }
    int order = 0;
    for (const auto& jm : root["modules"]) {
        FieldReader fr(jm, where + " modules[" + std::to_string(order) + "]", out);
        if (!jm.is_object()) {
            fr.fail("a module entry must be an object, not " + describeJson(jm));
        }
        ModuleInfo mi;
        mi.name = fr.required<std::string>("name").value_or("");
        mi.order = fr.optional<int>("order", order);
        mi.depth = fr.optional<int>("depth", 0);
        mi.type = fr.optional<std::string>("type", "");
        mi.compiledIn = fr.optional<std::string>("compiled_in", "");
        if (auto held = fr.optional<std::string>("stage_slices", ""); !held.empty()) {
            m.stageSlices[mi.name] = std::move(held);
        }
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

// The coordinates of one rank: an object of non-negative integers.
RankCoords readCoords(const json& jr, FieldReader& fr) {
    RankCoords c;
    if (!jr.is_object() || !jr.contains("coords") || jr["coords"].is_null()) {
        return c;
    }
    const json& j = jr["coords"];
    if (!j.is_object()) {
        fr.fail("field 'coords' must be an object of integers, not " + describeJson(j));
        return c;
    }
    const std::pair<const char*, int*> fields[] = {{"tp", &c.tp}, {"pp", &c.pp}, {"dp", &c.dp},
                                                   {"cp", &c.cp}, {"ep", &c.ep}, {"vpp", &c.vpp}};
    for (const auto& [name, slot] : fields) {
        if (!j.contains(name)) {
            continue;
        }
        const auto v = jsonInteger(j[name]);
        if (!v || *v < 0 || *v >= kMaxParallelSize) {
            fr.fail("field 'coords." + std::string(name) + "' must be an integer in [0, " +
                    std::to_string(kMaxParallelSize) + "), not " + describeJson(j[name]));
            continue;
        }
        *slot = static_cast<int>(*v);
    }
    return c;
}

// One `ranks[index]` entry; nothing when a required field is missing or wrong.
std::optional<RankEntry> readRankEntry(const json& jr, const std::string& loc, Diagnostics& out) {
    FieldReader fr(jr, loc, out);
    RankEntry e;
    e.rank = fr.required<int>("rank").value_or(-1);
    e.file = fr.required<std::string>("file").value_or("");
    // Recorded sizes are checked against the files; a negative one can only be corruption.
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    e.tensors = fr.bounded("tensors", -1, 0, kMax);
    e.bytes = fr.bounded("bytes", -1, 0, kMax);
    e.fileSize = fr.bounded("file_size", -1, 0, kMax);
    if (const auto crc = fr.optional<std::string>("crc32", ""); !crc.empty()) {
        e.crc32 = parseCrc(crc);
        if (!e.crc32) {
            fr.fail("rank " + std::to_string(e.rank) + " crc32 '" + crc + "' is not 8 hex digits");
        }
    }
    e.coords = readCoords(jr, fr);
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
    if (e.file.empty() || e.file.find('/') != std::string::npos ||
        e.file.find("..") != std::string::npos) {
        return "rank " + std::to_string(e.rank) + " file '" + e.file +
               "' must be a plain file name inside the bundle";
    }
    return {};
}

// One diagnostic for all unlisted ranks: a world_size of 2e9 must not build 2e9 messages.
void reportMissingRanks(const std::set<int>& seen, const Manifest& m, const std::string& where,
                        Diagnostics& out) {
    std::vector<int> missing;
    std::size_t count = 0;
    for (int r = 0; r < m.worldSize; ++r) {
        if (!seen.contains(r)) {
            ++count;
            if (missing.size() < 5) {
                missing.push_back(r);
            }
        }
    }
    if (count == 0) {
        return;
    }
    std::string list;
    for (const int r : missing) {
        list += (list.empty() ? "" : ", ") + std::to_string(r);
    }
    const std::string more =
        count > missing.size() ? " and " + std::to_string(count - missing.size()) + " more" : "";
    out.push_back(makeError(DiagnosticCode::MissingRank, where,
                            (count == 1 ? "rank " : "ranks ") + list + more + " of world_size " +
                                std::to_string(m.worldSize) + (count == 1 ? " is" : " are") +
                                " not listed in ranks"));
}

bool readRanks(const json& root, const std::string& where, Manifest& m, Diagnostics& out) {
    if (!root.contains("ranks") || !root["ranks"].is_array()) {
        out.push_back(
            makeError(DiagnosticCode::ManifestField, where, "missing field 'ranks' (an array)"));
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
            out.push_back(makeError(DiagnosticCode::ManifestField, loc, problem));
            continue;
        }
        seen.insert(e->rank);
        m.ranks.push_back(std::move(*e));
    }
    reportMissingRanks(seen, m, where, out);
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
        out.push_back(makeError(DiagnosticCode::ManifestField, where,
                                "role is '" + m->role + "', expected 'reference' or 'candidate'"));
    }
    if (m->variants.empty() || m->variants.front() != "nominal") {
        out.push_back(
            makeError(DiagnosticCode::ManifestField, where, "variants must start with 'nominal'"));
    }
    // Checked before the rank list: an implausible world_size is reported once, not as
    // billions of missing ranks.
    if (!checkWorldSize(*m, where, out)) {
        return std::nullopt;
    }
    readModules(*root, where, *m, out);
    m->optimizer = readOptimizerSection(*root, where, out);
    m->optimizerSharding = readOptimizerSharding(*root, where, out);
    m->gradientConvention = readConventionSection(*root, where, out);
    m->clipSteps = readClippingSection(*root, where, out);
    m->start = readStartSection(*root, where, out);
    m->environment = readEnvironmentSection(*root, where, out);
    if (!readRanks(*root, where, *m, out)) {
        return std::nullopt;
    }
    std::sort(m->ranks.begin(), m->ranks.end(),
              [](const RankEntry& a, const RankEntry& b) { return a.rank < b.rank; });
    std::sort(m->modules.begin(), m->modules.end(),
              [](const ModuleInfo& a, const ModuleInfo& b) { return a.order < b.order; });
    checkManifestPlausible(*m, where, out);
    return m;
}

} // namespace ttrace
