// Where a divergence enters when every replayed module agrees given the reference's inputs:
// the schedule's scaling of the loss's output gradient (the zoo's grad-accum-scale), the job's
// data; and no entry when the root agrees, a suspect is not replayable or a module introduces.
#include "ttrace/compare/verdict.h"
#include "ttrace/replay/divergence_entry.h"
#include "ttrace/replay/localize_report.h"
#include "ttrace/replay/localize_walk.h"

#include <QtTest>

using namespace ttrace;
using namespace ttrace::replay;

namespace {

TensorResult tensor(const std::string& module, TensorKind kind, std::int64_t mb, double ratio) {
    TensorResult t;
    t.id = {"nominal", 0, mb, module, kind, "0"};
    t.ratio = ratio;
    t.status = ratio > 1.0 ? Status::Divergent : Status::Clean;
    return t;
}

// The grad-accum-scale shape: forward clean, every gradient x2 from the loss's output
// gradient on (the schedule forgot to divide by the micro-batch count). Assembled as the diff
// engine assembles a real diff (verdicts and the timeline the walk starts from).
DiffResult scaledLossGradient(double lossOutputGradRatio) {
    DiffResult d;
    const std::vector<std::string> modules{"embedding", "layers.0", "output_layer", "loss"};
    std::vector<ModuleInfo> infos;
    for (std::size_t i = 0; i < modules.size(); ++i) {
        infos.push_back({modules[i], static_cast<int>(i), 0, "Module", {}});
        d.tensors.push_back(tensor(modules[i], TensorKind::ForwardOutput, 0, 0.1));
        d.tensors.push_back(tensor(modules[i], TensorKind::InputGrad, 0, 1e5));
        if (modules[i] != "loss") {
            d.tensors.push_back(tensor(modules[i], TensorKind::OutputGrad, 0, 1e5));
        }
    }
    d.tensors.push_back(tensor("loss", TensorKind::OutputGrad, 1, lossOutputGradRatio));
    d.tensors.push_back(tensor("loss", TensorKind::OutputGrad, 0, lossOutputGradRatio));
    assembleVerdicts(d, infos);
    return d;
}

ModuleVerdict answer(Verdict verdict) {
    ModuleVerdict v;
    v.verdict = verdict;
    return v;
}

} // namespace

class TestDivergenceEntry : public QObject {
    Q_OBJECT
private slots:
    void theLossOutputGradientIsTheEntryWhenEveryModuleInherits() {
        const auto r = walkDivergence(scaledLossGradient(1e5),
                                      [](const Suspect&) { return answer(Verdict::Inherited); });
        QCOMPARE(r.verdicts.size(), std::size_t{4});
        QVERIFY(r.guilty.empty());
        QVERIFY(r.entry);
        QCOMPARE(r.entry->module, std::string("loss"));
        QCOMPARE(r.entry->kind, TensorKind::OutputGrad);
        QCOMPARE(r.entry->microBatch, std::int64_t{0});
        QVERIFY(r.introduced()); // exit status 1: a bug was found, outside every module
        QVERIFY(localizeConclusion(r).find("enters at loss output_grad") != std::string::npos);
    }

    void noEntryWhenTheRootAgreesOrSomethingElseAnswers() {
        auto inherited = [](const Suspect&) { return answer(Verdict::Inherited); };
        QVERIFY(!walkDivergence(scaledLossGradient(0.5), inherited).entry);
        const auto introduced = walkDivergence(scaledLossGradient(1e5), [](const Suspect& s) {
            return answer(s.module == "layers.0" ? Verdict::Introduced : Verdict::Inherited);
        });
        QVERIFY(!introduced.entry);
        QCOMPARE(introduced.guilty, std::vector<std::string>{"layers.0"});
        const auto unknown = walkDivergence(scaledLossGradient(1e5), [](const Suspect& s) {
            return answer(s.module == "loss" ? Verdict::NotReplayable : Verdict::Inherited);
        });
        QVERIFY(!unknown.entry);
        QVERIFY(unknown.undetermined()); // never "introduced" past a module it could not judge
    }
};

QTEST_APPLESS_MAIN(TestDivergenceEntry)
#include "test_divergence_entry.moc"
