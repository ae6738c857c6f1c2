#include "ttrace/ui/localize_ui.h"

#include "ttrace/replay/bundle_match.h"
#include "ttrace/replay/localize_walk.h"
#include "ttrace/report/verdict_text.h"
#include "ttrace/ui/agent_status_widget.h"
#include "ttrace/ui/connect_dialog.h"
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/models/agent_session.h"
#include "ttrace/ui/models/code_changes_text.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/localize_controller.h"
#include "ttrace/ui/models/localize_summary.h"
#include "ttrace/ui/models/tensor_columns.h"
#include "ttrace/ui/progress_cancel_widget.h"

#include <QAction>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <QStyle>
#include <QTreeView>

#include <algorithm>

namespace ttrace::ui {
namespace {

using namespace ttrace::replay;

// The suspect a tensor makes: its phase of the step, at its iteration and micro-batch.
Suspect suspectOf(const TensorId& id) {
    const DivergenceStart at = divergenceStartOf(id); // the report's timeline
    Suspect s;
    s.module = id.module;
    s.iteration = at.iteration;
    s.phase = at.phase;
    s.microBatch = std::max<std::int64_t>(id.microBatch, 0);
    return s;
}

} // namespace

LocalizeUi::LocalizeUi(const LocalizeUiParts& parts, QObject* parent)
    : QObject(parent)
    , parts_(parts)
    , session_(new AgentSession(this))
    , controller_(new LocalizeController(this))
    , status_(new AgentStatusWidget(session_, parts.window))
    , cancel_(new QAction(tr("Cancel Localize"), this))
    , progress_(new ProgressCancelWidget(cancel_, tr("Cancel Localize"), parts.window)) {
    QStyle* style = parts.window->style();
    connect_ =
        new QAction(style->standardIcon(QStyle::SP_DriveNetIcon), tr("&Connect to Agent…"), this);
    connect_->setObjectName(QStringLiteral("connectAgentAction"));
    connect_->setShortcut(Qt::CTRL | Qt::Key_K);
    connect_->setIconText(tr("Connect"));
    connect_->setToolTip(tr("Connect to the localize agent serving the candidate job (Ctrl+K)"));
    localize_ =
        new QAction(style->standardIcon(QStyle::SP_FileDialogContentsView), tr("&Localize"), this);
    localize_->setObjectName(QStringLiteral("localizeAction"));
    localize_->setShortcut(Qt::CTRL | Qt::Key_L);
    localizeAll_ =
        new QAction(style->standardIcon(QStyle::SP_MediaPlay), tr("Localize &All"), this);
    localizeAll_->setObjectName(QStringLiteral("localizeAllAction"));
    localizeAll_->setShortcut(Qt::CTRL | Qt::SHIFT | Qt::Key_L);
    localizeAll_->setToolTip(tr("Replay the divergent modules in causal order from the first "
                                "divergence in time (Ctrl+Shift+L)"));
    cancel_->setObjectName(QStringLiteral("cancelLocalizeAction"));

    QProgressBar* bar = progress_->bar();
    bar->setObjectName(QStringLiteral("localizeProgress"));
    bar->setMaximumWidth(200);
    bar->setTextVisible(true);
    bar->setFormat(QStringLiteral("%v / %m"));
    progress_->cancelButton()->setObjectName(QStringLiteral("cancelLocalizeButton"));
    parts.statusBar->addPermanentWidget(progress_);
    parts.statusBar->addPermanentWidget(status_);

    connect(connect_, &QAction::triggered, this, [this] { chooseAgent(); });
    connect(localize_, &QAction::triggered, this, [this] { localizeSelected(); });
    connect(localizeAll_, &QAction::triggered, this, [this] { localizeAll(); });
    connect(cancel_, &QAction::triggered, controller_, &LocalizeController::cancel);
    connect(session_, &AgentSession::stateChanged, this, &LocalizeUi::updateActions);
    connect(session_, &AgentSession::stateChanged, this, [this](AgentSession::State state) {
        if (state == AgentSession::State::Connected && !session_->busy()) {
            announceAgent();
        }
    });
    connect(parts.tree, &LayerTreePane::currentModuleChanged, this, &LocalizeUi::updateActions);

    connectController();
    updateActions();
}

LocalizeUi::~LocalizeUi() = default;

void LocalizeUi::connectController() {
    connect(controller_, &LocalizeController::started, this, [this](int expected) {
        progress_->begin(expected);
        session_->setBusy(true);
        updateActions();
    });
    connect(controller_, &LocalizeController::replaying, this,
            [this](const QString& module, int done, int expected) {
                progress_->setRange(expected);
                progress_->setValue(done);
                progress_->setText(module.isEmpty() ? tr("Replaying the optimizer step…")
                                                    : tr("Replaying %1…").arg(module));
                parts_.model->setReplaying(module.toStdString());
            });
    connect(controller_, &LocalizeController::waiting, this, [this](double seconds, bool busy) {
        progress_->setText(
            progress_->text().section(QStringLiteral(" ("), 0, 0) +
            tr(" (%1 s%2)").arg(seconds, 0, 'f', 0).arg(busy ? tr(", agent busy") : QString()));
    });
    connect(controller_, &LocalizeController::verdictReady, this, [this](const ModuleVerdict& v) {
        parts_.model->addLocalizeVerdict(v);
        progress_->setValue(std::min(progress_->value() + 1, progress_->maximum()));
        parts_.drill->refreshReplay();
    });
    connect(controller_, &LocalizeController::finished, this, &LocalizeUi::onFinished);
}

QProgressBar* LocalizeUi::progressBar() const {
    return progress_->bar();
}

bool LocalizeUi::isRunning() const {
    return controller_->isRunning();
}

void LocalizeUi::setBundles(const QString& reference, const QString& candidate) {
    controller_->cancel();
    reference_ = reference;
    candidate_ = candidate;
    result_.reset();
    shownReference_.reset();
    shownCandidate_.reset();
    updateActions();
}

void LocalizeUi::setManifests(const Manifest& reference, const Manifest& candidate) {
    shownReference_ = reference;
    shownCandidate_ = candidate;
    updateActions();
}

QString LocalizeUi::agentMismatch(const replay::AgentInfo& agent) const {
    if (!shownReference_ || !shownCandidate_) {
        return {};
    }
    const auto mismatch = agentBundleMismatch(agent, *shownReference_, *shownCandidate_);
    return mismatch ? QString::fromStdString(mismatch->message) : QString();
}

void LocalizeUi::setResult(std::shared_ptr<const DiffResult> result) {
    result_ = std::move(result);
    updateActions();
}

void LocalizeUi::connectTo(const AgentTarget& target, bool remember) {
    if (remember && !candidate_.isEmpty()) {
        rememberAgent(candidate_, target);
    }
    session_->connectTo(target);
}

bool LocalizeUi::chooseAgent() {
    AgentTarget initial = session_->target();
    if (!initial.isComplete() && !candidate_.isEmpty()) {
        initial = rememberedAgent(candidate_);
    }
    ConnectDialog dialog(initial, parts_.window);
    if (dialog.exec() != QDialog::Accepted) {
        return false;
    }
    connectTo(dialog.target());
    return true;
}

std::optional<Suspect> LocalizeUi::suspectFor(const QString& module) const {
    const ResultSet& results = parts_.model->results();
    const std::string name = module.toStdString();
    // The selected cell says which phase the user looks at, when it is this module's own.
    if (const auto t = parts_.tree->currentTensor();
        t && parts_.tree->currentModule() == module && results.tensor(*t).id.module == name) {
        return suspectOf(results.tensor(*t).id);
    }
    // Else the module's first divergence in time.
    std::optional<Suspect> best;
    std::optional<DivergenceStart> when;
    for (const auto& t : results.tensors()) {
        if (t.id.module != name || t.status != Status::Divergent) {
            continue;
        }
        const auto at = divergenceStartOf(t.id);
        if (!when || at < *when) {
            when = at;
            best = suspectOf(t.id);
        }
    }
    if (!best && results.size() > 0) {
        Suspect s;
        s.module = name;
        s.iteration = results.iterations().empty() ? 0 : results.iterations().front();
        best = s;
    }
    return best;
}

bool LocalizeUi::localizeModule(const QString& module) {
    if (!parts_.model->indexOfModule(module).isValid()) {
        parts_.headline->setConclusion(tr("Cannot localize: no module '%1'").arg(module), false);
        return false;
    }
    const auto suspect = suspectFor(module);
    return suspect && start({*suspect});
}

bool LocalizeUi::localizeSelected() {
    return localizeModule(parts_.tree->currentModule());
}

bool LocalizeUi::localizeAll() {
    return start({});
}

bool LocalizeUi::start(std::vector<Suspect> suspects) {
    const auto client = session_->client();
    if (controller_->isRunning()) {
        return false;
    }
    if (const QString refused = refusedBecause(); !refused.isEmpty()) {
        parts_.headline->setConclusion(tr("Cannot localize: %1").arg(refused), false);
        return false;
    }
    if (!client || !result_ || !session_->info()) {
        // Said where a screenshot shows it (and `--localize` prints it).
        parts_.headline->setConclusion(
            tr("Cannot localize: %1")
                .arg(!result_ ? tr("the comparison has not finished") : session_->statusText()),
            false);
        return false;
    }
    LocalizeRequest request;
    request.diff = result_;
    request.referenceBundle = reference_.toStdString();
    request.suspects = std::move(suspects);
    // Earlier verdicts stay: each new one replaces only its own module's at its iteration.
    parts_.headline->setConclusion(tr("Localizing…"), false);
    return controller_->start(client, *session_->info(), std::move(request));
}

void LocalizeUi::onFinished(const LocalizeResult& result) {
    parts_.model->finishLocalize(result);
    // Room for the badges beside the names, within reason.
    QTreeView* view = parts_.tree->treeView();
    view->resizeColumnToContents(kNameColumn);
    view->setColumnWidth(kNameColumn, std::clamp(view->columnWidth(kNameColumn), 210, 330));
    parts_.drill->refreshReplay();
    progress_->end();
    session_->setBusy(false);
    parts_.headline->setConclusion(localizeConclusion(result), result.introduced());
    updateActions();
    emit localizeFinished(result);
}

void LocalizeUi::announceAgent() {
    // Before any verdict: which code the agent runs, and whether it serves the bundles shown.
    const auto& info = *session_->info();
    const QString other = agentMismatch(info);
    const QString message =
        other.isEmpty() ? codeChangesLine(info) : tr("Localize disabled: %1").arg(other);
    if (!message.isEmpty()) {
        parts_.statusBar->showMessage(message);
    }
}

QString LocalizeUi::refusedBecause() const {
    // An agent serving another capture would judge modules with another run's code and inputs.
    if (const auto* info = session_->client() ? session_->info() : nullptr) {
        if (const QString other = agentMismatch(*info); !other.isEmpty()) {
            return other;
        }
    }
    if (!result_) {
        return {};
    }
    // A refused pair has no story to localize: replaying it would badge an innocent module.
    if (const auto refusal = pairRefusal(result_->diagnostics)) {
        return tr("the pair was not compared (%1)")
            .arg(QString::fromStdString(refusal->diagnostic.message));
    }
    return result_->tensors.empty() ? tr("no tensor was compared") : QString();
}

void LocalizeUi::updateActions() {
    const bool connected = session_->client() != nullptr;
    const QString refused = refusedBecause();
    const bool ready = connected && result_ && refused.isEmpty() && !controller_->isRunning();
    const QString module = parts_.tree->currentModule();
    localize_->setEnabled(ready && !module.isEmpty());
    localizeAll_->setEnabled(ready);
    cancel_->setEnabled(controller_->isRunning());
    const QString why = !refused.isEmpty() ? refused
                        : !connected       ? tr("connect to an agent first (Ctrl+K)")
                        : !result_         ? tr("wait until the comparison finishes")
                                           : QString();
    localize_->setToolTip(
        why.isEmpty()
            ? tr("Replay %1 with the reference's inputs on the agent (Ctrl+L)").arg(module)
            : tr("Localize: %1").arg(why));
    localize_->setStatusTip(localize_->toolTip());
    localizeAll_->setToolTip(why.isEmpty()
                                 ? tr("Replay the divergent modules in causal order from the first "
                                      "divergence in time (Ctrl+Shift+L)")
                                 : tr("Localize All: %1").arg(why));
}

} // namespace ttrace::ui
