#include "ttrace/compare/report_json.h"

#include "compare/tensor_json.h"
#include "compare/timeline.h"
#include "ttrace/compare/verdict.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <utility>

namespace ttrace {
namespace {

using nlohmann::json;

// JSON has no infinity: a non-finite number is written as null (an exact comparison that
// failed, or a NaN/Inf the reference does not have) and read back as +inf.
json num(double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}
double num(const json& j) {
    return j.is_null() ? std::numeric_limits<double>::infinity() : j.get<double>();
}
// A number that older documents do not have: 0 when absent.
double optionalNum(const json& j, const char* key) {
    return j.contains(key) ? num(j.at(key)) : 0.0;
}

// Tolerance terms added after the first format: written and read from this one list, read as 0
// from documents that predate them.
constexpr std::pair<const char*, double Tolerance::*> kLaterToleranceTerms[] = {
    {"carried_floor_mean", &Tolerance::carriedMean},
    {"reduction_length", &Tolerance::reductionLength},
    {"storage_roundings", &Tolerance::storageRoundings},
    {"carried_parameter_error", &Tolerance::carriedParameterError},
    {"reduction_order", &Tolerance::reductionOrder},
    {"own_reduction_length", &Tolerance::ownReductionLength},
    {"floor_min", &Tolerance::floorMin},
    {"floor_max", &Tolerance::floorMax},
    {"floor_disagreement", &Tolerance::floorDisagreement},
};

json toJson(const Diagnostic& d) {
    return {{"severity", d.severity == Severity::Error ? "error" : "warning"},
            {"code", d.code.name()},
            {"location", d.location},
            {"message", d.message}};
}
Diagnostic diagnosticFrom(const json& j) {
    const auto name = j.at("code").get<std::string>();
    const auto code = parseDiagnosticCode(name);
    if (!code) {
        throw std::runtime_error("unknown diagnostic code '" + name + "'");
    }
    return {j.at("severity") == "error" ? Severity::Error : Severity::Warning, *code,
            j.at("location"), j.at("message")};
}
json toJson(const Diagnostics& ds) {
    json a = json::array();
    for (const auto& d : ds) {
        a.push_back(toJson(d));
    }
    return a;
}
Diagnostics diagnosticsFrom(const json& j) {
    Diagnostics out;
    for (const auto& d : j) {
        out.push_back(diagnosticFrom(d));
    }
    return out;
}

json toJson(const ShapeSignature& s) {
    return {{"kind", signatureKindName(s.kind)},
            {"summary", s.summary},
            {"evidence", s.evidence},
            {"factor", num(s.factor)},
            {"residual", num(s.residual)},
            {"ranks", s.ranks},
            {"indices", s.indices}};
}

ShapeSignature signatureFrom(const json& j) {
    ShapeSignature s;
    if (const auto kind = parseSignatureKind(j.at("kind").get<std::string>())) {
        s.kind = *kind;
    }
    s.summary = j.at("summary");
    s.evidence = j.at("evidence");
    s.factor = num(j.at("factor"));
    s.residual = j.contains("residual") ? num(j.at("residual")) : 0.0;
    s.ranks = j.at("ranks").get<std::vector<int>>();
    s.indices = j.at("indices").get<std::vector<std::int64_t>>();
    return s;
}

json toJson(const InvalidReason& w) {
    if (w.empty()) {
        return nullptr;
    }
    return {{"reference_shape", w.referenceShape},   {"candidate_shape", w.candidateShape},
            {"candidate_layout", w.candidateLayout}, {"layout_note", w.layoutNote},
            {"annotate_hint", w.annotateHint},       {"text", w.toString()}};
}

InvalidReason invalidFrom(const json& j) {
    InvalidReason w;
    if (j.is_object()) {
        w.referenceShape = j.at("reference_shape");
        w.candidateShape = j.at("candidate_shape");
        w.candidateLayout = j.at("candidate_layout");
        w.layoutNote = j.at("layout_note");
        w.annotateHint = j.at("annotate_hint");
    }
    return w;
}

// How an inferred placement was settled; null when the capture recorded no alternatives.
json resolutionJson(const PlacementResolution& p) {
    if (p.empty() && p.excluded.empty()) {
        return nullptr;
    }
    return {{"hypothesis", p.hypothesis},
            {"chosen", p.chosen.empty() ? json(nullptr) : json(p.chosen)},
            {"alternatives", p.alternatives},
            {"excluded", p.excluded},
            {"text", p.toString()}};
}

PlacementResolution resolutionFrom(const json& j) {
    PlacementResolution p;
    p.hypothesis = j.value("hypothesis", std::string());
    if (j.contains("chosen") && j.at("chosen").is_string()) {
        p.chosen = j.at("chosen");
    }
    p.alternatives = j.value("alternatives", std::vector<std::string>{});
    p.excluded = j.value("excluded", std::vector<std::string>{});
    return p;
}

// Shape diagnosis, bug-class hint and invalid reason (absent in documents of older builds).
json findingsJson(const TensorResult& t) {
    json sigs = json::array();
    for (const auto& s : t.signatures) {
        sigs.push_back(toJson(s));
    }
    json hint = t.hint.text.empty() ? json(nullptr)
                                    : json{{"bug_class", t.hint.bugClass}, {"text", t.hint.text}};
    return {{"diagnosis", sigs},
            {"hint", hint},
            {"invalid_reason", toJson(t.invalid)},
            {"structure", structuralChangeName(t.structure)},
            {"placement_resolution", resolutionJson(t.resolution)}};
}

void readFindings(const json& j, TensorResult& t) {
    for (const auto& s : j.value("diagnosis", json::array())) {
        t.signatures.push_back(signatureFrom(s));
    }
    if (j.contains("hint") && j.at("hint").is_object()) {
        t.hint = {j.at("hint").at("bug_class"), j.at("hint").at("text")};
    }
    if (j.contains("placement_resolution") && j.at("placement_resolution").is_object()) {
        t.resolution = resolutionFrom(j.at("placement_resolution"));
    }
    if (j.contains("invalid_reason")) {
        t.invalid = invalidFrom(j.at("invalid_reason"));
    }
    if (j.contains("structure")) {
        t.structure =
            parseStructuralChange(j.at("structure").get<std::string>()).value_or(t.structure);
    }
}

json topElementsJson(const std::vector<ElementDetail>& elements) {
    json out = json::array();
    for (const auto& e : elements) {
        out.push_back({{"index", e.index},
                       {"error", num(e.error)},
                       {"tolerance", num(e.tolerance)},
                       {"conditioning", num(e.conditioning)}});
    }
    return out;
}

void readConditioning(const json& j, TensorResult& t) {
    auto& c = t.conditioning;
    const auto& tol = j.at("tolerance_detail");
    c.relative = tol.contains("conditioning") ? num(tol.at("conditioning")) : 0.0;
    c.conditionedError =
        j.contains("conditioned_error") ? num(j.at("conditioned_error")) : t.metrics.relError;
    c.illConditioned = j.value("ill_conditioned_elements", std::int64_t{0});
    for (const auto& e : j.value("top_elements", json::array())) {
        c.topElements.push_back(
            {e.at("index"), num(e.at("error")), num(e.at("tolerance")), num(e.at("conditioning"))});
    }
}

// A tensor's "provisional" reason; None when absent, null or not one this build knows.
Provisional readProvisional(const json& j) {
    const auto it = j.find("provisional");
    if (it == j.end() || !it->is_string()) {
        return Provisional::None;
    }
    return parseProvisional(it->get<std::string>()).value_or(Provisional::None);
}

json idJson(const TensorId& id) {
    return {{"variant", id.variant},           {"iteration", id.iteration},
            {"micro_batch", id.microBatch},    {"module", id.module},
            {"kind", tensorKindName(id.kind)}, {"index", id.index}};
}

json metricsJson(const TensorMetrics& m) {
    json shards = json::array();
    for (const auto& s : m.shards) {
        shards.push_back(
            {{"rank", s.rank}, {"elements", s.elements}, {"rel_error", num(s.relError)}});
    }
    return {{"rel_error", num(m.relError)},
            {"max_abs_error", num(m.maxAbsError)},
            {"cosine", num(m.cosine)},
            {"ref_norm", num(m.refNorm)},
            {"cand_norm", num(m.candNorm)},
            {"elements", m.elements},
            {"ref_nan", m.refNaN},
            {"ref_inf", m.refInf},
            {"cand_nan", m.candNaN},
            {"cand_inf", m.candInf},
            {"non_finite_mismatch", m.nonFiniteMismatch},
            {"shards", shards}};
}

json toleranceJson(const Tolerance& tol, double conditioning) {
    json j = {{"value", num(tol.value)},
              {"source", tol.source.name()},
              {"analytic", num(tol.analytic)},
              {"empirical", tol.empirical ? num(*tol.empirical) : json(nullptr)},
              {"floor_mean", num(tol.floorMean)},
              {"floor_spread", num(tol.floorSpread)},
              {"perturbed_samples", tol.perturbedSamples},
              {"depth", tol.depth},
              {"eps", tol.eps},
              {"conditioning", num(conditioning)}};
    for (const auto& [key, term] : kLaterToleranceTerms) {
        j[key] = num(tol.*term);
    }
    return j;
}

json toJson(const TensorResult& t) {
    const auto& tol = t.tolerance;
    return {
        {"id", idJson(t.id)},
        {"label", t.id.label()},
        {"shape", t.shape},
        {"dtype", dtypeName(t.dtype)},
        {"placement", t.placement},
        {"placement_source", t.placementSource == PlacementSource::Unknown
                                 ? json(nullptr)
                                 : json(placementSourceName(t.placementSource))},
        {"status", statusName(t.status)},
        {"ratio", num(t.ratio)},
        {"error", num(t.metrics.relError)},
        {"tolerance", num(tol.value)},
        {"unstable_floor", unstableFloor(tol)},
        {"provisional", tol.provisional == Provisional::None
                            ? json(nullptr)
                            : json(provisionalName(tol.provisional))},
        {"metrics", metricsJson(t.metrics)},
        {"tolerance_detail", toleranceJson(tol, t.conditioning.relative)},
        {"conditioned_error", num(t.conditioning.conditionedError)},
        {"ill_conditioned_elements", t.conditioning.illConditioned},
        {"top_elements", topElementsJson(t.conditioning.topElements)},
        {"histogram",
         {{"edges", t.histogram.edges},
          {"counts", t.histogram.counts},
          {"exact_zero", t.histogram.exactZero},
          {"non_finite", t.histogram.nonFinite}}},
        {"findings", toJson(t.findings)},
    };
}

json tensorJson(const TensorResult& t) {
    json j = toJson(t);
    j.update(findingsJson(t));
    return j;
}

Status statusFrom(const std::string& s) {
    if (const auto status = parseStatus(s)) {
        return *status;
    }
    throw std::runtime_error("unknown status '" + s + "'");
}

TensorId idFrom(const json& id) {
    TensorId out;
    out.variant = id.at("variant");
    out.iteration = id.at("iteration");
    out.microBatch = id.at("micro_batch");
    out.module = id.at("module");
    const auto kind = parseTensorKind(id.at("kind").get<std::string>());
    if (!kind) {
        throw std::runtime_error("unknown kind");
    }
    out.kind = *kind;
    out.index = id.at("index");
    return out;
}

TensorMetrics metricsFrom(const json& m) {
    TensorMetrics out;
    out.relError = num(m.at("rel_error"));
    out.maxAbsError = num(m.at("max_abs_error"));
    out.cosine = num(m.at("cosine"));
    out.refNorm = num(m.at("ref_norm"));
    out.candNorm = num(m.at("cand_norm"));
    out.elements = m.at("elements");
    out.refNaN = m.at("ref_nan");
    out.refInf = m.at("ref_inf");
    out.candNaN = m.at("cand_nan");
    out.candInf = m.at("cand_inf");
    out.nonFiniteMismatch = m.at("non_finite_mismatch");
    for (const auto& s : m.at("shards")) {
        out.shards.push_back({s.at("rank"), s.at("elements"), num(s.at("rel_error"))});
    }
    return out;
}

// The tolerance's fields; its provisional reason is read from the tensor, beside it.
void readTolerance(const json& tol, Tolerance& out) {
    out.value = num(tol.at("value"));
    const auto source = tol.at("source").get<std::string>();
    const auto parsed = kToleranceSourceNames.parse(source);
    if (!parsed) {
        throw std::runtime_error("unknown tolerance source '" + source + "'");
    }
    out.source = *parsed;
    out.analytic = num(tol.at("analytic"));
    if (!tol.at("empirical").is_null()) {
        out.empirical = tol.at("empirical").get<double>();
    }
    out.floorMean = num(tol.at("floor_mean"));
    out.floorSpread = num(tol.at("floor_spread"));
    out.perturbedSamples = tol.at("perturbed_samples");
    out.depth = tol.at("depth");
    out.eps = tol.at("eps");
    for (const auto& [key, term] : kLaterToleranceTerms) {
        out.*term = optionalNum(tol, key);
    }
}

TensorResult tensorFrom(const json& j) {
    TensorResult t;
    t.id = idFrom(j.at("id"));
    t.shape = j.at("shape").get<Shape>();
    const auto dtype = parseDType(j.at("dtype").get<std::string>());
    if (!dtype) {
        throw std::runtime_error("unknown dtype");
    }
    t.dtype = *dtype;
    t.placement = j.at("placement");
    if (const auto it = j.find("placement_source"); it != j.end() && it->is_string()) {
        t.placementSource = parsePlacementSource(it->get<std::string>());
    }
    t.status = statusFrom(j.at("status"));
    t.ratio = num(j.at("ratio"));
    t.metrics = metricsFrom(j.at("metrics"));
    readTolerance(j.at("tolerance_detail"), t.tolerance);
    t.tolerance.provisional = readProvisional(j);
    readConditioning(j, t);
    const auto& h = j.at("histogram");
    t.histogram.edges = h.at("edges").get<std::vector<double>>();
    t.histogram.counts = h.at("counts").get<std::vector<std::int64_t>>();
    t.histogram.exactZero = h.at("exact_zero");
    t.histogram.nonFinite = h.at("non_finite");
    t.findings = diagnosticsFrom(j.at("findings"));
    readFindings(j, t);
    return t;
}

json toJson(const ModuleResult& m) {
    return {{"name", m.name},
            {"type", m.type},
            {"order", m.order},
            {"depth", m.depth},
            {"status", statusName(m.status)},
            {"origin", originName(m.origin)},
            {"max_ratio", num(m.maxRatio)},
            {"input_ratio", num(m.inputRatio)},
            {"output_ratio", num(m.outputRatio)},
            {"tensors", m.tensors}};
}

ModuleResult moduleFrom(const json& j) {
    ModuleResult m;
    m.name = j.at("name");
    m.type = j.at("type");
    m.order = j.at("order");
    m.depth = j.at("depth");
    m.status = statusFrom(j.at("status"));
    if (const auto origin = parseOrigin(j.at("origin").get<std::string>())) {
        m.origin = *origin;
    }
    m.maxRatio = num(j.at("max_ratio"));
    m.inputRatio = num(j.at("input_ratio"));
    m.outputRatio = num(j.at("output_ratio"));
    m.tensors = j.at("tensors").get<std::vector<std::size_t>>();
    return m;
}

json optionalName(const std::optional<std::string>& s) {
    return s ? json(*s) : json(nullptr);
}

// The first divergence on the timeline (docs/diff-json.md, "Timeline"), plus the first
// forward and backward divergences by module.
json firstDivergenceJson(const DiffResult& r) {
    json j = {{"forward", optionalName(r.firstForwardDivergence)},
              {"backward", optionalName(r.firstBackwardDivergence)}};
    j["earlier_uncompared"] = r.earlierUncompared ? json{{"tensor", *r.earlierUncompared},
                                                         {"text", earlierUncomparedText(r)}}
                                                  : json(nullptr);
    if (!r.firstDivergence) {
        for (const char* key : {"iteration", "phase", "micro_batch", "module", "kind", "ranks",
                                "tensor", "also_in_phase"}) {
            j[key] = nullptr;
        }
        return j;
    }
    const auto& f = *r.firstDivergence;
    j["iteration"] = f.iteration;
    j["phase"] = phaseName(f.phase);
    j["micro_batch"] = f.microBatch;
    j["module"] = f.module;
    j["kind"] = tensorKindName(f.kind);
    j["ranks"] = f.ranks;
    j["tensor"] = f.tensor;
    j["also_in_phase"] = f.alsoInPhase;
    return j;
}

json conventionJson(const std::optional<ConventionMismatch>& c) {
    if (!c) {
        return nullptr;
    }
    return {{"factor", num(c->factor)},
            {"factor_name", c->factorName},
            {"tensors", c->tensors},
            {"declared", c->declared},
            {"text", c->toString()}};
}

std::optional<ConventionMismatch> conventionFrom(const json& doc) {
    if (!doc.contains("convention_mismatch") || !doc.at("convention_mismatch").is_object()) {
        return std::nullopt;
    }
    const auto& j = doc.at("convention_mismatch");
    return ConventionMismatch{num(j.at("factor")), j.at("factor_name"), j.at("tensors"),
                              j.at("declared")};
}

json clippingJson(const std::vector<ClipComparison>& steps) {
    json out = json::array();
    for (const auto& c : steps) {
        out.push_back({{"iteration", c.iteration},
                       {"reference_norm", num(c.referenceNorm)},
                       {"candidate_norm", num(c.candidateNorm)},
                       {"factor", num(c.factor)},
                       {"reference_norm_error", num(c.referenceNormError)},
                       {"candidate_norm_error", num(c.candidateNormError)},
                       {"consistent", c.consistent},
                       {"moved", c.moved},
                       {"text", c.toString()}});
    }
    return out;
}

std::vector<ClipComparison> clippingFrom(const json& doc) {
    std::vector<ClipComparison> out;
    if (!doc.contains("clipping") || !doc.at("clipping").is_array()) {
        return out;
    }
    for (const auto& j : doc.at("clipping")) {
        ClipComparison c;
        c.iteration = j.at("iteration");
        c.referenceNorm = num(j.at("reference_norm"));
        c.candidateNorm = num(j.at("candidate_norm"));
        c.factor = num(j.at("factor"));
        c.referenceNormError = num(j.at("reference_norm_error"));
        c.candidateNormError = num(j.at("candidate_norm_error"));
        c.consistent = j.at("consistent");
        c.moved = j.at("moved");
        out.push_back(c);
    }
    return out;
}

// A module's tensor list and the convention's count point into `tensors`; a file that says
// otherwise would send every reader past the end of the vector.
std::optional<std::string> outOfRangeIndex(const DiffResult& r) {
    for (const auto& m : r.modules) {
        for (const auto i : m.tensors) {
            if (i >= r.tensors.size()) {
                return "module '" + m.name + "' names tensor " + std::to_string(i) + " of " +
                       std::to_string(r.tensors.size());
            }
        }
    }
    for (const auto& t : r.tensors) {
        if (!t.histogram.counts.empty() &&
            t.histogram.edges.size() + 1 < t.histogram.counts.size()) {
            return "tensor '" + t.id.module + "' has a histogram of " +
                   std::to_string(t.histogram.counts.size()) + " bins and " +
                   std::to_string(t.histogram.edges.size()) + " edges";
        }
        for (const auto d : t.shape) {
            if (d < 0) {
                return "tensor '" + t.id.module + "' has a negative dimension";
            }
        }
    }
    return std::nullopt;
}

} // namespace

std::string diffResultToJson(const DiffResult& r, bool pretty) {
    const auto& s = r.summary;
    json doc = {
        {"schema", kDiffJsonSchema},
        {"schema_version", kDiffJsonVersion},
        {"summary",
         {{"reference", s.referenceDir},
          {"candidate", s.candidateDir},
          {"precision", s.precision},
          {"reference_ranks", s.referenceRanks},
          {"candidate_ranks", s.candidateRanks},
          {"reference_layout", s.referenceLayout},
          {"candidate_layout", s.candidateLayout},
          {"reference_role", s.referenceRole},
          {"compared", s.compared},
          {"divergent", s.divergent},
          {"missing", s.missing},
          {"invalid", s.invalid},
          {"structural", s.structural},
          {"unresolved", s.unresolved},
          {"perturbed_variants", s.perturbedVariants},
          {"max_ratio", num(s.maxRatio)},
          {"provisional", s.provisional},
          {"provisional_over_bound", s.provisionalOverBound},
          {"provisional_max_ratio", num(s.provisionalMaxRatio)},
          {"unstable_floors", s.unstableFloors},
          {"unstable_over_bound", s.unstableOverBound},
          {"unstable_max_ratio", num(s.unstableMaxRatio)},
          {"clean", s.clean},
          {"drift", s.drift},
          {"drift_max_ratio", num(s.driftMaxRatio)},
          {"drift_bound", num(s.driftBound)},
          {"environment_recorded", s.environmentRecorded},
          {"environment_changes", s.environmentChanges},
          {"gradient_convention",
           s.gradientConvention.empty() ? json(nullptr) : json(s.gradientConvention)},
          {"verdict", runVerdictName(runVerdict(r))},
          {"exit_code", exitCodeFor(r)},
          {"cancelled", r.cancelled}}},
        {"first_divergence", firstDivergenceJson(r)},
        {"timeline", r.timeline},
        {"diagnostics", toJson(r.diagnostics)},
        {"convention_mismatch", conventionJson(r.convention)},
        {"clipping", clippingJson(r.clipping)},
    };
    json modules = json::array();
    for (const auto& m : r.modules) {
        modules.push_back(toJson(m));
    }
    doc["modules"] = std::move(modules);
    json tensors = json::array();
    for (const auto& t : r.tensors) {
        tensors.push_back(tensorJson(t));
    }
    doc["tensors"] = std::move(tensors);
    // Names come from files: bytes that are not UTF-8 must not abort the writer.
    return doc.dump(pretty ? 1 : -1, ' ', false, nlohmann::json::error_handler_t::replace) +
           (pretty ? "\n" : "");
}

std::optional<DiffResult> diffResultFromJson(std::string_view text, std::string& error) {
    try {
        const json doc = json::parse(text);
        if (!isDiffDocument(doc)) {
            error =
                "not a ttrace-diff document of schema version " + std::to_string(kDiffJsonVersion);
            return std::nullopt;
        }
        return diffResultFromDocument(doc, error);
    } catch (const std::exception& e) {
        error = e.what();
        return std::nullopt;
    }
}

bool isDiffDocument(const nlohmann::json& doc) {
    const auto schema = doc.find("schema");
    const auto version = doc.find("schema_version");
    return doc.is_object() && schema != doc.end() && version != doc.end() &&
           *schema == kDiffJsonSchema && *version == kDiffJsonVersion;
}

namespace {

DiffSummary summaryFrom(const json& s) {
    DiffSummary out;
    out.referenceDir = s.at("reference");
    out.candidateDir = s.at("candidate");
    out.precision = s.at("precision");
    out.referenceRanks = s.at("reference_ranks");
    out.candidateRanks = s.at("candidate_ranks");
    out.referenceLayout = s.value("reference_layout", std::string());
    out.candidateLayout = s.value("candidate_layout", std::string());
    out.referenceRole = s.value("reference_role", std::string("reference"));
    out.compared = s.at("compared");
    out.divergent = s.at("divergent");
    out.missing = s.at("missing");
    out.invalid = s.at("invalid");
    out.structural = s.value("structural", std::size_t{0});
    out.unresolved = s.value("unresolved", std::size_t{0});
    out.perturbedVariants = s.at("perturbed_variants");
    out.maxRatio = num(s.at("max_ratio"));
    out.provisional = s.value("provisional", std::size_t{0});
    out.drift = s.value("drift", std::size_t{0});
    out.driftMaxRatio = optionalNum(s, "drift_max_ratio");
    out.driftBound = optionalNum(s, "drift_bound");
    out.environmentRecorded = s.value("environment_recorded", false);
    out.environmentChanges = s.value("environment_changes", std::vector<std::string>{});
    out.provisionalOverBound = s.value("provisional_over_bound", std::size_t{0});
    out.provisionalMaxRatio = optionalNum(s, "provisional_max_ratio");
    out.unstableFloors = s.value("unstable_floors", std::size_t{0});
    out.unstableOverBound = s.value("unstable_over_bound", std::size_t{0});
    out.unstableMaxRatio = optionalNum(s, "unstable_max_ratio");
    out.clean = s.at("clean");
    if (s.contains("gradient_convention") && s.at("gradient_convention").is_string()) {
        out.gradientConvention = s.at("gradient_convention");
    }
    return out;
}

void readFirstDivergence(const json& first, DiffResult& r) {
    if (!first.at("forward").is_null()) {
        r.firstForwardDivergence = first.at("forward").get<std::string>();
    }
    if (!first.at("backward").is_null()) {
        r.firstBackwardDivergence = first.at("backward").get<std::string>();
    }
}

} // namespace

std::optional<DiffResult> diffResultFromDocument(const nlohmann::json& doc, std::string& error) {
    try {
        DiffResult r;
        const auto& s = doc.at("summary");
        r.summary = summaryFrom(s);
        r.cancelled = s.at("cancelled");
        r.convention = conventionFrom(doc);
        r.clipping = clippingFrom(doc);
        readFirstDivergence(doc.at("first_divergence"), r);
        r.diagnostics = diagnosticsFrom(doc.at("diagnostics"));
        for (const auto& m : doc.at("modules")) {
            r.modules.push_back(moduleFrom(m));
        }
        for (const auto& t : doc.at("tensors")) {
            r.tensors.push_back(tensorFrom(t));
        }
        // Indices into the tensors come from the file: checked before anything follows them.
        if (auto bad = outOfRangeIndex(r)) {
            error = *bad;
            return std::nullopt;
        }
        // The timeline is derived from modules and tensors: rebuilt, not trusted from the file.
        buildTimeline(r);
        return r;
    } catch (const std::exception& e) {
        error = e.what();
        return std::nullopt;
    }
}

nlohmann::json tensorResultJson(const TensorResult& tensor) {
    return tensorJson(tensor);
}

TensorResult tensorResultFromJson(const nlohmann::json& j) {
    return tensorFrom(j);
}

} // namespace ttrace
