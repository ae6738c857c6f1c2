// The localize walk on synthetic diffs with a scripted judge: where it starts (the report's
// first divergence in time, as `ttrace diff`'s), the order it replays in, the subtree rule
// (inherited roots are not descended into, introduced ones are narrowed to their introduced
// children), the optimizer phases, and stopping on an agent failure or cancellation.
#include "ttrace/compare/verdict.h"
#include "ttrace/replay/localize_report.h"
#include "ttrace/replay/localize_text.h"
#include "ttrace/replay/localize_walk.h"

#include <QtTest>

#include <map>

using namespace ttrace;
using namespace ttrace::replay;

namespace {

TensorResult tensor(const std::string& module, TensorKind kind, std::int64_t iteration,
                    std::int64_t mb, double ratio) {
    TensorResult t;
    t.id = {"nominal", iteration, mb, module, kind, "0"};
    t.ratio = ratio;
    t.status = ratio > 1.0 ? Status::Divergent : Status::Clean;
    return t;
}

// Assembled as the diff engine assembles a real diff: modules, verdicts and the timeline.
DiffResult diffOf(const std::vector<std::string>& modules, std::vector<TensorResult> tensors) {
    DiffResult d;
    std::vector<ModuleInfo> infos;
    for (std::size_t i = 0; i < modules.size(); ++i) {
        const auto depth = std::count(modules[i].begin(), modules[i].end(), '.');
        infos.push_back({modules[i], static_cast<int>(i), static_cast<int>(depth), "Module", {}});
    }
    d.tensors = std::move(tensors);
    assembleVerdicts(d, infos);
    return d;
}

const std::vector<std::string> kModules{"embedding",    "layers.0", "layers.0.attn",
                                        "layers.0.mlp", "layers.1", "layers.1.attn",
                                        "layers.1.mlp", "loss"};

// Every module's forward output (and backward grads) diverges, from micro-batch 1 on.
std::vector<TensorResult> everythingDiverges(const std::vector<std::string>& modules) {
    std::vector<TensorResult> out;
    for (const auto& m : modules) {
        out.push_back(tensor(m, TensorKind::ForwardOutput, 0, 0, 0.5));
        out.push_back(tensor(m, TensorKind::ForwardOutput, 0, 1, 1e4));
        out.push_back(tensor(m, TensorKind::InputGrad, 0, 0, 1e3));
        out.push_back(tensor(m, TensorKind::ForwardOutput, 1, 0, 1e5));
    }
    return out;
}

// A judge answering from a table and recording what it was asked.
struct ScriptedJudge {
    std::map<std::string, Verdict> verdicts; // default Inherited
    std::vector<Suspect> asked;
    ModuleVerdict operator()(const Suspect& s) {
        asked.push_back(s);
        ModuleVerdict v;
        const auto it = verdicts.find(s.module);
        v.verdict = it == verdicts.end() ? Verdict::Inherited : it->second;
        v.ratio = v.verdict == Verdict::Introduced ? 50.0 : 0.2;
        return v;
    }
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& s : asked) {
            out.push_back(s.module);
        }
        return out;
    }
};

using Names = std::vector<std::string>;

} // namespace

