#include "ttrace/compare/tensor_wire.h"

#include "compare/tensor_json.h"

#include <nlohmann/json.hpp>

namespace ttrace {

std::vector<std::uint8_t> encodeShareResult(const ShareResult& share) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : share.tensors) {
        tensors.push_back(tensorResultJson(t));
    }
    const nlohmann::json doc = {{"wire", "ttrace-share"},       {"version", kTensorWireVersion},
                                {"rank", share.rank},           {"indices", share.indices},
                                {"cancelled", share.cancelled}, {"error", share.error},
                                {"bytes", share.bytes},         {"seconds", share.seconds},
                                {"tensors", std::move(tensors)}};
    // CBOR keeps every finite double exactly; a non-finite one travels as the report and the
    // summary cache hold it, so the finished analysis sees what a cached diff would.
    return nlohmann::json::to_cbor(doc);
}

std::optional<ShareResult> decodeShareResult(const std::vector<std::uint8_t>& bytes,
                                             std::string& error) {
    try {
        const auto doc = nlohmann::json::from_cbor(bytes);
        if (doc.at("wire") != "ttrace-share" || doc.at("version") != kTensorWireVersion) {
            error = "not a share of wire version " + std::to_string(kTensorWireVersion) +
                    " (processes of different ttrace builds?)";
            return std::nullopt;
        }
        ShareResult share;
        share.rank = doc.at("rank");
        share.indices = doc.at("indices").get<std::vector<std::size_t>>();
        share.cancelled = doc.at("cancelled");
        share.error = doc.at("error");
        share.bytes = doc.at("bytes");
        share.seconds = doc.at("seconds");
        for (const auto& t : doc.at("tensors")) {
            share.tensors.push_back(tensorResultFromJson(t));
        }
        if (share.tensors.size() != share.indices.size()) {
            error = "a share of " + std::to_string(share.indices.size()) + " tensors holds " +
                    std::to_string(share.tensors.size()) + " results";
            return std::nullopt;
        }
        return share;
    } catch (const std::exception& e) {
        error = std::string("unreadable share: ") + e.what();
        return std::nullopt;
    }
}

} // namespace ttrace
