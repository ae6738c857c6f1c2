#include "ttrace/ui/models/agent_session.h"

#include "ttrace/io/parallel_layout_text.h"
#include "ttrace/replay/relaunch_layout_text.h"
#include "ttrace/replay/token_file.h"
#include "ttrace/ui/models/code_changes_text.h"

#include <QCoreApplication>

namespace ttrace::ui {
namespace {

QString qstr(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace

QString agentLayout(const replay::AgentInfo& info) {
    return qstr(parallelLayoutText(info.parallel, info.worldSize));
}

AgentSession::AgentSession(QObject* parent)
    : QObject(parent) {}

// The client's destructor completes a pending handshake with Closed on its owner thread; the
// completion is posted through the runner, which drops it (or is already gone).
AgentSession::~AgentSession() = default;

void AgentSession::connectTo(const AgentTarget& target) {
    target_ = target;
    client_.reset();
    info_.reset();
    error_.clear();
    const JobContext job = handshake_.begin(); // an earlier handshake's answer is dropped
    const auto endpoint = replay::endpointFromHostPort(target.hostPort().toStdString());
    if (!endpoint) {
        fail(qstr(endpoint.error().message));
        return;
    }
    replay::ClientOptions options;
    options.endpoint = endpoint.value();
    if (!target.token.isEmpty()) {
        options.token = target.token.toStdString();
    } else {
        const auto token = replay::readTokenFile(target.tokenFile.toStdString());
        if (!token) {
            fail(qstr(token.error().message));
            return;
        }
        options.token = token.value();
    }
    client_ = std::make_shared<replay::AgentClient>(options);
    state_ = State::Connecting;
    emit stateChanged(state_);
    client_->hello([this, job](const replay::Result<replay::AgentInfo>& reply) {
        // Shared, not copied into each wrapper the delivery passes through.
        auto answer = std::make_shared<const replay::Result<replay::AgentInfo>>(reply);
        job.post([this, answer] { onHello(*answer); });
    });
}

void AgentSession::onHello(const replay::Result<replay::AgentInfo>& reply) {
    handshake_.end();
    if (!reply) {
        client_.reset();
        fail(tr("handshake with %1 failed: %2")
                 .arg(target_.hostPort(), qstr(reply.error().toString())));
        return;
    }
    info_ = reply.value();
    state_ = State::Connected;
    emit stateChanged(state_);
}

void AgentSession::fail(const QString& why) {
    error_ = why;
    state_ = State::Failed;
    emit stateChanged(state_);
}

void AgentSession::disconnectAgent() {
    handshake_.end();
    client_.reset();
    info_.reset();
    error_.clear();
    state_ = State::Disconnected;
    emit stateChanged(state_);
}

std::shared_ptr<replay::AgentClient> AgentSession::client() const {
    return state_ == State::Connected ? client_ : nullptr;
}

void AgentSession::setBusy(bool busy) {
    if (busy_ != busy) {
        busy_ = busy;
        emit stateChanged(state_);
    }
}

QString AgentSession::statusText() const {
    switch (state_) {
    case State::Disconnected: return tr("agent: disconnected");
    case State::Connecting: return tr("agent: connecting to %1…").arg(target_.hostPort());
    case State::Failed: return tr("agent: not connected (%1)").arg(error_);
    case State::Connected: break;
    }
    QString text =
        tr("agent: %1 · %2 · %3").arg(target_.hostPort(), qstr(info_->agent), agentLayout(*info_));
    if (info_->relaunched) {
        text += codeChanged(*info_)
                    ? tr(" · code CHANGED since capture (%1)").arg(info_->codeChanges.size())
                    : tr(" · same code as captured");
    }
    if (replay::relaunchIsSmaller(*info_)) {
        text += tr(" · relaunched %1 of %2")
                    .arg(qstr(parallelLayoutText(info_->relaunchedLayout.parallel,
                                                 info_->relaunchedLayout.worldSize)),
                         qstr(parallelLayoutText(info_->capturedLayout.parallel,
                                                 info_->capturedLayout.worldSize)));
    }
    if (busy_) {
        text += tr(" · busy");
    }
    return text;
}

} // namespace ttrace::ui