class TestLocalizeWalk : public QObject {
    Q_OBJECT
private slots:
    void startsAtTheFirstDivergenceInTime() {
        // Iteration 1 forward diverges hugely; iteration 0 backward already diverges a little,
        // and iteration 0's forward only in what the embedding was fed.
        auto d = diffOf(kModules, {tensor("loss", TensorKind::ForwardOutput, 1, 0, 1e6),
                                   tensor("layers.1.mlp", TensorKind::ParamGrad, 0, 1, 3.0),
                                   tensor("embedding", TensorKind::ForwardInput, 0, 0, 9.0)});
        // The walk starts where the report's timeline does ...
        QVERIFY(d.firstDivergence);
        QCOMPARE(d.firstDivergence->kind, TensorKind::ForwardInput);
        QCOMPARE(firstDivergenceStart(d),
                 std::optional(DivergenceStart{0, LocalizePhase::Forward}));
        // ... but that forward produced nothing wrong (a diverging input alone has nothing to
        // replay): the replays begin at the next step on the timeline, iteration 0's backward.
        QCOMPARE(replayStart(d), std::optional(DivergenceStart{0, LocalizePhase::Backward}));
        ScriptedJudge judge;
        const auto r = walkDivergence(d, std::ref(judge), {});
        QCOMPARE(r.start, firstDivergenceStart(d));
        QCOMPARE(judge.names(), (Names{"layers.1.mlp"}));
        QCOMPARE(judge.asked.front().phase, LocalizePhase::Backward);
        QCOMPARE(judge.asked.front().microBatch, std::int64_t{1});

        QCOMPARE(divergenceStartOf({"nominal", 2, -1, "x", TensorKind::Parameter, "w"}),
                 (DivergenceStart{1, LocalizePhase::Step}));
        QCOMPARE(divergenceStartOf({"nominal", 0, -1, "x", TensorKind::Parameter, "w"}),
                 (DivergenceStart{0, LocalizePhase::Forward})); // the initial weights
        QVERIFY(!firstDivergenceStart(
            diffOf(kModules, {tensor("loss", TensorKind::ForwardOutput, 0, 0, 0.9)})));
    }

    void aDivergingParameterSitsAtTheStepThatWroteIt() {
        // Iteration 0 is clean as far as it was captured (no param_after_step); iteration 1's
        // parameters and everything after them diverge. The report's timeline and the walk
        // used to disagree here: the report put the parameter in iteration 1's forward, the
        // walk at iteration 0's optimizer step. Both now place it where it was written.
        const auto d =
            diffOf(kModules, {tensor("embedding", TensorKind::ForwardOutput, 0, 0, 0.3),
                              tensor("embedding", TensorKind::MainGrad, 0, -1, 0.2),
                              tensor("layers.0.mlp", TensorKind::MainGrad, 0, -1, 0.4),
                              tensor("layers.0.mlp", TensorKind::Parameter, 1, -1, 60.0),
                              tensor("embedding", TensorKind::Parameter, 1, -1, 40.0),
                              tensor("embedding", TensorKind::ForwardOutput, 1, 0, 40.0),
                              tensor("layers.0.mlp", TensorKind::ForwardOutput, 1, 0, 50.0)});
        QVERIFY(d.firstDivergence);
        const auto& f = *d.firstDivergence;
        QCOMPARE(f.iteration, std::int64_t{0});
        QCOMPARE(f.phase, Phase::OptimizerStep);
        QCOMPARE(f.kind, TensorKind::Parameter);
        QCOMPARE(f.module, std::string("embedding")); // execution order within the step
        QCOMPARE(f.alsoInPhase, (Names{"layers.0.mlp"}));
        const DivergenceStart step{0, LocalizePhase::Step};
        QCOMPARE(firstDivergenceStart(d), std::optional(step));
        QCOMPARE(replayStart(d), std::optional(step));

        // The walk replays iteration 0's step over every parameter, judged against the worst
        // parameter it wrote; a step that still diverges given the reference's inputs is guilty.
        ScriptedJudge agrees;
        auto r = walkDivergence(d, std::ref(agrees), {});
        QCOMPARE(r.start, std::optional(step));
        QCOMPARE(agrees.asked.size(), std::size_t{1});
        QCOMPARE(agrees.asked[0].module, std::string());
        QCOMPARE(agrees.asked[0].iteration, std::int64_t{0});
        QCOMPARE(agrees.asked[0].phase, LocalizePhase::Step);
        QCOMPARE(agrees.asked[0].diffRatio, 60.0);
        QVERIFY(!r.introduced()); // the step agrees and no reduction was suspected
        r = walkDivergence(d, [](const Suspect&) {
            ModuleVerdict v;
            v.verdict = Verdict::Introduced;
            TensorJudgement bad;
            bad.id = {"nominal", 0, -1, "layers.0.mlp", TensorKind::ParamAfterStep, "weight"};
            bad.status = Status::Divergent;
            v.judgement.tensors = {bad};
            return v;
        });
        QCOMPARE(r.guiltyPhase, std::optional(LocalizePhase::Step));
        QCOMPARE(r.guiltyParameters, (Names{"layers.0.mlp"}));
    }

