// Reading shards straight into the merged tensor (merge/direct_merge.h) on the demo bundles:
// it must rebuild exactly what the element-wise merge rebuilds, for disjoint splits and for
// replicas, and must decline (so the element-wise merge reports it) sums, gaps and replicas
// whose bytes differ.
#include "merge/direct_merge.h"

#include "ttrace/io/bundle.h"
#include "ttrace/merge/merge.h"

#include "bundle_edits.h"

#include <QtTest>

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace ttrace;
namespace fs = std::filesystem;

using ttrace::test::forgetChecksums;
using ttrace::test::scaleDataset;

namespace {

fs::path demoCandidate() {
    return fs::path(qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString()) / "clean" / "candidate";
}

// The element-wise merge of the same shards, read one by one (the path before direct reads).
MergeResult elementWise(const Bundle& bundle, const TensorId& id) {
    std::vector<RawShard> shards;
    for (const auto& ref : *bundle.shards(id)) {
        shards.push_back(
            {ref.rank, ref.dtype, ref.localShape, ref.placement, bundle.readShard(ref)});
    }
    return mergeShards(id, std::move(shards));
}

bool sameDoubles(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

bool sameTensor(const FullTensor& a, const FullTensor& b) {
    if (a.shape != b.shape || a.dtype != b.dtype || !sameDoubles(a.values, b.values) ||
        a.rawBits != b.rawBits || a.shards.size() != b.shards.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.shards.size(); ++i) {
        if (a.shards[i].rank != b.shards[i].rank ||
            a.shards[i].localShape != b.shards[i].localShape ||
            !sameDoubles(a.shards[i].values, b.shards[i].values)) {
            return false;
        }
    }
    return true;
}

std::size_t countReplicas(const DirectTensor& t) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < t.owner.size(); ++i) {
        n += t.owner[i] != i ? 1 : 0;
    }
    return n;
}

} // namespace

class TestDirectMerge : public QObject {
    Q_OBJECT
private:
    std::shared_ptr<const Bundle> bundle_;

private slots:
    void initTestCase() {
        QVERIFY2(fs::exists(demoCandidate() / "manifest.json"), "run the demo_bundles fixture");
        auto opened = openBundle(demoCandidate());
        QVERIFY(opened.ok());
        bundle_ = opened.bundle;
    }
    void directEqualsElementWiseForSplitsAndReplicas() {
        std::size_t split = 0, replicated = 0, declined = 0;
        for (const auto& [id, refs] : bundle_->tensors()) {
            const auto direct = mergeDirect(*bundle_, id);
            const auto old = elementWise(*bundle_, id);
            QVERIFY(old.tensor);
            if (!direct) {
                ++declined;
                continue;
            }
            QVERIFY2(sameTensor(toFullTensor(id, *direct), *old.tensor), id.path().c_str());
            QVERIFY2(old.findings.empty(), id.path().c_str());
            (countReplicas(*direct) > 0 ? replicated : split) += refs.size() > 1 ? 1 : 0;
        }
        qInfo("direct: %zu split, %zu replicated, %zu declined", split, replicated, declined);
        QVERIFY(split > 0);
        QVERIFY(replicated > 0);
        QVERIFY(declined > 0); // the sums
    }
    void sumPartialsAreDeclined() {
        for (const auto& [id, refs] : bundle_->tensors()) {
            if (refs.front().placement.combine == Combine::Sum) {
                QVERIFY2(!mergeDirect(*bundle_, id), id.path().c_str());
            }
        }
    }
    void aGapIsDeclined() {
        // A split tensor indexed without its last shard: the boxes leave a gap.
        for (const auto& [id, refs] : bundle_->tensors()) {
            const auto direct = mergeDirect(*bundle_, id);
            if (!direct || refs.size() < 2 || countReplicas(*direct) > 0) {
                continue;
            }
            Bundle::TensorIndex index{{id, {refs.begin(), refs.end() - 1}}};
            const Bundle partial(bundle_->dir(), bundle_->manifest(), index);
            QVERIFY(!mergeDirect(partial, id));
            const auto merged = mergeTensor(partial, id);
            QVERIFY(!merged.tensor);
            QCOMPARE(merged.findings.front().code, std::string("hole"));
            return;
        }
        QFAIL("no split tensor in the demo bundle");
    }
    void replicasThatDifferAreDeclined() {
        const auto pid = std::to_string(QCoreApplication::applicationPid());
        const auto dir = fs::temp_directory_path() / ("ttrace-test-direct-" + pid);
        fs::remove_all(dir);
        fs::copy(demoCandidate(), dir, fs::copy_options::recursive);
        TensorId target;
        const ShardRef* copy = nullptr;
        for (const auto& [id, refs] : bundle_->tensors()) {
            const auto direct = mergeDirect(*bundle_, id);
            for (std::size_t i = 0; direct && !copy && i < direct->shards.size(); ++i) {
                if (direct->owner[i] != i && direct->shards[i]->dtype == DType::Float32) {
                    copy = direct->shards[i];
                    target = id;
                }
            }
        }
        QVERIFY(copy);
        QVERIFY(
            scaleDataset(dir / bundle_->rankFile(copy->rank).filename(), copy->datasetPath, 1e-3));
        QVERIFY(forgetChecksums(dir));
        const auto edited = openBundle(dir);
        QVERIFY(edited.ok());
        QVERIFY(!mergeDirect(*edited.bundle, target));
        const auto merged = mergeTensor(*edited.bundle, target);
        QVERIFY(merged.tensor);
        QCOMPARE(merged.findings.size(), std::size_t{1});
        QCOMPARE(merged.findings.front().code, std::string("replica-disagree"));
        fs::remove_all(dir);
    }
};

QTEST_GUILESS_MAIN(TestDirectMerge)
#include "test_direct_merge.moc"
