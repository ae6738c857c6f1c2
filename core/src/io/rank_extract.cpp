#include "io/rank_extract.h"

#include "io/h5_handle.h"

namespace ttrace {

std::vector<AttrFact> extractAttrs(hid_t object, const std::vector<const char*>& names) {
    std::vector<AttrFact> out;
    for (const char* name : names) {
        if (!h5::hasAttr(object, name)) {
            continue;
        }
        AttrFact fact;
        fact.name = name;
        fact.text = h5::readStringAttr(object, name);
        if (auto ints = h5::readIntArrayAttr(object, name)) {
            fact.ints = IntArrayFact{std::move(ints->values), std::move(ints->dims)};
        }
        out.push_back(std::move(fact));
    }
    return out;
}

RankFacts extractRankFacts(const std::filesystem::path& file) {
    RankFacts facts;
    h5::silenceErrorPrinting();
    h5::File handle = h5::openReadOnly(file.string());
    if (!handle) {
        facts.openError = h5::lastErrorMessage();
        return facts;
    }
    // A root object header HDF5 cannot read (its checksum fails in files with version-2
    // object headers) is damage, not a file of another format: a missing attribute reads 0
    // here, an unreadable header an error.
    if (H5Aexists(handle.get(), "format") < 0) {
        facts.openError = "its root object header cannot be read: " + h5::lastErrorMessage();
        return facts;
    }
    facts.opened = true;
    facts.rootAttrs = extractAttrs(handle.get(), rootAttrNames());
    const herr_t status = H5Ovisit2(
        handle.get(), H5_INDEX_NAME, H5_ITER_INC,
        [](hid_t obj, const char* name, const H5O_info_t* info, void* data) -> herr_t {
            if (info->type == H5O_TYPE_DATASET) {
                static_cast<RankFacts*>(data)->datasets.push_back(extractDatasetFacts(obj, name));
            }
            return 0;
        },
        &facts, H5O_INFO_BASIC);
    if (status < 0) {
        facts.walkFailed = true;
        facts.walkError = h5::lastErrorMessage();
    }
    return facts;
}

} // namespace ttrace