    void inheritedRootsAreNotDescendedInto() {
        const auto d = diffOf(kModules, everythingDiverges(kModules));
        ScriptedJudge judge{{{"embedding", Verdict::Introduced}}, {}};
        std::vector<std::string> seen;
        const auto r =
            walkDivergence(d, std::ref(judge),
                           {[&](const ModuleVerdict& v) { seen.push_back(v.suspect.module); }, {}});
        QCOMPARE(judge.names(), (Names{"embedding", "layers.0", "layers.1", "loss"}));
        QCOMPARE(seen, judge.names());
        QCOMPARE(r.guilty, (Names{"embedding"}));
        QVERIFY(r.introduced());
        QCOMPARE(r.start->phase, LocalizePhase::Forward);
        // Each suspect is replayed at the first micro-batch where it diverges.
        QCOMPARE(judge.asked.front().microBatch, std::int64_t{1});
        QCOMPARE(judge.asked.front().diffRatio, 1e4);
    }

    void introducedRootsAreNarrowedToTheirIntroducedChildren() {
        std::vector<std::string> divergent{"layers.0", "layers.0.attn", "layers.0.mlp",
                                           "layers.1", "layers.1.attn", "layers.1.mlp",
                                           "loss"};
        const auto d = diffOf(kModules, everythingDiverges(divergent));
        ScriptedJudge judge{
            {{"layers.0", Verdict::Introduced}, {"layers.0.mlp", Verdict::Introduced}}, {}};
        const auto r = walkDivergence(d, std::ref(judge), {});
        QCOMPARE(judge.names(),
                 (Names{"layers.0", "layers.0.attn", "layers.0.mlp", "layers.1", "loss"}));
        QCOMPARE(r.guilty, (Names{"layers.0.mlp"}));
        QCOMPARE(r.verdicts[1].level, 1);
        QCOMPARE(r.verdicts[0].level, 0);
    }

    void anIntroducedRootWithInheritedChildrenIsGuiltyItself() {
        const auto d = diffOf(
            kModules, everythingDiverges({"layers.1", "layers.1.attn", "layers.1.mlp", "loss"}));
        ScriptedJudge judge{{{"layers.1", Verdict::Introduced}}, {}};
        const auto r = walkDivergence(d, std::ref(judge), {});
        QCOMPARE(judge.names(), (Names{"layers.1", "layers.1.attn", "layers.1.mlp", "loss"}));
        QCOMPARE(r.guilty, (Names{"layers.1"}));
    }

    void notReplayableRootsAreJudgedThroughTheirChildren() {
        const auto d =
            diffOf(kModules, everythingDiverges({"layers.1", "layers.1.attn", "layers.1.mlp"}));
        ScriptedJudge judge{
            {{"layers.1", Verdict::NotReplayable}, {"layers.1.attn", Verdict::Introduced}}, {}};
        const auto r = walkDivergence(d, std::ref(judge), {});
        QCOMPARE(judge.names(), (Names{"layers.1", "layers.1.attn", "layers.1.mlp"}));
        QCOMPARE(r.guilty, (Names{"layers.1.attn"}));
    }

    void backwardIsWalkedFromTheLoss() {
        std::vector<TensorResult> t;
        for (const auto& m : kModules) {
            t.push_back(tensor(m, TensorKind::InputGrad, 0, 0, m == "embedding" ? 0.1 : 20.0));
        }
        const auto d = diffOf(kModules, t);
        ScriptedJudge judge{{{"loss", Verdict::Introduced}}, {}};
        const auto r = walkDivergence(d, std::ref(judge), {});
        QCOMPARE(judge.names(), (Names{"loss", "layers.1", "layers.0"}));
        QCOMPARE(judge.asked.front().phase, LocalizePhase::Backward);
        QCOMPARE(r.guilty, (Names{"loss"}));
    }

