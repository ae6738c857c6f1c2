#include "io/manifest_start.h"

namespace ttrace {

std::optional<RunStart> readStartSection(const nlohmann::json& root, const std::string& where,
                                         Diagnostics& out) {
    if (!root.contains("start")) {
        return std::nullopt;
    }
    const auto& j = root.at("start");
    const bool wellFormed = j.is_object() && j.contains("kind") && j.at("kind").is_string() &&
                            j.contains("step") && j.at("step").is_number_integer() &&
                            j.contains("metadata_sha256") && j.at("metadata_sha256").is_string() &&
                            (!j.contains("checkpoint") || j.at("checkpoint").is_string());
    if (!wellFormed) {
        out.push_back(makeWarning(DiagnosticCode::ManifestStart, where,
                                  "the 'start' section is malformed (it needs 'kind', an "
                                  "integer 'step' and 'metadata_sha256'); the run is read as "
                                  "a fresh start"));
        return std::nullopt;
    }
    RunStart s;
    s.kind = j.at("kind").get<std::string>();
    s.checkpoint = j.value("checkpoint", std::string{});
    s.step = j.at("step").get<std::int64_t>();
    s.metadataSha256 = j.at("metadata_sha256").get<std::string>();
    return s;
}

} // namespace ttrace
