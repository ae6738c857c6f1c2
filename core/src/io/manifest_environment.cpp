#include "io/manifest_environment.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace ttrace {
namespace {

using nlohmann::json;

// Field names in messages are the manifest's own paths ("environment.versions.torch"), so a
// user editing the file by hand finds the field.
std::string field(const std::string& path) {
    return "'environment." + path + "'";
}

std::map<std::string, std::string> stringMap(const json& j, const char* key, bool anyValue) {
    std::map<std::string, std::string> out;
    if (!j.contains(key)) {
        return out;
    }
    const auto& section = j.at(key);
    if (!section.is_object()) {
        throw std::invalid_argument(field(key) + " is not an object");
    }
    for (const auto& [name, value] : section.items()) {
        if (value.is_string()) {
            out[name] = value.get<std::string>();
        } else if (anyValue && (value.is_boolean() || value.is_number())) {
            out[name] = value.dump(); // switches: true, 4, ...
        } else {
            throw std::invalid_argument(field(std::string(key) + "." + name) + " is not a " +
                                        (anyValue ? "string, number or boolean" : "string"));
        }
    }
    return out;
}

// An optional string member of a kernel entry ("" when absent).
std::string optionalString(const json& j, const char* key, const std::string& module) {
    if (!j.contains(key)) {
        return {};
    }
    if (!j.at(key).is_string()) {
        throw std::invalid_argument(field("kernels." + module + "." + key) + " is not a string");
    }
    return j.at(key).get<std::string>();
}

ModuleKernel kernelFrom(const std::string& module, const json& j) {
    if (!j.is_object() || !j.contains("class") || !j.at("class").is_string()) {
        throw std::invalid_argument(field("kernels." + module + ".class") +
                                    " is missing or not a string");
    }
    ModuleKernel k;
    k.className = j.at("class").get<std::string>();
    k.sourceSha256 = optionalString(j, "source_sha256", module);
    k.package = optionalString(j, "package", module);
    k.tag = optionalString(j, "tag", module);
    return k;
}

std::vector<std::string> devicesFrom(const json& j) {
    std::vector<std::string> out;
    if (!j.contains("devices")) {
        return out;
    }
    const auto& devices = j.at("devices");
    if (!devices.is_array()) {
        throw std::invalid_argument(field("devices") + " is not an array");
    }
    for (std::size_t i = 0; i < devices.size(); ++i) {
        if (!devices[i].is_string()) {
            throw std::invalid_argument(field("devices[" + std::to_string(i) + "]") +
                                        " is not a string");
        }
        out.push_back(devices[i].get<std::string>());
    }
    return out;
}

RunEnvironment environmentFrom(const json& j) {
    if (!j.is_object()) {
        throw std::invalid_argument("'environment' is not an object");
    }
    RunEnvironment e;
    e.versions = stringMap(j, "versions", false);
    e.backends = stringMap(j, "backends", true);
    e.env = stringMap(j, "env", false);
    e.devices = devicesFrom(j);
    if (j.contains("kernels")) {
        if (!j.at("kernels").is_object()) {
            throw std::invalid_argument(field("kernels") + " is not an object");
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