    void gradientReductionBugs() {
        // Every param_grad agrees; main_grad of two modules diverges, then their parameters.
        std::vector<TensorResult> t{tensor("embedding", TensorKind::ParamGrad, 0, 0, 0.3),
                                    tensor("embedding", TensorKind::MainGrad, 0, -1, 40.0),
                                    tensor("loss", TensorKind::MainGrad, 0, -1, 0.2),
                                    tensor("layers.0.mlp", TensorKind::MainGrad, 0, -1, 40.0),
                                    tensor("embedding", TensorKind::ParamAfterStep, 0, -1, 40.0),
                                    tensor("embedding", TensorKind::Parameter, 1, -1, 40.0),
                                    tensor("embedding", TensorKind::ForwardOutput, 1, 0, 40.0)};
        const auto d = diffOf(kModules, t);
        ScriptedJudge agrees; // the step, fed the reference's main_grad, agrees
        auto r = walkDivergence(d, std::ref(agrees), {});
        QCOMPARE(agrees.asked.size(), std::size_t{1});
        QCOMPARE(agrees.asked[0].module, std::string());
        QCOMPARE(agrees.asked[0].phase, LocalizePhase::Step); // the step is what is replayed
        QCOMPARE(r.start->phase, LocalizePhase::Reduction);
        QCOMPARE(agrees.asked[0].diffRatio, 40.0); // the worst main_grad of that iteration
        QCOMPARE(r.guiltyPhase, std::optional(LocalizePhase::Reduction));
        QCOMPARE(r.guiltyParameters, (Names{"embedding", "layers.0.mlp"}));
        QVERIFY(r.guilty.empty() && r.introduced());

        // The step itself diverges given the reference's inputs: the step is guilty.
        auto stepJudge = [](const Suspect&) {
            ModuleVerdict v;
            v.verdict = Verdict::Introduced;
            TensorJudgement bad;
            bad.id = {"nominal", 0, -1, "layers.0.mlp", TensorKind::ParamAfterStep, "weight"};
            bad.status = Status::Divergent;
            TensorJudgement good = bad;
            good.id.module = "embedding";
            good.status = Status::Clean;
            v.judgement.tensors = {bad, good};
            return v;
        };
        r = walkDivergence(d, stepJudge, {});
        QCOMPARE(r.guiltyPhase, std::optional(LocalizePhase::Step));
        QCOMPARE(r.guiltyParameters, (Names{"layers.0.mlp"}));
    }

    void aStepMovedByTheClipCoefficientEntersAtTheClipping() {
        // Every gradient agrees; every parameter after the step diverges, and the diff's clip
        // record says the candidate clipped with another coefficient, from a wrong norm. The
        // step, fed the reference's gradients, agrees: the divergence enters at the clipping,
        // named with the diff's own words on it.
        std::vector<TensorResult> t;
        for (const auto& m : {"embedding", "layers.0.mlp", "loss"}) {
            t.push_back(tensor(m, TensorKind::ParamGrad, 0, 0, 0.3));
            t.push_back(tensor(m, TensorKind::MainGrad, 0, -1, 0.4));
            t.push_back(tensor(m, TensorKind::ParamAfterStep, 0, -1, 30.0));
        }
        auto d = diffOf(kModules, t);
        ClipComparison clip;
        clip.iteration = 0;
        clip.referenceNorm = 2.0;
        clip.candidateNorm = 1.9;
        clip.factor = 2.0 / 1.9;
        clip.candidateNormError = 0.05;
        clip.referenceNormError = 1e-7;
        d.clipping = {clip};
        ScriptedJudge agrees;
        const auto r = walkDivergence(d, std::ref(agrees), {});
        QCOMPARE(r.start->phase, LocalizePhase::Step);
        QVERIFY(r.enteredUnreplayed());
        QVERIFY(r.clipping.has_value());
        const auto text = localizeConclusion(r);
        QVERIFY2(text.find("enters where no module runs: the gradient clipping (" +
                           clip.toString() + ")") != std::string::npos,
                 text.c_str());
        QVERIFY2(text.find("wrong global norm") != std::string::npos, text.c_str());
        // The JSON carries the record the conclusion names.
        const auto json = localizeResultToJson(r, {});
        QVERIFY2(json.find("\"clipping\": {") != std::string::npos, json.c_str());
        QVERIFY2(json.find("\"consistent\": false") != std::string::npos, json.c_str());

        // Without a clip record the phase is named as before.
        d.clipping.clear();
        const auto plain = localizeConclusion(walkDivergence(d, std::ref(agrees), {}));
        QVERIFY2(plain.find("the gradient clipping (its global norm and coefficient) or the "
                            "optimizer step's own inputs") != std::string::npos,
                 plain.c_str());
    }

