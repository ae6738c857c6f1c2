#include "io/index_wire.h"

#include <cstring>
#include <stdexcept>

namespace ttrace {
namespace {

constexpr std::string_view kMagic = "TTRACE-INDEX 1\n";
constexpr std::string_view kEnd = "END\n";

void putU64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
    }
}
void putI64(std::string& out, std::int64_t v) {
    putU64(out, static_cast<std::uint64_t>(v));
}
void putStr(std::string& out, std::string_view s) {
    putU64(out, s.size());
    out.append(s);
}
template <class T> void putInts(std::string& out, const std::vector<T>& values) {
    putU64(out, values.size());
    for (const auto v : values) {
        putU64(out, static_cast<std::uint64_t>(v));
    }
}

void putAttrs(std::string& out, const std::vector<AttrFact>& attrs) {
    putU64(out, attrs.size());
    for (const auto& a : attrs) {
        putStr(out, a.name);
        putU64(out, (a.text ? 1u : 0u) | (a.ints ? 2u : 0u));
        if (a.text) {
            putStr(out, *a.text);
        }
        if (a.ints) {
            putInts(out, a.ints->values);
            putInts(out, a.ints->dims);
        }
    }
}

void putDataset(std::string& out, const DatasetFacts& d) {
    putStr(out, d.path);
    putU64(out, d.opened ? 1 : 0);
    putStr(out, d.openError);
    putU64(out, static_cast<std::uint64_t>(d.typeClass));
    putI64(out, d.typeSize);
    putU64(out, static_cast<std::uint64_t>(d.native));
    putI64(out, d.ndims);
    putInts(out, d.dims);
    putU64(out, static_cast<std::uint64_t>(d.layout));
    putI64(out, d.externalFiles);
    putI64(out, d.filters);
    putI64(out, d.storedBytes);
    putU64(out, d.offset ? 1 : 0);
    putI64(out, d.offset.value_or(0));
    putAttrs(out, d.attrs);
}

// Reads fields from untrusted bytes; any overrun or out-of-range value throws WireError.
struct WireError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Cursor {
    std::string_view rest;

    std::uint64_t u64() {
        if (rest.size() < 8) {
            throw WireError("truncated");
        }
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i) {
            v |= static_cast<std::uint64_t>(static_cast<unsigned char>(rest[i])) << (8 * i);
        }
        rest.remove_prefix(8);
        return v;
    }
    std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
    // A count of items that each take at least `minBytes`: bounded by what is left.
    std::size_t count(std::size_t minBytes) {
        const auto n = u64();
        if (n > rest.size() / minBytes) {
            throw WireError("count " + std::to_string(n) + " exceeds the data");
        }
        return static_cast<std::size_t>(n);
    }
    std::string str() {
        const auto n = count(1);
        std::string s(rest.substr(0, n));
        rest.remove_prefix(n);
        return s;
    }
    template <class T> std::vector<T> ints() {
        std::vector<T> v(count(8));
        for (auto& x : v) {
            x = static_cast<T>(u64());
        }
        return v;
    }
    template <class E> E small(E last) {
        const auto v = u64();
        if (v > static_cast<std::uint64_t>(last)) {
            throw WireError("enum value out of range");
        }
        return static_cast<E>(v);
    }
};

std::vector<AttrFact> getAttrs(Cursor& in) {
    std::vector<AttrFact> attrs(in.count(16));
    for (auto& a : attrs) {
        a.name = in.str();
        const auto flags = in.u64();
        if (flags & 1u) {
            a.text = in.str();
        }
        if (flags & 2u) {
            IntArrayFact ints;
            ints.values = in.ints<std::int64_t>();
            ints.dims = in.ints<std::int64_t>();
            a.ints = std::move(ints);
        }
    }
    return attrs;
}

DatasetFacts getDataset(Cursor& in) {
    DatasetFacts d;
    d.path = in.str();
    d.opened = in.u64() != 0;
    d.openError = in.str();
    d.typeClass = in.small(StorageClass::Enum);
    d.typeSize = in.i64();
    d.native = in.small(NativeType::UInt8);
    const auto ndims = in.i64();
    if (ndims < -1 || ndims > 32) {
        throw WireError("bad dimension count");
    }
    d.ndims = static_cast<int>(ndims);
    d.dims = in.ints<std::uint64_t>();
    if (d.ndims >= 0 && d.dims.size() != static_cast<std::size_t>(d.ndims)) {
        throw WireError("dimension count disagrees with dimensions");
    }
    d.layout = in.small(StoredLayout::Other);
    d.externalFiles = in.i64();
    d.filters = static_cast<std::int32_t>(in.i64());
    d.storedBytes = in.i64();
    const bool hasOffset = in.u64() != 0;
    const auto offset = in.i64();
    if (hasOffset) {
        d.offset = offset;
    }
    d.attrs = getAttrs(in);
    return d;
}

} // namespace

std::string encodeRankFacts(const RankFacts& facts) {
    std::string out(kMagic);
    putU64(out, facts.opened ? 1 : 0);
    putStr(out, facts.openError);
    putAttrs(out, facts.rootAttrs);
    putU64(out, facts.datasets.size());
    for (const auto& d : facts.datasets) {
        putDataset(out, d);
    }
    putU64(out, facts.walkFailed ? 1 : 0);
    putStr(out, facts.walkError);
    out.append(kEnd);
    return out;
}

std::optional<RankFacts> decodeRankFacts(std::string_view bytes, std::string& why) {
    if (!bytes.starts_with(kMagic)) {
        why = "output does not start with the index header";
        return std::nullopt;
    }
    Cursor in{bytes.substr(kMagic.size())};
    try {
        RankFacts facts;
        facts.opened = in.u64() != 0;
        facts.openError = in.str();
        facts.rootAttrs = getAttrs(in);
        const auto datasets = in.count(64);
        for (std::size_t i = 0; i < datasets; ++i) {
            facts.datasets.push_back(getDataset(in));
        }
        facts.walkFailed = in.u64() != 0;
        facts.walkError = in.str();
        if (in.rest != kEnd) {
            throw WireError("no end mark after the last field");
        }
        return facts;
    } catch (const WireError& e) {
        why = std::string("malformed index output: ") + e.what();
        return std::nullopt;
    }
}

} // namespace ttrace
