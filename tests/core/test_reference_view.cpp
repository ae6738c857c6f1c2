// The reference as a comparison with a candidate sees it: candidate-only recompute and
// hand-off records mapped to the reference's tensors, and the module order they get (which
// decides the first divergence).
#include "compare/reference_view.h"

#include <QtTest>

#include <algorithm>

using namespace ttrace;

namespace {

TensorId id(std::string module, TensorKind kind) {
    TensorId t;
    t.module = std::move(module);
    t.kind = kind;
    return t;
}

Manifest manifestOf(const std::vector<std::pair<std::string, int>>& modules) {
    Manifest m;
    m.variants = {"nominal"};
    int order = 0;
    for (const auto& [name, depth] : modules) {
        m.modules.push_back({name, order++, depth, "Layer", {}});
    }
    return m;
}

std::shared_ptr<const Bundle> bundleOf(const Manifest& manifest) {
    Bundle::TensorIndex index;
    for (const auto& m : manifest.modules) {
        index[id(m.name, TensorKind::ForwardOutput)] = {ShardRef{}};
        index[id(m.name, TensorKind::OutputGrad)] = {ShardRef{}};
    }
    return std::make_shared<const Bundle>("", manifest, std::move(index));
}

std::vector<std::string> namesInOrder(const Manifest& manifest) {
    auto modules = manifest.modules;
    std::sort(modules.begin(), modules.end(),
              [](const auto& a, const auto& b) { return a.order < b.order; });
    std::vector<std::string> out;
    for (const auto& m : modules) {
        out.push_back(m.name);
    }
    return out;
}

} // namespace

class TestReferenceView : public QObject {
    Q_OBJECT
private slots:
    // A pipelined candidate that recomputes every layer: the hand-off of stage 0's last layer
    // comes right after that layer's forward, before the next stage's layers, not after the
    // recomputes of the layer's modules (which run during backward). A stale activation is
    // then the first forward divergence, at the hand-off.
    void handoffBeforeTheNextStageUnderRecompute() {
        const auto reference = bundleOf(manifestOf(
            {{"layers.0", 1}, {"layers.0.mlp", 1}, {"layers.1", 2}, {"layers.1.mlp", 2}}));
        const auto candidate = bundleOf(manifestOf({{"layers.0", 1},
                                                    {"layers.0.mlp", 1},
                                                    {"layers.0@handoff", 1},
                                                    {"layers.1", 2},
                                                    {"layers.1.mlp", 2},
                                                    {"layers.1@recompute", 2},
                                                    {"layers.1.mlp@recompute", 2},
                                                    {"layers.0@recompute", 1},
                                                    {"layers.0.mlp@recompute", 1}}));
        const auto view = referenceView(*reference, *candidate);
        QVERIFY(view);
        const std::vector<std::string> expected{"layers.0",
                                                "layers.0.mlp",
                                                "layers.0@handoff",
                                                "layers.1",
                                                "layers.1.mlp",
                                                "layers.1@recompute",
                                                "layers.1.mlp@recompute",
                                                "layers.0@recompute",
                                                "layers.0.mlp@recompute"};
        QCOMPARE(namesInOrder(view->manifest()), expected);
        // Each record reads the reference tensor it stands for.
        QVERIFY(view->shards(id("layers.0.mlp@recompute", TensorKind::ForwardOutput)));
        QVERIFY(view->shards(id("layers.0@handoff", TensorKind::ForwardOutput)));
        QCOMPARE(view->manifest().findModule("layers.0@handoff")->depth, 1);
    }

    // Without recompute the hand-off still follows its layer and the modules inside it.
    void handoffAfterItsLayersModules() {
        const auto reference = bundleOf(manifestOf(
            {{"layers.0", 1}, {"layers.0.mlp", 1}, {"layers.1", 2}, {"layers.1.mlp", 2}}));
        const auto candidate = bundleOf(manifestOf({{"layers.0", 1},
                                                    {"layers.0.mlp", 1},
                                                    {"layers.0@handoff", 1},
                                                    {"layers.1", 2},
                                                    {"layers.1.mlp", 2}}));
        const auto view = referenceView(*reference, *candidate);
        QVERIFY(view);
        const std::vector<std::string> expected{"layers.0", "layers.0.mlp", "layers.0@handoff",
                                                "layers.1", "layers.1.mlp"};
        QCOMPARE(namesInOrder(view->manifest()), expected);
    }
};

QTEST_GUILESS_MAIN(TestReferenceView)
#include "test_reference_view.moc"