    void unreplayableDivergencesAreUndetermined() {
        const auto d = diffOf(kModules, everythingDiverges({"layers.1", "layers.1.attn"}));
        ScriptedJudge judge{
            {{"layers.1", Verdict::NotReplayable}, {"layers.1.attn", Verdict::NotReplayable}}, {}};
        auto r = walkDivergence(d, std::ref(judge), {});
        QVERIFY(!r.introduced());
        QVERIFY(r.undetermined()); // never "nothing introduced"
        ScriptedJudge agrees;
        r = walkDivergence(d, std::ref(agrees), {});
        QVERIFY(!r.introduced() && !r.undetermined());
        // Every suspect replayed and agreeing while the diff diverges: the divergence enters
        // where no module runs, and the conclusion says so (never "nothing introduced").
        QVERIFY(r.enteredUnreplayed());
        const auto text = localizeConclusion(r);
        QVERIFY2(text.find("enters where no module runs") != std::string::npos, text.c_str());
        QVERIFY2(text.find("nothing introduced") == std::string::npos, text.c_str());
    }

    void cleanDiffsAskNothing() {
        const auto d = diffOf(kModules, {tensor("loss", TensorKind::ForwardOutput, 0, 0, 0.9)});
        ScriptedJudge judge;
        const auto r = walkDivergence(d, std::ref(judge), {});
        QVERIFY(judge.asked.empty());
        QVERIFY(!r.start && !r.introduced() && !r.undetermined());
    }

    void anAgentFailureStopsTheWalk() {
        const auto d = diffOf(kModules, everythingDiverges(kModules));
        int calls = 0;
        auto failing = [&](const Suspect&) -> ModuleVerdict {
            if (++calls == 2) {
                throw ReplayAbort{makeError("timeout", "agent", "no reply within 300 s")};
            }
            return ModuleVerdict{};
        };
        const auto r = walkDivergence(d, failing, {});
        QCOMPARE(calls, 2);
        QCOMPARE(r.verdicts.size(), std::size_t{1});
        QCOMPARE(r.problems.size(), std::size_t{1});
        QCOMPARE(r.problems[0].code, std::string("timeout"));

        ScriptedJudge judge;
        int checks = 0;
        const auto cancelled =
            walkDivergence(d, std::ref(judge), {{}, [&] { return ++checks > 2; }});
        QVERIFY(cancelled.cancelled);
        QCOMPARE(judge.asked.size(), std::size_t{2});
        QCOMPARE(localizeVerdictLine(cancelled),
                 std::string("CANCELLED: not localized: cancelled before the replays finished"));
    }

