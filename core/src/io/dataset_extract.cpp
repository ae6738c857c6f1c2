// The per-dataset half of the extractor: type, dataspace, storage and attributes.
#include "io/h5_handle.h"
#include "io/rank_extract.h"

#include <array>

namespace ttrace {
namespace {

using PropertyList = h5::Handle<H5Pclose>;

StorageClass storageClass(hid_t type) {
    switch (H5Tget_class(type)) {
    case H5T_FLOAT: return StorageClass::Float;
    case H5T_ENUM: return StorageClass::Enum;
    case H5T_INTEGER:
        return H5Tget_sign(type) == H5T_SGN_NONE ? StorageClass::UnsignedInt
               : H5Tget_sign(type) == H5T_SGN_2  ? StorageClass::SignedInt
                                                 : StorageClass::Other;
    default: return StorageClass::Other;
    }
}

NativeType nativeType(hid_t type) {
    const std::pair<hid_t, NativeType> candidates[] = {
        {H5T_NATIVE_DOUBLE, NativeType::Float64}, {H5T_NATIVE_FLOAT, NativeType::Float32},
        {H5T_NATIVE_UINT16, NativeType::UInt16},  {H5T_NATIVE_INT64, NativeType::Int64},
        {H5T_NATIVE_INT32, NativeType::Int32},    {H5T_NATIVE_UINT8, NativeType::UInt8}};
    for (const auto& [native, kind] : candidates) {
        if (H5Tequal(type, native) > 0) {
            return kind;
        }
    }
    return NativeType::None;
}

void extractShape(hid_t dataset, DatasetFacts& facts) {
    h5::Dataspace space(H5Dget_space(dataset));
    const int ndims = space ? H5Sget_simple_extent_ndims(space.get()) : -1;
    std::array<hsize_t, 32> dims{};
    if (ndims < 0 || ndims > static_cast<int>(dims.size())) {
        facts.ndims = -1;
        return;
    }
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    facts.ndims = ndims;
    facts.dims.assign(dims.begin(), dims.begin() + ndims);
}

StoredLayout storedLayout(H5D_layout_t layout) {
    switch (layout) {
    case H5D_CONTIGUOUS: return StoredLayout::Contiguous;
    case H5D_CHUNKED: return StoredLayout::Chunked;
    case H5D_COMPACT: return StoredLayout::Compact;
    default: return StoredLayout::Other;
    }
}

void extractStorage(hid_t dataset, DatasetFacts& facts) {
    const PropertyList dcpl(H5Dget_create_plist(dataset));
    if (!dcpl) {
        facts.layout = StoredLayout::Unreadable;
        return;
    }
    facts.layout = storedLayout(H5Pget_layout(dcpl.get()));
    if (facts.layout == StoredLayout::Other) {
        return; // virtual: nothing else about it matters
    }
    facts.externalFiles = H5Pget_external_count(dcpl.get());
    facts.filters = H5Pget_nfilters(dcpl.get());
    facts.storedBytes = static_cast<std::int64_t>(H5Dget_storage_size(dataset));
    if (facts.layout == StoredLayout::Contiguous) {
        const haddr_t offset = H5Dget_offset(dataset);
        if (offset != HADDR_UNDEF) {
            facts.offset = static_cast<std::int64_t>(offset);
        }
    }
}

} // namespace

DatasetFacts extractDatasetFacts(hid_t file, const char* name) {
    DatasetFacts facts;
    facts.path = std::string("/") + name;
    h5::Dataset dataset(H5Dopen2(file, name, H5P_DEFAULT));
    if (!dataset) {
        facts.openError = h5::lastErrorMessage();
        return facts;
    }
    facts.opened = true;
    h5::Datatype type(H5Dget_type(dataset.get()));
    if (type) {
        facts.typeClass = storageClass(type.get());
        facts.typeSize = static_cast<std::int64_t>(H5Tget_size(type.get()));
        facts.native = nativeType(type.get());
    }
    extractShape(dataset.get(), facts);
    extractStorage(dataset.get(), facts);
    facts.attrs = extractAttrs(dataset.get(), datasetAttrNames());
    return facts;
}

} // namespace ttrace
