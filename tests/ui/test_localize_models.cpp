// The localize and story logic of the explorer without widgets: badges as verdicts arrive (in
// walk order and out of it), the guilty phase of a walk, the layer tree's badge role, grouped
// warnings, the headline's first divergence in time, and the agent target. Every model runs
// under QAbstractItemModelTester.
#include "ttrace/compare/verdict.h"
#include "ttrace/replay/localize_text.h"
#include "ttrace/replay/localize_walk.h"
#include "ttrace/ui/models/agent_target.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/localize_summary.h"
#include "ttrace/ui/models/localize_verdicts.h"
#include "ttrace/ui/models/replay_bars.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/story_headline.h"
#include "ttrace/ui/models/warnings_model.h"

#include <QAbstractItemModelTester>
#include <QSettings>
#include <QtTest>

using namespace ttrace;
using namespace ttrace::ui;
using replay::LocalizePhase;
using replay::ModuleVerdict;
using replay::Verdict;

namespace {

ModuleVerdict verdict(const std::string& module, Verdict v,
                      LocalizePhase phase = LocalizePhase::Forward) {
    ModuleVerdict out;
    out.suspect.module = module;
    out.suspect.phase = phase;
    out.verdict = v;
    out.ratio = v == Verdict::Introduced ? 40.0 : 0.3;
    return out;
}

TensorResult tensor(const std::string& module, TensorKind kind, std::int64_t iteration,
                    std::int64_t microBatch, double ratio) {
    TensorResult t;
    t.id.module = module;
    t.id.kind = kind;
    t.id.iteration = iteration;
    t.id.microBatch = microBatch;
    t.id.index = kind == TensorKind::MainGrad ? "weight" : "0";
    t.ratio = ratio;
    t.tolerance.value = 1e-6;
    t.metrics.relError = ratio * 1e-6;
    t.metrics.shards = {{0, 8, ratio * 1e-6}, {1, 8, 0.1e-6}, {2, 8, ratio * 1e-6}, {3, 8, 0.1e-6}};
    t.status = ratio > 1.0 ? Status::Divergent : Status::Clean;
    return t;
}

ModuleResult module(const std::string& name, int order) {
    ModuleResult m;
    m.name = name;
    m.order = order;
    return m;
}

// The demo's shape: iteration 1's forward diverges everywhere after the step, but the first
// divergence in time is iteration 0's gradient reduction of the norms (replicas disagree).
DiffResult demoLikeDiff() {
    DiffResult d;
    d.modules = {module("embedding", 0),
                 module("layers.0", 1),
                 module("layers.0.input_layernorm", 2),
                 module("layers.0.mlp", 3),
                 module("final_layernorm", 4),
                 module("loss", 5)};
    d.tensors.push_back(tensor("embedding", TensorKind::ForwardOutput, 0, 0, 0.1));
    d.tensors.push_back(tensor("layers.0.mlp", TensorKind::ForwardOutput, 1, 0, 30.0));
    d.tensors.push_back(tensor("loss", TensorKind::ForwardOutput, 1, 0, 9.0));
    d.tensors.push_back(tensor("final_layernorm", TensorKind::MainGrad, 0, -1, 80.0));
    auto norm = tensor("layers.0.input_layernorm", TensorKind::MainGrad, 0, -1, 50.0);
    norm.findings.push_back(makeWarning("replica-disagree", "tensor x", "ranks 0 and 1 differ"));
    norm.findings.push_back(makeWarning("replica-disagree", "tensor y", "ranks 2 and 3 differ"));
    d.tensors.push_back(norm);
    d.tensors.push_back(tensor("layers.0.input_layernorm", TensorKind::ParamGrad, 0, 0, 0.4));
    d.diagnostics.push_back(makeWarning("manifest-optimizer", "candidate", "a note"));
    return d;
}

// What the engine does after comparing: module roll-ups and the timeline the headline reads.
DiffResult assembled(DiffResult d) {
    std::vector<ModuleInfo> infos;
    for (const auto& m : d.modules) {
        infos.push_back({m.name, m.order, 0, "T", {}});
    }
    d.modules.clear();
    assembleVerdicts(d, infos);
    return d;
}

} // namespace