    void aStoppedWalkIsNeverWordedAsAnAnswer() {
        // The agent fails at the first replay: of a walk (a divergence, no verdict yet) and of
        // named modules (no divergence read at all): neither "nothing diverges" nor "nothing
        // introduced", and the problem's words stand in the conclusion.
        auto failing = [](const Suspect&) -> ModuleVerdict {
            throw ReplayAbort{makeError(DiagnosticCode::AgentReplayFailed,
                                        "agent tcp://127.0.0.1:5555", "rank 1 exited")};
        };
        const auto walked =
            walkDivergence(diffOf(kModules, everythingDiverges(kModules)), failing, {});
        const auto named =
            judgeNamed({{"layers.0.attn", 0, 0, LocalizePhase::Forward, 0.0}}, failing, {});
        for (const auto* r : {&walked, &named}) {
            QVERIFY(r->verdicts.empty() && r->problems.size() == 1);
            const auto line = localizeVerdictLine(*r);
            QCOMPARE(line, std::string("STOPPED: not localized: the replays stopped at an error "
                                       "(agent tcp://127.0.0.1:5555: rank 1 exited)"));
            QCOMPARE(localizeConclusion(*r), line.substr(std::string("STOPPED: ").size()));
        }
    }

    void namedModulesNoneReplayedAreUndetermined() {
        // Every named module refused (a relaunch smaller than the job): no module was seen to
        // agree, so neither "nothing introduced" nor "each agrees".
        auto refusing = [](const Suspect& s) {
            ModuleVerdict v;
            v.suspect = s;
            v.reason = "layout_too_small: split over a group this relaunch lacks";
            v.refusedWith = ErrorCode::LayoutTooSmall;
            return v;
        };
        const auto r =
            judgeNamed({{"layers.0.attn", 0, 0, LocalizePhase::Forward, 0.0}}, refusing, {});
        QVERIFY(r.undetermined() && !r.introduced());
        QCOMPARE(localizeVerdictLine(r),
                 std::string("UNDETERMINED: not localized: no named module could be replayed; "
                             "layers.0.attn: layout_too_small: split over a group this "
                             "relaunch lacks"));
        // One judged and one refused: the judged one's agreement is an answer for it.
        ScriptedJudge judge;
        const auto mixed =
            judgeNamed({{"layers.0.mlp", 0, 0, LocalizePhase::Forward, 0.0}}, std::ref(judge), {});
        QVERIFY(!mixed.undetermined());
    }

    void namedModulesAreJudgedAlone() {
        ScriptedJudge judge{{{"layers.0.mlp", Verdict::Introduced}}, {}};
        const auto r = judgeNamed({{"layers.0.attn", 0, 0, LocalizePhase::Forward, 0.0},
                                   {"layers.0.mlp", 0, 0, LocalizePhase::Forward, 0.0}},
                                  std::ref(judge), {});
        QCOMPARE(r.guilty, (Names{"layers.0.mlp"}));
        QCOMPARE(r.verdicts.size(), std::size_t{2});
    }

