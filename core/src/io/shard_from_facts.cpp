#include "io/shard_from_facts.h"

#include "io/placement_alternatives.h"
#include "io/storage_check.h"
#include "ttrace/io/checked_math.h"
#include "ttrace/io/placement_attributes.h"

#include <utility>

namespace ttrace {
namespace {

using Attrs = std::vector<AttrFact>;

// Whether the HDF5 storage type can hold `dtype` bit-exactly as the format prescribes. The
// sign matters: bfloat16 bits stored as int16 would be clamped by HDF5's conversion to uint16.
bool storageMatches(const DatasetFacts& d, DType dtype) {
    const auto size = d.typeSize;
    const bool isUnsigned = d.typeClass == StorageClass::UnsignedInt;
    const bool isSigned = d.typeClass == StorageClass::SignedInt;
    switch (dtype) {
    case DType::Float64: return d.typeClass == StorageClass::Float && size == 8;
    case DType::Float32: return d.typeClass == StorageClass::Float && size == 4;
    case DType::Float16:
    case DType::BFloat16: return isUnsigned && size == 2;
    case DType::Int64: return isSigned && size == 8;
    case DType::Int32: return isSigned && size == 4;
    case DType::Float8E4M3:
    case DType::Float8E5M2:
    case DType::UInt8: return isUnsigned && size == 1;
    case DType::Bool:
        // h5py stores numpy bool as an HDF5 enum of one byte.
        return (isUnsigned || d.typeClass == StorageClass::Enum) && size == 1;
    }
    return false;
}

// The host type a dtype is read into (as memoryTypeFor, without HDF5).
NativeType nativeFor(DType dtype) {
    switch (dtype) {
    case DType::Float64: return NativeType::Float64;
    case DType::Float32: return NativeType::Float32;
    case DType::Float16:
    case DType::BFloat16: return NativeType::UInt16;
    case DType::Int64: return NativeType::Int64;
    case DType::Int32: return NativeType::Int32;
    case DType::Float8E4M3:
    case DType::Float8E5M2:
    case DType::UInt8:
    case DType::Bool: return NativeType::UInt8;
    }
    return NativeType::None;
}

// "missing" when absent, "bad-attribute" when present but not one value of the right kind.
DatasetProblem attributeProblem(const Attrs& attrs, const char* name, const char* kind) {
    if (factHas(attrs, name)) {
        return {DiagnosticCode::BadAttribute,
                "attribute '" + std::string(name) + "' is not a single " + kind};
    }
    return {DiagnosticCode::MissingAttribute, "attribute '" + std::string(name) + "' is missing"};
}

std::optional<Placement> readPlacement(const Attrs& attrs, const Shape& localShape, bool isScalar,
                                       PlacementProblem& problem) {
    PlacementAttributes a;
    a.isScalar = isScalar;
    problem.code = DiagnosticCode::BadPlacement;
    const auto globalShape = factInts(attrs, "global_shape");
    const auto kind = factText(attrs, "placement");
    const auto combine = factText(attrs, "combine");
    if (!globalShape || globalShape->dims.size() != 1) {
        problem.message = "attribute 'global_shape' is missing or not a 1-D integer array";
        return std::nullopt;
    }
    if (!kind || !combine) {
        problem.message = "attribute 'placement' or 'combine' is missing";
        return std::nullopt;
    }
    a.globalShape = globalShape->values;
    a.placement = *kind;
    a.combine = *combine;
    a.partialIndex = factInt(attrs, "partial_index").value_or(0);
    a.source = factText(attrs, "placement_source").value_or("");
    auto table = [&attrs](const char* name, std::optional<std::vector<std::int64_t>>& values,
                          std::optional<std::int64_t>& width) {
        if (auto array = factInts(attrs, name)) {
            values = std::move(array->values);
            if (array->dims.size() == 2) {
                width = array->dims[1];
            }
        }
    };
    table("boxes", a.boxes, a.boxesWidth);
    table("flat_ranges", a.flatRanges, a.flatWidth);
    return placementFromAttributes(a, localShape, problem);
}

// The element type: a known dtype name stored in the storage type the format prescribes.
std::optional<DType> readDType(const DatasetFacts& d, DatasetProblem& problem) {
    const auto name = factText(d.attrs, "dtype");
    if (!name) {
        problem = attributeProblem(d.attrs, "dtype", "string");
        return std::nullopt;
    }
    const auto dtype = parseDType(*name);
    if (!dtype) {
        problem = {DiagnosticCode::UnknownDtype, "unknown dtype '" + *name + "'"};
        return std::nullopt;
    }
    if (!storageMatches(d, *dtype)) {
        problem = {DiagnosticCode::StorageMismatch,
                   "HDF5 storage type does not match dtype '" + *name +
                       "' (the format stores it as " +
                       (isFloating(*dtype) && dtypeSize(*dtype) < 4 ? "unsigned " : "") +
                       std::to_string(dtypeSize(*dtype) * 8) + "-bit values)"};
        return std::nullopt;
    }
    return dtype;
}

// Variant, module, kind, index, iteration and micro-batch: who this tensor is.
std::optional<TensorId> readIdentity(const Attrs& attrs, DatasetProblem& problem) {
    TensorId id;
    for (const auto& [name, slot] :
         {std::pair{"variant", &id.variant}, std::pair{"module", &id.module},
          std::pair{"index", &id.index}}) {
        auto value = factText(attrs, name);
        if (!value) {
            problem = attributeProblem(attrs, name, "string");
            return std::nullopt;
        }
        *slot = std::move(*value);
    }
    for (const auto& [name, slot] :
         {std::pair{"iteration", &id.iteration}, std::pair{"micro_batch", &id.microBatch}}) {
        const auto value = factInt(attrs, name);
        if (!value) {
            problem = attributeProblem(attrs, name, "integer");
            return std::nullopt;
        }
        *slot = *value;
    }
    const auto kind = factText(attrs, "kind");
    if (!kind) {
        problem = attributeProblem(attrs, "kind", "string");
        return std::nullopt;
    }
    const auto parsedKind = parseTensorKind(*kind);
    if (!parsedKind) {
        problem = {DiagnosticCode::UnknownKind, "unknown tensor kind '" + *kind + "'"};
        return std::nullopt;
    }
    id.kind = *parsedKind;
    return id;
}

// The dataset's shape, and that its bytes are really in this file: a dataset may declare a
// shape far larger than what it stores (or point into other files), and nothing is ever
// allocated for it before this check.
std::optional<Shape> readStoredShape(const DatasetFacts& d, DType dtype, std::int64_t fileBytes,
                                     DatasetProblem& problem) {
    if (d.ndims < 0 || d.ndims > 32) {
        problem = {DiagnosticCode::BadShape, "dataset has an unsupported number of dimensions"};
        return std::nullopt;
    }
    Shape shape;
    std::optional<std::int64_t> bytes = static_cast<std::int64_t>(dtypeSize(dtype));
    for (const auto n : d.dims) {
        shape.push_back(static_cast<std::int64_t>(n));
        bytes = n > static_cast<std::uint64_t>(kMaxLogicalElements) || !bytes
                    ? std::nullopt
                    : checkedMul(*bytes, static_cast<std::int64_t>(n));
    }
    if (!bytes) {
        problem = {DiagnosticCode::BadShape,
                   "dataset shape " + shapeToString(shape) + " is implausibly large"};
        return std::nullopt;
    }
    if (auto why = storageProblem(d, *bytes, fileBytes)) {
        problem = {DiagnosticCode::ShortData, *why};
        return std::nullopt;
    }
    return shape;
}

// Contiguous, unfiltered data in the host's own layout can be read with pread, without HDF5.
std::optional<std::int64_t> rawOffset(const DatasetFacts& d, DType dtype) {
    const bool plain = d.layout == StoredLayout::Contiguous && d.filters == 0 &&
                       d.externalFiles == 0 && d.native != NativeType::None &&
                       d.native == nativeFor(dtype);
    return plain ? d.offset : std::nullopt;
}

} // namespace

std::optional<IndexedShard> shardFromFacts(const DatasetFacts& facts, int rank,
                                           std::int64_t fileBytes, DatasetProblem& problem) {
    if (!facts.opened) {
        problem = {DiagnosticCode::UnreadableDataset, "cannot open dataset: " + facts.openError};
        return std::nullopt;
    }
    const auto dtype = readDType(facts, problem);
    auto id = dtype ? readIdentity(facts.attrs, problem) : std::nullopt;
    auto shape = id ? readStoredShape(facts, *dtype, fileBytes, problem) : std::nullopt;
    if (!shape) {
        return std::nullopt;
    }
    ShardRef shard;
    shard.rank = rank;
    shard.datasetPath = facts.path;
    shard.dtype = *dtype;
    shard.localShape = std::move(*shape);
    const bool isScalar = factInt(facts.attrs, "is_scalar").value_or(0) != 0;
    PlacementProblem placementProblem;
    auto placement = readPlacement(facts.attrs, shard.localShape, isScalar, placementProblem);
    if (!placement) {
        problem = {placementProblem.code, placementProblem.message};
        return std::nullopt;
    }
    shard.placement = std::move(*placement);
    shard.layoutNote = factText(facts.attrs, "layout_note").value_or("");
    shard.annotateHint = factText(facts.attrs, "annotate_hint").value_or("");
    if (const auto alternatives = factText(facts.attrs, "placement_alternatives")) {
        auto parsed = parsePlacementAlternatives(*alternatives, shard.localShape, isScalar,
                                                 shard.placement.source, placementProblem);
        if (!parsed) {
            problem = {placementProblem.code, placementProblem.message};
            return std::nullopt;
        }
        shard.alternatives = std::move(*parsed);
        shard.hypothesis = factText(facts.attrs, "placement_hypothesis").value_or("");
    }
    shard.fileOffset = rawOffset(facts, *dtype);
    return IndexedShard{std::move(*id), std::move(shard)};
}

} // namespace ttrace
