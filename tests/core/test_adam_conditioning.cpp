// The Adam/AdamW conditioning term of optimizer-step tolerances (docs/tolerance.md,
// "Optimizer-step conditioning") against hand-computed updates, and the manifest section it
// reads.
#include "ttrace/compare/adam_conditioning.h"
#include "ttrace/compare/tolerance.h"
#include "ttrace/io/manifest.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <fstream>

using namespace ttrace;

namespace {

bool near(double a, double b, double rel = 1e-12) {
    return std::abs(a - b) <= rel * std::abs(b);
}

AdamStep firstStep() {
    AdamStep s;
    s.lr = 1e-3;
    s.beta1 = 0.9;
    s.beta2 = 0.999;
    s.eps = 1e-8;
    s.step = 1;
    return s;
}

// The first step's update from zero moments: m_hat = g, v_hat = g^2.
double firstUpdate(double g, double eps) {
    return g / (std::abs(g) + eps);
}

double rms(const std::vector<double>& values) {
    double sum = 0.0;
    for (const double v : values) {
        sum += v * v;
    }
    return std::sqrt(sum / static_cast<double>(values.size()));
}

// A gradient of typical elements and one at Adam's eps; one perturbed variant moved by 5e-10
// at every element (round-off), so delta = max(tol_g * rms, 4 * 5e-10).
struct Sample {
    std::vector<double> grad{1e-3, -2e-3, 1.5e-3, 2e-8, 0.0};
    std::vector<double> variant{1e-3 + 5e-10, -2e-3 + 5e-10, 1.5e-3 + 5e-10, 2e-8 + 5e-10, 0.0};
    std::vector<double> param{0.1, 0.2, 0.3, 0.4, 0.5};
    AdamTensorInput input() const {
        AdamTensorInput in;
        in.step = firstStep();
        in.grad = grad;
        in.gradVariants = {variant};
        in.gradTolerance = 1e-7; // * rms ~ 1.2e-3 = 1.2e-10 < 4 * 5e-10
        in.safety = 4.0;
        in.param = param;
        return in;
    }
};

std::filesystem::path writeManifest(const QTemporaryDir& dir, const std::string& optimizer) {
    const std::filesystem::path root = dir.path().toStdString();
    std::ofstream(root / "manifest.json")
        << R"({"format": "ttrace-bundle", "format_version": 1, "role": "reference",
              "variants": ["nominal"], "world_size": 1, "precision": "fp32",
              "modules": [{"name": "fc", "order": 0, "depth": 1, "type": "Linear"}],
              "iterations": [0], "micro_batches": 1,
              "ranks": [{"rank": 0, "file": "rank-00000.h5"}])"
        << (optimizer.empty() ? "" : ", \"optimizer\": " + optimizer) << "}";
    return root;
}

int count(const Diagnostics& d, const std::string& code) {
    return static_cast<int>(
        std::count_if(d.begin(), d.end(), [&](const Diagnostic& x) { return x.code == code; }));
}

} // namespace

class TestAdamConditioning : public QObject {
    Q_OBJECT
private slots:
    void gradientRoundoffTakesTheLargerOfBaseAndSpread() {
        const Sample s;
        const auto delta = gradientRoundoff(s.grad, {s.variant}, 1e-7, 4.0);
        QVERIFY(near(delta[0], 4 * 5e-10, 1e-6));
        QCOMPARE(delta[4], 0.0);                // exactly zero in every variant: no round-off
        const double base = 1e-3 * rms(s.grad); // tol_g = 1e-3 dominates the spread
        QVERIFY(near(gradientRoundoff(s.grad, {s.variant}, 1e-3, 4.0)[1], base));
    }

    void wellConditionedElementsGetNoTerm() {
        Sample s;
        s.grad.resize(3);
        s.variant.resize(3);
        s.param.resize(3);
        const auto out = adamConditioning(s.input());
        QCOMPARE(out.illConditioned, std::int64_t{0});
        QVERIFY(out.terms.empty());
    }

    void nearEpsElementIsWidenedByTheReEvaluatedStep() {
        const Sample s;
        const auto out = adamConditioning(s.input());
        QCOMPARE(out.illConditioned, std::int64_t{1}); // element 3; element 4 is exact zero
        QCOMPARE(out.terms.size(), std::size_t{1});
        QCOMPARE(out.terms[0].index, std::int64_t{3});
        const double g = 2e-8, delta = 4 * 5e-10, eps = 1e-8, lr = 1e-3;
        const double at = firstUpdate(g, eps);
        const double expected = lr * std::max(std::abs(firstUpdate(g + delta, eps) - at),
                                              std::abs(firstUpdate(g - delta, eps) - at));
        QVERIFY(near(out.terms[0].term, expected, 1e-6));
        // The step moves this element by up to lr * 0.05: thousands of times what round-off
        // moves a well-conditioned element (lr * ~1e-9).
        QVERIFY(out.terms[0].term > 1e-5);
    }

    void exactZeroGradientHasNoTermButAFlippingOneHas() {
        Sample s;
        s.variant[4] = 1e-12; // round-off makes it non-zero in one variant
        const auto out = adamConditioning(s.input());
        QCOMPARE(out.illConditioned, std::int64_t{2});
        QCOMPARE(out.terms.back().index, std::int64_t{4});
        // 4 * 1e-12 is below tol_g * rms(g): the gradient's own tolerance sets the round-off.
        const double delta = 1e-7 * rms(s.grad);
        QVERIFY(near(out.terms.back().term, 1e-3 * firstUpdate(delta, 1e-8), 1e-6));
    }