    void namedReductionSuspectsAreWordedAsTheWalkWordsThem() {
        // embedding: param grads agree, main grad diverges (a reduction bug); layers.0.mlp:
        // its param grad diverges already, so its main grad only inherits the divergence.
        const auto d = diffOf(kModules, {tensor("embedding", TensorKind::ParamGrad, 0, 0, 0.3),
                                         tensor("embedding", TensorKind::MainGrad, 0, -1, 40.0),
                                         tensor("layers.0.mlp", TensorKind::ParamGrad, 0, 0, 9.0),
                                         tensor("layers.0.mlp", TensorKind::MainGrad, 0, -1, 9.0)});
        QVERIFY(reductionBlamed(d, "embedding", 0));
        QVERIFY(!reductionBlamed(d, "layers.0.mlp", 0));
        QVERIFY(!reductionBlamed(d, "embedding", 1)); // nothing recorded there
        ScriptedJudge agrees; // the step, fed the reference's main grads, agrees
        const Suspect embedding{"embedding", 0, 0, LocalizePhase::Reduction, 40.0};
        auto r = judgeNamed({embedding}, std::ref(agrees), {}, &d);
        QCOMPARE(r.guiltyPhase, std::optional(LocalizePhase::Reduction));
        QCOMPARE(r.guiltyParameters, (Names{"embedding"}));
        QCOMPARE(findingIn(r, "embedding"), ModuleFinding::ReductionGuilty);
        QCOMPARE(localizeVerdictLine(r),
                 std::string("INTRODUCED: introduced in gradient reduction: parameters of "
                             "embedding"));
        QCOMPARE(moduleFindingText(findingIn(r, "embedding")),
                 std::string_view("introduced in gradient reduction"));
        // Without the diff nothing proves the reduction wrong: the module agrees, no more.
        r = judgeNamed({embedding}, std::ref(agrees), {});
        QVERIFY(!r.guiltyPhase && !r.introduced());
        QCOMPARE(findingIn(r, "embedding"), ModuleFinding::Inherited);
        const Suspect mlp{"layers.0.mlp", 0, 0, LocalizePhase::Reduction, 9.0};
        r = judgeNamed({mlp}, std::ref(agrees), {}, &d);
        QVERIFY(!r.guiltyPhase);
        QCOMPARE(findingIn(r, "layers.0.mlp"), ModuleFinding::Inherited);
        // A step replay that still diverges: the optimizer step is guilty, for that module.
        ScriptedJudge wrongStep{{{"layers.0.mlp", Verdict::Introduced}}, {}};
        r = judgeNamed({{"layers.0.mlp", 0, -1, LocalizePhase::Step, 9.0}}, std::ref(wrongStep), {},
                       &d);
        QCOMPARE(r.guiltyPhase, std::optional(LocalizePhase::Step));
        QVERIFY(r.guilty.empty());
        QCOMPARE(findingIn(r, "layers.0.mlp"), ModuleFinding::StepGuilty);
        QCOMPARE(localizeVerdictLine(r),
                 std::string("INTRODUCED: introduced in optimizer step: parameters of "
                             "layers.0.mlp"));
    }

    void findingsOfAWalkNameTheDeepestGuilty() {
        const auto d = diffOf(kModules, everythingDiverges(kModules));
        ScriptedJudge judge{
            {{"layers.0", Verdict::Introduced}, {"layers.0.mlp", Verdict::Introduced}}, {}};
        const auto r = walkDivergence(d, std::ref(judge), {});
        QCOMPARE(findingIn(r, "layers.0.mlp"), ModuleFinding::IntroducedHere);
        QCOMPARE(findingIn(r, "layers.0"), ModuleFinding::IntroducedBelow);
        QCOMPARE(findingIn(r, "embedding"), ModuleFinding::Inherited);
        QCOMPARE(findingIn(r, "layers.1.attn"), ModuleFinding::None); // never replayed
        QCOMPARE(localizeVerdictLine(r), "INTRODUCED: " + localizeConclusion(r));
    }

    void parentsAreTheNearestDottedAncestor() {
        const Names names{"layers", "layers.1", "layers.10.mlp", "layers.1.mlp.fc1"};
        QCOMPARE(parentAmong("layers.1.mlp.fc1", names), std::string("layers.1"));
        QCOMPARE(parentAmong("layers.10.mlp", names), std::string("layers"));
        QCOMPARE(parentAmong("layers", names), std::string());
    }

    void rowsOfOneCallHoldTheirOwn() {
        const Names names{"shared", "shared@call1", "layers.1@recompute", "decoder.layers.1",
                          "decoder.layers.1@handoff"};
        QCOMPARE(parentAmong("shared.fc1@call1", names), std::string("shared@call1"));
        QCOMPARE(parentAmong("shared.fc1", names), std::string("shared"));
        QCOMPARE(parentAmong("shared.fc1@call2", names), std::string());
        QCOMPARE(parentAmong("layers.1.mask@recompute", names), std::string("layers.1@recompute"));
        QCOMPARE(parentAmong("decoder.layers.1@handoff", names), std::string());
        QVERIFY(!isBelow("shared@call1", "shared"));
    }
};

QTEST_GUILESS_MAIN(TestLocalizeWalk)
#include "test_localize_walk.moc"
