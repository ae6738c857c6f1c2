#include "io/manifest_optimizer.h"

#include "io/manifest_fields.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ttrace {
namespace {

using nlohmann::json;

// What is wrong with the section; caught once, so a bad section gives one warning.
struct SectionError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

const json& member(const json& object, const char* key, const std::string& where) {
    if (!object.is_object() || !object.contains(key)) {
        throw SectionError(where + " lacks '" + key + "'");
    }
    return object.at(key);
}

double finiteNumber(const json& object, const char* key, const std::string& where) {
    const json& v = member(object, key, where);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.0) {
        throw SectionError(where + "." + key + " must be a finite number >= 0, not " +
                           describeJson(v));
    }
    return v.get<double>();
}

std::int64_t integer(const json& object, const char* key, const std::string& where) {
    const auto v = jsonInteger(member(object, key, where));
    if (!v || *v < 0) {
        throw SectionError(where + "." + key + " must be an integer >= 0");
    }
    return *v;
}

bool flag(const json& object, const char* key, const std::string& where) {
    if (!object.contains(key)) {
        return false;
    }
    if (!object.at(key).is_boolean()) {
        throw SectionError(where + "." + key + " must be true or false");
    }
    return object.at(key).get<bool>();
}

std::vector<OptimizerStepInfo> readSteps(const json& group, const std::string& where) {
    const json& steps = member(group, "steps", where);
    if (!steps.is_array()) {
        throw SectionError(where + ".steps must be a list");
    }
    std::vector<OptimizerStepInfo> out;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::string at = where + ".steps[" + std::to_string(i) + "]";
        out.push_back({integer(steps[i], "iteration", at), finiteNumber(steps[i], "lr", at),
                       integer(steps[i], "step", at)});
    }
    return out;
}

OptimizerGroup readGroup(const json& group, const std::string& where) {
    OptimizerGroup g;
    const json& betas = member(group, "betas", where);
    if (!betas.is_array() || betas.size() != 2 || !betas[0].is_number() || !betas[1].is_number()) {
        throw SectionError(where + ".betas must be two numbers");
    }
    g.beta1 = betas[0].get<double>();
    g.beta2 = betas[1].get<double>();
    if (!(g.beta1 >= 0.0 && g.beta1 < 1.0 && g.beta2 > 0.0 && g.beta2 < 1.0)) {
        throw SectionError(where + ".betas must lie in [0, 1) and (0, 1)");
    }
    g.eps = finiteNumber(group, "eps", where);
    g.weightDecay = finiteNumber(group, "weight_decay", where);
    g.amsgrad = flag(group, "amsgrad", where);
    g.maximize = flag(group, "maximize", where);
    if (group.contains("params")) {
        const json& params = group.at("params");
        if (!params.is_array() || !std::all_of(params.begin(), params.end(),
                                               [](const json& p) { return p.is_string(); })) {
            throw SectionError(where + ".params must be a list of names");
        }
        g.params = params.get<std::vector<std::string>>();
    }
    g.steps = readSteps(group, where);
    return g;
}

OptimizerConfig readSection(const json& section) {
    const json& type = member(section, "type", "optimizer");
    if (!type.is_string()) {
        throw SectionError("optimizer.type must be a string");
    }
    OptimizerConfig config;
    config.type = *parseOptimizerType(type.get<std::string>()); // checked by the caller
    const json& groups = member(section, "groups", "optimizer");
    if (!groups.is_array() || groups.empty()) {
        throw SectionError("optimizer.groups must be a non-empty list");
    }
    for (std::size_t i = 0; i < groups.size(); ++i) {
        config.groups.push_back(
            readGroup(groups[i], "optimizer.groups[" + std::to_string(i) + "]"));
    }
    return config;
}

} // namespace

std::optional<OptimizerConfig> readOptimizerSection(const json& root, const std::string& where,
                                                    Diagnostics& out) {
    if (!root.contains("optimizer") || root.at("optimizer").is_null()) {
        return std::nullopt;
    }
    const json& section = root.at("optimizer");
    // A type this reader does not re-evaluate (a newer capture's optimizer) is no error.
    if (section.is_object() && section.contains("type") && section.at("type").is_string() &&
        !parseOptimizerType(section.at("type").get<std::string>())) {
        return std::nullopt;
    }
    try {
        return readSection(section);
    } catch (const SectionError& e) {
        out.push_back(makeWarning(DiagnosticCode::ManifestOptimizer, where,
                                  std::string(e.what()) +
                                      "; optimizer-step tolerances ignore the optimizer"));
    } catch (const json::exception& e) {
        out.push_back(makeWarning(DiagnosticCode::ManifestOptimizer, where,
                                  "optimizer section unreadable (" + std::string(e.what()) +
                                      "); optimizer-step tolerances ignore the optimizer"));
    }
    return std::nullopt;
}

std::optional<OptimizerSharding> readOptimizerSharding(const nlohmann::json& root,
                                                       const std::string& where, Diagnostics& out) {
    if (!root.contains("optimizer_sharding") || root.at("optimizer_sharding").is_null()) {
        return std::nullopt;
    }
    const auto& s = root.at("optimizer_sharding");
    if (!s.is_object() || !s.contains("sharded") || !s.at("sharded").is_boolean()) {
        out.push_back(makeWarning(DiagnosticCode::ManifestOptimizer, where,
                                  "optimizer_sharding needs a boolean 'sharded'; the optimizer's "
                                  "sharding is read from the placements instead"));
        return std::nullopt;
    }
    OptimizerSharding sharding;
    sharding.sharded = s.at("sharded").get<bool>();
    if (s.contains("source") && s.at("source").is_string()) {
        sharding.source = s.at("source").get<std::string>();
    }
    return sharding;
}

} // namespace ttrace
