#include "io/manifest_environment.h"

#include <stdexcept>

namespace ttrace {
namespace {

using nlohmann::json;

std::map<std::string, std::string> stringMap(const json& j, const char* key, bool anyValue) {
    std::map<std::string, std::string> out;
    if (!j.contains(key)) {
        return out;
    }
    const auto& section = j.at(key);
    if (!section.is_object()) {
        throw std::invalid_argument(std::string("'") + key + "' is not an object");
    }
    for (const auto& [name, value] : section.items()) {
        if (value.is_string()) {
            out[name] = value.get<std::string>();
        } else if (anyValue && (value.is_boolean() || value.is_number())) {
            out[name] = value.dump(); // switches: true, 4, ...
        } else {
            throw std::invalid_argument(std::string("'") + key + "." + name + "' is not a string");
        }
    }
    return out;
}

ModuleKernel kernelFrom(const std::string& module, const json& j) {
    if (!j.is_object() || !j.contains("class") || !j.at("class").is_string()) {
        throw std::invalid_argument("kernel of '" + module + "' lacks its 'class'");
    }
    ModuleKernel k;
    k.className = j.at("class").get<std::string>();
    k.sourceSha256 = j.value("source_sha256", std::string{});
    k.package = j.value("package", std::string{});
    k.tag = j.value("tag", std::string{});
    return k;
}

RunEnvironment environmentFrom(const json& j) {
    if (!j.is_object()) {
        throw std::invalid_argument("it is not an object");
    }
    RunEnvironment e;
    e.versions = stringMap(j, "versions", false);
    e.backends = stringMap(j, "backends", true);
    e.env = stringMap(j, "env", false);
    if (j.contains("devices")) {
        for (const auto& d : j.at("devices")) {
            e.devices.push_back(d.get<std::string>()); // throws on a non-string
        }
    }
    if (j.contains("kernels")) {
        if (!j.at("kernels").is_object()) {
            throw std::invalid_argument("'kernels' is not an object");
        }
        for (const auto& [module, kernel] : j.at("kernels").items()) {
            e.kernels[module] = kernelFrom(module, kernel);
        }
    }
    return e;
}

} // namespace

std::optional<RunEnvironment> readEnvironmentSection(const json& root, const std::string& where,
                                                     Diagnostics& out) {
    if (!root.contains("environment")) {
        return std::nullopt;
    }
    try {
        return environmentFrom(root.at("environment"));
    } catch (const std::exception& e) {
        out.push_back(makeWarning(DiagnosticCode::ManifestEnvironment, where,
                                  std::string("the 'environment' section is malformed (") +
                                      e.what() +
                                      "); the run is compared as one that recorded none"));
        return std::nullopt;
    }
}

} // namespace ttrace
