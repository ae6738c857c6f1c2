#include "ttrace/ui/startup_localize.h"

#include "ttrace/ui/localize_ui.h"
#include "ttrace/ui/models/agent_session.h"

#include <memory>
#include <utility>

namespace ttrace::ui {

StartupLocalize::StartupLocalize(LocalizeUi* localize, QObject* parent)
    : QObject(parent)
    , localize_(localize) {}

void StartupLocalize::onLoaded(bool ok) {
    if (what_.isEmpty() || !ok) {
        what_.clear();
        emit done(ok);
        return;
    }
    runWhenConnected();
}

void StartupLocalize::runWhenConnected() {
    auto* session = localize_->session();
    if (session->state() != AgentSession::State::Connecting) {
        run();
        return;
    }
    auto once = std::make_shared<QMetaObject::Connection>();
    *once = connect(session, &AgentSession::stateChanged, this,
                    [this, once](AgentSession::State state) {
                        if (state != AgentSession::State::Connecting) {
                            disconnect(*once);
                            run();
                        }
                    });
}

void StartupLocalize::run() {
    const QString what = std::exchange(what_, QString());
    auto once = std::make_shared<QMetaObject::Connection>();
    *once = connect(localize_, &LocalizeUi::localizeFinished, this,
                    [this, once](const replay::LocalizeResult& r) {
                        disconnect(*once);
                        emit done(r.problems.empty() && !r.cancelled);
                    });
    const bool started =
        what == QLatin1String("all") ? localize_->localizeAll() : localize_->localizeModule(what);
    if (!started) {
        disconnect(*once);
        emit done(false); // no agent connected (the status bar says why) or no such module
    }
}

} // namespace ttrace::ui
