#pragma once
// The explorer's localize workflow: the agent connection (dialog, status indicator, reconnect),
// the Localize (selected module) and Localize All actions, progress and Cancel in the status
// bar, badges in the tree as verdicts arrive, and the conclusion in the headline. The replays
// run on the LocalizeController's thread; everything here runs on the GUI thread.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/manifest.h"
#include "ttrace/replay/agent_info.h"
#include "ttrace/replay/localize_result.h"
#include "ttrace/ui/models/agent_target.h"

#include <QObject>
#include <QString>

#include <memory>
#include <optional>

class QAction;
class QProgressBar;
class QStatusBar;
class QWidget;

namespace ttrace::ui {

class AgentSession;
class AgentStatusWidget;
class DrillDownPane;
class HeadlineBar;
class LayerTreeModel;
class LayerTreePane;
class LocalizeController;
class ProgressCancelWidget;

struct LocalizeUiParts {
    QWidget* window = nullptr;
    LayerTreeModel* model = nullptr;
    LayerTreePane* tree = nullptr;
    DrillDownPane* drill = nullptr;
    HeadlineBar* headline = nullptr;
    QStatusBar* statusBar = nullptr;
};

class LocalizeUi : public QObject {
    Q_OBJECT
public:
    LocalizeUi(const LocalizeUiParts& parts, QObject* parent = nullptr);
    ~LocalizeUi() override;

    [[nodiscard]] QAction* connectAction() const { return connect_; }
    [[nodiscard]] QAction* localizeAction() const { return localize_; }
    [[nodiscard]] QAction* localizeAllAction() const { return localizeAll_; }
    [[nodiscard]] QAction* cancelAction() const { return cancel_; }
    [[nodiscard]] AgentSession* session() const { return session_; }
    [[nodiscard]] AgentStatusWidget* statusWidget() const { return status_; }
    [[nodiscard]] QProgressBar* progressBar() const;
    [[nodiscard]] bool isRunning() const;

    // A new pair of bundles is being opened / has been compared.
    void setBundles(const QString& reference, const QString& candidate);
    void setResult(std::shared_ptr<const DiffResult> result);
    // The shown pair's manifests: the agent must serve these captures (checked by capture id).
    void setManifests(const Manifest& reference, const Manifest& candidate);
    [[nodiscard]] const QString& referencePath() const { return reference_; }
    [[nodiscard]] const QString& candidatePath() const { return candidate_; }
    // Why `agent` does not serve the bundles shown; empty when it does (or none is shown yet).
    [[nodiscard]] QString agentMismatch(const replay::AgentInfo& agent) const;

    // Connects (and, with `remember`, remembers the target for the open candidate bundle: an
    // agent reached through a tunnel of its own is not worth remembering).
    void connectTo(const AgentTarget& target, bool remember = true);
    // Opens the connect dialog; returns whether the user accepted.
    bool chooseAgent();
    // Localizes one module (the selected cell's phase when it is this module's) or the walk
    // from the first divergence. False when it cannot start (no agent, no results, running).
    bool localizeModule(const QString& module);
    bool localizeSelected();
    bool localizeAll();

signals:
    void localizeFinished(const ttrace::replay::LocalizeResult& result);

private:
    // Shows the localize job as it reports: status bar, tree badges, drill-down.
    void connectController();
    void updateActions();
    void announceAgent();
    // Why the shown result cannot be localized (a refused pair, nothing compared); empty: it can.
    [[nodiscard]] QString refusedBecause() const;
    std::optional<replay::Suspect> suspectFor(const QString& module) const;
    bool start(std::vector<replay::Suspect> suspects);
    void onFinished(const replay::LocalizeResult& result);

    LocalizeUiParts parts_;
    AgentSession* session_;
    LocalizeController* controller_;
    AgentStatusWidget* status_;
    QAction* cancel_;
    ProgressCancelWidget* progress_;
    QAction* connect_;
    QAction* localize_;
    QAction* localizeAll_;
    QString reference_;
    QString candidate_;
    std::shared_ptr<const DiffResult> result_;
    std::optional<Manifest> shownReference_;
    std::optional<Manifest> shownCandidate_;
};

} // namespace ttrace::ui