class TestLocalizeModels : public QObject {
    Q_OBJECT
private slots:
    void badgesFollowTheWalk() {
        LocalizeVerdicts v;
        v.add(verdict("layers.1", Verdict::Introduced));
        QCOMPARE(v.badge("layers.1"), LocalizeBadge::IntroducedHere);
        v.add(verdict("layers.1.mlp", Verdict::Introduced));
        v.add(verdict("layers.1.mlp.linear_fc1", Verdict::Introduced));
        v.add(verdict("layers.1.self_attention", Verdict::Inherited));
        v.add(verdict("final_layernorm", Verdict::Inherited));
        QCOMPARE(v.badge("layers.1.mlp.linear_fc1"), LocalizeBadge::IntroducedHere);
        QCOMPARE(v.badge("layers.1.mlp"), LocalizeBadge::IntroducedBelow);
        QCOMPARE(v.badge("layers.1"), LocalizeBadge::IntroducedBelow);
        QCOMPARE(v.badge("final_layernorm"), LocalizeBadge::Inherited);
        QCOMPARE(v.badge("layers.10"), LocalizeBadge::None);
        QCOMPARE(v.guiltyModules(), std::vector<std::string>{"layers.1.mlp.linear_fc1"});
        QCOMPARE(localizeBadgeText(v.badge("layers.1.mlp.linear_fc1")),
                 QStringLiteral("introduced here"));
        QCOMPARE(localizeBadgeText(v.badge("final_layernorm")), QStringLiteral("inherited"));
    }

    void childJudgedFirstKeepsTheParentBelow() {
        // One click on the child, then on its parent: the parent does not claim the bug.
        LocalizeVerdicts v;
        v.add(verdict("layers.1.mlp.linear_fc1", Verdict::Introduced));
        v.add(verdict("layers.1.mlp", Verdict::Introduced));
        QCOMPARE(v.badge("layers.1.mlp"), LocalizeBadge::IntroducedBelow);
        QCOMPARE(v.badge("layers.1.mlp.linear_fc1"), LocalizeBadge::IntroducedHere);
        // A sibling with a longer shared prefix is not a descendant.
        v.add(verdict("layers.1.mlpx", Verdict::Introduced));
        QCOMPARE(v.badge("layers.1.mlpx"), LocalizeBadge::IntroducedHere);
    }

    void reductionAndStepPhases() {
        // A single Localize of a norm's main grad, as the explorer runs it: judged against the
        // diff (param grads agree, main grad diverges), the reduction is guilty, and the badge
        // and the headline say so in `ttrace localize`'s words, never "inherited".
        const DiffResult diff = assembled(demoLikeDiff());
        replay::Suspect norm{"layers.0.input_layernorm", 0, 0, LocalizePhase::Reduction, 50.0};
        LocalizeVerdicts v;
        v.setReplaying("layers.0.input_layernorm");
        QCOMPARE(v.badge("layers.0.input_layernorm"), LocalizeBadge::Replaying);
        const auto single = replay::judgeNamed(
            {norm}, [](const replay::Suspect&) { return verdict("", Verdict::Inherited); },
            {.onVerdict = [&v](const ModuleVerdict& mv) { v.add(mv); }, .cancelled = {}}, &diff);
        v.finish(single);
        QCOMPARE(v.badge("layers.0.input_layernorm"), LocalizeBadge::ReductionGuilty);
        QCOMPARE(localizeBadgeText(v.badge("layers.0.input_layernorm")),
                 QStringLiteral("introduced in gradient reduction"));
        const QString line = localizeConclusion(single);
        QVERIFY2(line.startsWith(QStringLiteral("INTRODUCED: introduced in gradient reduction: "
                                                "parameters of layers.0.input_layernorm")),
                 qPrintable(line));
        QVERIFY2(!line.contains("inherited") && !line.contains("agrees"), qPrintable(line));
        QVERIFY(line.startsWith(QString::fromStdString(replay::localizeVerdictLine(single))));
        v.add(verdict("layers.0.mlp", Verdict::Introduced, LocalizePhase::Step));
        QCOMPARE(v.badge("layers.0.mlp"), LocalizeBadge::StepGuilty);

        // A walk that starts in the reduction: one step replay over every parameter, then the
        // phase and its parameters from the walk's result.
        LocalizeVerdicts walk;
        walk.add(verdict("", Verdict::Inherited, LocalizePhase::Reduction));
        QVERIFY(walk.stepVerdict());
        QCOMPARE(walk.badge(""), LocalizeBadge::None);
        replay::LocalizeResult r;
        r.verdicts.push_back(*walk.stepVerdict());
        r.guiltyPhase = LocalizePhase::Reduction;
        r.guiltyParameters = {"final_layernorm", "layers.0.input_layernorm"};
        const auto changed = walk.finish(r);
        QCOMPARE(changed.size(), std::size_t{2});
        QCOMPARE(walk.badge("final_layernorm"), LocalizeBadge::ReductionGuilty);
        QCOMPARE(walk.guiltyModules().size(), std::size_t{2});
        const QString text = localizeConclusion(r);
        QVERIFY2(text.contains("gradient reduction") && text.contains("final_layernorm"),
                 qPrintable(text));
    }