    void laterStepsRecoverTheMomentsFromTheCapturedState() {
        AdamStep s = firstStep();
        s.step = 3;
        s.weightDecay = 0.1;
        const double m0 = 2e-4, v0 = 1e-9, g = 3e-6; // sqrt(v_hat) ~ 2e-5: not near eps
        AdamElement e;
        e.grad = g;
        e.delta = 4e-6; // sign within round-off
        e.param = 0.5;
        e.hasState = true;
        e.expAvg = s.beta1 * m0 + (1 - s.beta1) * g;
        e.expAvgSq = s.beta2 * v0 + (1 - s.beta2) * g * g;
        QVERIFY(adamIllConditioned(s, e));
        auto update = [&](double x) {
            const double m = s.beta1 * m0 + (1 - s.beta1) * x;
            const double v = s.beta2 * v0 + (1 - s.beta2) * x * x;
            return s.lr * (m / (1 - std::pow(s.beta1, 3))) /
                   (std::sqrt(v / (1 - std::pow(s.beta2, 3))) + s.eps);
        };
        const double expected = std::max(std::abs(update(g + e.delta) - update(g)),
                                         std::abs(update(g - e.delta) - update(g)));
        QVERIFY(near(adamUpdateChange(s, AdamQuantity::Param, e), expected, 1e-9));
        // The moments themselves are linear / quadratic in g: small, exact terms.
        QVERIFY(near(adamUpdateChange(s, AdamQuantity::ExpAvg, e), (1 - s.beta1) * e.delta));
        // Adam's L2 decay enters through the gradient: g + wd * p is far from zero.
        s.decoupled = false;
        QVERIFY(!adamIllConditioned(s, e));
    }

    void laterStepWithoutStateIsLeftAlone() {
        Sample s;
        auto in = s.input();
        in.step.step = 2; // the moments before the step are unknown
        QVERIFY(adamConditioning(in).terms.empty());
    }

    void stepFollowsTheRecordedGroup() {
        OptimizerGroup g;
        g.steps = {{0, 1e-3, 1}, {1, 5e-4, 2}};
        const auto step = adamStepAt(OptimizerType::Adam, g, 1);
        QVERIFY(step && !step->decoupled && step->lr == 5e-4 && step->step == 2);
        QVERIFY(!adamStepAt(OptimizerType::AdamW, g, 7)); // iteration not recorded
        g.amsgrad = true;                                 // max of v: not re-evaluated
        QVERIFY(!adamStepAt(OptimizerType::AdamW, g, 0));
    }

    void manifestSectionIsRead() {
        QTemporaryDir dir;
        const auto root =
            writeManifest(dir, R"({"type": "adamw", "groups": [{"betas": [0.9, 0.95], "eps": 1e-6,
                     "weight_decay": 0.1, "params": ["fc/weight"],
                     "steps": [{"iteration": 0, "lr": 0.001, "step": 1}]}]})");
        Diagnostics d;
        const auto m = readManifest(root, d);
        QVERIFY(m && m->optimizer);
        QCOMPARE(count(d, "manifest-optimizer"), 0);
        const auto* g = m->optimizer->groupFor("fc", "weight");
        QVERIFY(g && g->beta2 == 0.95 && g->eps == 1e-6 && g->stepAt(0)->lr == 0.001);
        QVERIFY(!m->optimizer->groupFor("fc", "bias"));
    }

    void badSectionIsOneWarningAndNoConditioning() {
        for (const std::string bad :
             {R"("adamw")", R"({"type": "adamw"})", R"({"type": "adam", "groups": [{}]})",
              R"({"type": "adamw", "groups": [{"betas": [0.9], "eps": 1e-8,
                  "weight_decay": 0, "steps": []}]})",
              R"({"type": "adamw", "groups": [{"betas": [0.9, 0.999], "eps": -1,
                  "weight_decay": 0, "steps": []}]})",
              R"({"type": "adamw", "groups": [{"betas": [0.9, 0.999], "eps": 1e-8,
                  "weight_decay": 0, "steps": [{"iteration": "x", "lr": 1, "step": 1}]}]})"}) {
            QTemporaryDir dir;
            Diagnostics d;
            const auto m = readManifest(writeManifest(dir, bad), d);
            QVERIFY2(m && !m->optimizer, bad.c_str());
            QCOMPARE(count(d, "manifest-optimizer"), 1);
            QVERIFY(std::all_of(d.begin(), d.end(), [](const Diagnostic& x) {
                return x.code != "manifest-optimizer" || x.severity == Severity::Warning;
            }));
        }
        QTemporaryDir dir; // an optimizer this reader does not re-evaluate: silently none
        Diagnostics d;
        const auto m = readManifest(writeManifest(dir, R"({"type": "lion", "groups": 3})"), d);
        QVERIFY(m && !m->optimizer && count(d, "manifest-optimizer") == 0);
    }

    void environmentSwitchesTheTermOff() {
        ToleranceSettings settings;
        QVERIFY(optimizerConditioningEnabled(settings));
        qputenv("TTRACE_NO_OPTIMIZER_CONDITIONING", "1");
        QVERIFY(!optimizerConditioningEnabled(settings));
        qunsetenv("TTRACE_NO_OPTIMIZER_CONDITIONING");
        settings.optimizerConditioning = false;
        QVERIFY(!optimizerConditioningEnabled(settings));
    }
};

QTEST_GUILESS_MAIN(TestAdamConditioning)
#include "test_adam_conditioning.moc"