    void undeterminedIsNeverNothingIntroduced() {
        replay::LocalizeResult r;
        r.start = replay::DivergenceStart{0, LocalizePhase::Forward};
        r.verdicts.push_back(verdict("loss", Verdict::Inherited));
        QVERIFY(localizeConclusion(r).contains("enters where no module runs"));
        auto v = verdict("layers.0", Verdict::NotReplayable);
        v.reason = "stochastic: dropout";
        r.verdicts.push_back(v);
        const QString text = localizeConclusion(r);
        QVERIFY2(text.startsWith("UNDETERMINED: not localized") && text.contains("layers.0") &&
                     text.contains("stochastic: dropout"),
                 qPrintable(text));
    }

    void cancelledWalkDropsReplayingMarks() {
        LocalizeVerdicts v;
        v.setReplaying("loss");
        replay::LocalizeResult r;
        r.cancelled = true;
        v.finish(r);
        QCOMPARE(v.badge("loss"), LocalizeBadge::None);
        QVERIFY(localizeConclusion(r).contains("cancelled"));
    }

    void aStoppedWalkReadsAsTheCliLastLine() {
        // An agent error before any verdict: the explorer's headline is the CLI's last line.
        replay::LocalizeResult r;
        r.problems.push_back(
            makeError(DiagnosticCode::AgentReplayFailed, "agent tcp://h:1", "rank 1 exited"));
        const QString text = localizeConclusion(r);
        QVERIFY2(text.startsWith(QString::fromStdString(replay::localizeVerdictLine(r))) &&
                     text.startsWith("STOPPED: not localized") && text.contains("rank 1 exited"),
                 qPrintable(text));
    }

    void treeModelExposesTheBadge() {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setModules({{"layers.1", 0, 0, "L", {}},
                          {"layers.1.mlp", 1, 1, "M", {}},
                          {"layers.1.mlp.linear_fc1", 2, 2, "C", {}},
                          {"loss", 3, 0, "X", {}}});
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.addLocalizeVerdict(verdict("layers.1.mlp", Verdict::Introduced));
        model.addLocalizeVerdict(verdict("layers.1.mlp.linear_fc1", Verdict::Introduced));
        model.addLocalizeVerdict(verdict("loss", Verdict::Inherited));
        QVERIFY(changed.size() >= 3);
        auto badge = [&](const char* name) {
            return static_cast<LocalizeBadge>(
                model.indexOfModule(name).data(LocalizeBadgeRole).toInt());
        };
        QCOMPARE(badge("layers.1.mlp.linear_fc1"), LocalizeBadge::IntroducedHere);
        QCOMPARE(badge("layers.1.mlp"), LocalizeBadge::IntroducedBelow);
        QCOMPARE(badge("loss"), LocalizeBadge::Inherited);
        QCOMPARE(badge("layers.1"), LocalizeBadge::None);
        QVERIFY(model.indexOfModule("loss").data(Qt::ToolTipRole).toString().contains("inherited"));
        model.clearLocalize();
        QCOMPARE(badge("loss"), LocalizeBadge::None);
        model.addLocalizeVerdict(verdict("loss", Verdict::NotReplayable));
        model.clear(); // a new comparison drops the verdicts too
        QVERIFY(model.localize().empty());
    }

    void warningsAreGrouped() {
        const DiffResult d = demoLikeDiff();
        WarningsModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setGroups(groupWarnings(d));
        QCOMPARE(model.rowCount(), 2); // replicas of one norm (2 findings), the bundle note
        QCOMPARE(model.itemCount(), 3);
        const QModelIndex group = model.index(1, 0);
        QCOMPARE(group.data().toString(), QStringLiteral("replica-disagree"));
        QCOMPARE(model.index(1, WarningsModel::ModuleColumn).data().toString(),
                 QStringLiteral("layers.0.input_layernorm"));
        QCOMPARE(model.index(1, WarningsModel::CountColumn).data().toInt(), 2);
        QCOMPARE(group.data(ModuleNameRole).toString(), QStringLiteral("layers.0.input_layernorm"));
        QCOMPARE(group.data(TensorIndexRole).toLongLong(), 4LL);
        QCOMPARE(model.rowCount(group), 2);
        QVERIFY(
            model.index(0, 0, group).data(Qt::ToolTipRole).toString().contains("ranks 0 and 1"));
        QCOMPARE(model.index(0, WarningsModel::ModuleColumn).data().toString(),
                 QStringLiteral("(bundle)"));
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void headlineIsTheFirstDivergenceInTime() {
        const DiffResult d = assembled(demoLikeDiff());
        const StoryHeadline h = storyHeadline(d);
        QVERIFY(h.divergent);
        QCOMPARE(h.iteration, std::int64_t{0});
        QCOMPARE(h.phase, QStringLiteral("gradient reduction"));
        QCOMPARE(h.module, QStringLiteral("layers.0.input_layernorm")); // first in module order
        QCOMPARE(h.kind, TensorKind::MainGrad);
        QVERIFY(h.tensor.has_value());
        QCOMPARE(d.tensors[*h.tensor].id.module, std::string("layers.0.input_layernorm"));
        QCOMPARE(d.tensors[*h.tensor].id.kind, TensorKind::MainGrad);
        QCOMPARE(h.ranks, (QList<int>{0, 2}));
        QVERIFY(h.replicasDisagree);
        QCOMPARE(h.alsoInPhase, QStringList{"final_layernorm"});
        const QString text = headlineText(h);
        QVERIFY2(text.contains("iteration 0") && text.contains("gradient reduction") &&
                     text.contains("layers.0.input_layernorm main grad") &&
                     text.contains("ranks 0, 2") && text.contains("final_layernorm"),
                 qPrintable(text));
        // The core's walk starts at the same place.
        QCOMPARE(replay::firstDivergenceStart(d),
                 std::optional(replay::DivergenceStart{0, replay::LocalizePhase::Reduction}));

        DiffResult clean;
        clean.tensors.push_back(tensor("loss", TensorKind::ForwardOutput, 0, 0, 0.2));
        QVERIFY(!storyHeadline(clean).divergent);
        QVERIFY(headlineText(storyHeadline(clean)).contains("No divergence"));
    }

    void backwardHeadlineFollowsGradientOrder() {
        DiffResult d;
        d.modules = {module("a", 0), module("b", 1)};
        d.tensors.push_back(tensor("a", TensorKind::InputGrad, 0, 1, 5.0));
        d.tensors.push_back(tensor("b", TensorKind::InputGrad, 0, 1, 3.0));
        // Micro-batch 0's gradient arriving at b is earlier in time than micro-batch 1's.
        d.tensors.push_back(tensor("b", TensorKind::OutputGrad, 0, 0, 9.0));
        StoryHeadline h = storyHeadline(assembled(d));
        QCOMPARE(h.phase, QStringLiteral("backward"));
        QCOMPARE(h.module, QStringLiteral("b"));
        QCOMPARE(h.microBatch, std::int64_t{0});
        QCOMPARE(h.kind, TensorKind::OutputGrad);
        d.tensors.pop_back();
        h = storyHeadline(assembled(d));
        QCOMPARE(h.module, QStringLiteral("b")); // gradients reach b first
        QCOMPARE(h.microBatch, std::int64_t{1});
    }

    void forwardHeadlineDescendsIntoTheFirstChild() {
        // A parent's forward starts first, but the story names the submodule that diverges.
        DiffResult d;
        d.modules = {module("layers.1", 0),         module("layers.1.attn", 1),
                     module("layers.1.mlp", 2),     module("layers.1.mlp.fc1", 3),
                     module("layers.1.mlp.fc2", 4), module("loss", 5)};
        for (const char* m :
             {"layers.1", "layers.1.mlp", "layers.1.mlp.fc1", "layers.1.mlp.fc2", "loss"}) {
            d.tensors.push_back(tensor(m, TensorKind::ForwardOutput, 0, 1, 20.0));
        }
        d.tensors.push_back(tensor("loss", TensorKind::ForwardOutput, 1, 0, 20.0)); // later
        const StoryHeadline h = storyHeadline(assembled(d));
        QCOMPARE(h.module, QStringLiteral("layers.1.mlp.fc1"));
        QCOMPARE(h.phase, QStringLiteral("forward"));
        QCOMPARE(h.microBatch, std::int64_t{1});
        QCOMPARE(h.alsoInPhase, (QStringList{"layers.1.mlp.fc2", "loss"}));
    }

    void replayBarsPairCapturedAndReplayed() {
        ResultSet results;
        results.add(tensor("layers.0.mlp", TensorKind::ForwardOutput, 1, 0, 30.0));
        ModuleVerdict v = verdict("layers.0.mlp", Verdict::Inherited);
        replay::TensorJudgement j;
        j.id = results.tensor(0).id;
        j.ratio = 0.2;
        v.judgement.tensors.push_back(j);
        j.id.kind = TensorKind::InputGrad;
        v.judgement.tensors.push_back(j);
        j.id.module = "other";
        v.judgement.tensors.push_back(j);
        const auto bars = replayBars(results, v, "layers.0.mlp");
        QCOMPARE(bars.size(), std::size_t{2});
        QCOMPARE(bars[0].captured, 30.0);
        QCOMPARE(bars[0].replayed, 0.2);
        QVERIFY(std::isnan(bars[1].captured));
    }

    void theReplayedHistogramIsTheShownTensorsPeer() {
        // A step replay returns param_after_step for every parameter: beside a module's
        // main_grad[weight] goes its param_after_step[weight], the worst of that index.
        ModuleVerdict step = verdict("", Verdict::Inherited, LocalizePhase::Reduction);
        replay::TensorJudgement j;
        j.id = {"nominal", 0, -1, "layers.0.norm", TensorKind::ParamAfterStep, "bias"};
        j.ratio = 0.9;
        step.judgement.tensors.push_back(j);
        j.id.index = "weight";
        j.ratio = 0.1;
        step.judgement.tensors.push_back(j);
        j.id.module = "layers.1.norm";
        j.ratio = 0.5;
        step.judgement.tensors.push_back(j);
        const TensorId mainGrad{"nominal", 0, -1, "layers.0.norm", TensorKind::MainGrad, "weight"};
        const auto* peer = replayedPeer(step, mainGrad);
        QVERIFY(peer);
        QCOMPARE(peer->id.module, std::string("layers.0.norm"));
        QCOMPARE(peer->id.index, std::string("weight"));
        // The same tensor, when the replay returned it.
        TensorId after = mainGrad;
        after.kind = TensorKind::ParamAfterStep;
        after.index = "bias";
        QCOMPARE(replayedPeer(step, after)->ratio, 0.9);
        // No index in common: the module's worst; another module: nothing.
        after.index = "scale";
        QCOMPARE(replayedPeer(step, after)->id.index, std::string("bias"));
        after.module = "embedding";
        QVERIFY(!replayedPeer(step, after));
    }

    void agentTargetsAreRememberedPerBundle() {
        AgentTarget t;
        QVERIFY(AgentTarget::parseHostPort("10.0.0.7:41733", t));
        QCOMPARE(t.host, QStringLiteral("10.0.0.7"));
        QCOMPARE(t.port, 41733);
        QVERIFY(AgentTarget::parseHostPort("[::1]:5555", t));
        QCOMPARE(t.hostPort(), QStringLiteral("[::1]:5555"));
        for (const char* bad : {"host", ":80", "h:0", "h:70000", "h:x"}) {
            QVERIFY2(!AgentTarget::parseHostPort(bad, t), bad);
        }
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_localize_models"));
        QSettings().clear();
        t.tokenFile = QStringLiteral("/tmp/token");
        rememberAgent(QStringLiteral("/data/run/candidate"), t);
        QCOMPARE(rememberedAgent(QStringLiteral("/data/run/candidate")), t);
        QVERIFY(!rememberedAgent(QStringLiteral("/data/other")).isComplete());
        QSettings().clear();
    }
};

QTEST_GUILESS_MAIN(TestLocalizeModels)
#include "test_localize_models.moc"
