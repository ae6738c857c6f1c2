#include "ttrace/ui/models/remote_agent_launcher.h"

#include <QHostAddress>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>

namespace ttrace::ui {
namespace {

constexpr int kProbeIntervalMs = 200;
constexpr double kTunnelTimeoutS = 30.0;
constexpr int kQuotedLines = 6; // of the agent's log, in an error
constexpr int kEndWaitMs = 1500;

// A free port on 127.0.0.1 for the tunnel (0 when none): the listener closes at once, and ssh
// binds the port right after (ExitOnForwardFailure reports the rare race).
int freeLoopbackPort() {
    QTcpServer server;
    return server.listen(QHostAddress::LocalHost, 0) ? server.serverPort() : 0;
}

QStringList completeLines(QByteArray& buffer) {
    QStringList lines;
    for (qsizetype end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
        lines << QString::fromUtf8(buffer.left(end)).trimmed();
        buffer.remove(0, end + 1);
    }
    return lines;
}

} // namespace

RemoteAgentLauncher::RemoteAgentLauncher(QObject* parent)
    : QObject(parent)
    , probe_(new QTimer(this)) {
    probe_->setInterval(kProbeIntervalMs);
    connect(probe_, &QTimer::timeout, this, &RemoteAgentLauncher::probeTunnel);
}

RemoteAgentLauncher::~RemoteAgentLauncher() {
    stop();
}

QString RemoteAgentLauncher::sshProgram() {
    return qEnvironmentVariable("TTRACE_SSH", QStringLiteral("ssh"));
}

double RemoteAgentLauncher::secondsSinceStart() const {
    return clock_.isValid() ? static_cast<double>(clock_.elapsed()) / 1000.0 : 0.0;
}

QProcess* RemoteAgentLauncher::newSsh(const QStringList& arguments) {
    auto* process = new QProcess(this);
    process->setProgram(sshProgram());
    process->setArguments(arguments);
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) {
            fail(tr("cannot run %1: %2 (set TTRACE_SSH to your ssh)")
                     .arg(sshProgram(), process->errorString()));
        }
    });
    process->start();
    return process;
}

void RemoteAgentLauncher::fetchPlan(const SshTarget& target) {
    stop();
    target_ = target;
    plan_.reset();
    agent_ = {};
    lastLines_.clear();
    if (const QString problem = target.problem(); !problem.isEmpty()) {
        fail(problem);
        return;
    }
    stage_ = Stage::Planning;
    planSsh_ = newSsh(target.planArguments());
    planSsh_->closeWriteChannel();
    connect(planSsh_, &QProcess::finished, this, &RemoteAgentLauncher::onPlanFinished);
}

void RemoteAgentLauncher::onPlanFinished(int code) {
    if (stage_ != Stage::Planning || !planSsh_) {
        return;
    }
    if (planSsh_->exitStatus() != QProcess::NormalExit || code != 0) {
        fail(sshFailure(planSsh_, code, tr("ttrace serve --print-plan")));
        return;
    }
    QString error;
    plan_ = RelaunchPlan::parse(planSsh_->readAllStandardOutput(), &error);
    endProcess(planSsh_);
    if (!plan_) {
        fail(error);
        return;
    }
    stage_ = Stage::Planned;
    emit planReady(*plan_);
}

void RemoteAgentLauncher::start() {
    if (stage_ != Stage::Planned || !plan_) {
        return;
    }
    stage_ = Stage::Starting;
    clock_.start();
    serveOut_.clear();
    serveErr_.clear();
    // Its stdin stays open while the agent is wanted: closing it (or losing the connection)
    // stops the relaunch on the host.
    serveSsh_ = newSsh(target_.serveArguments(plan_->digest));
    connect(serveSsh_, &QProcess::readyReadStandardOutput, this,
            &RemoteAgentLauncher::onServeOutput);
    connect(serveSsh_, &QProcess::readyReadStandardError, this, &RemoteAgentLauncher::onServeError);
    connect(serveSsh_, &QProcess::finished, this, &RemoteAgentLauncher::onServeFinished);
    emit progress(tr("Connecting to %1…").arg(target_.destination));
}

void RemoteAgentLauncher::onServeOutput() {
    serveOut_ += serveSsh_->readAllStandardOutput();
    for (const QString& line : completeLines(serveOut_)) {
        const QJsonObject event = QJsonDocument::fromJson(line.toUtf8()).object();
        const QString kind = event.value(QStringLiteral("event")).toString();
        if (kind == QStringLiteral("started")) {
            emit progress(tr("Relaunching the candidate's %1 ranks on %2…")
                              .arg(event.value(QStringLiteral("world_size")).toInt())
                              .arg(target_.destination));
        } else if (kind == QStringLiteral("serving") && stage_ == Stage::Starting) {
            onServing(event.value(QStringLiteral("endpoint")).toString(),
                      event.value(QStringLiteral("token")).toString());
        }
    }
}

void RemoteAgentLauncher::onServeError() {
    serveErr_ += serveSsh_->readAllStandardError();
    for (const QString& line : completeLines(serveErr_)) {
        if (line.isEmpty()) {
            continue;
        }
        lastLines_ << line;
        while (lastLines_.size() > kQuotedLines) {
            lastLines_.removeFirst();
        }
        emit progress(line);
    }
}

void RemoteAgentLauncher::onServeFinished(int code) {
    if (stage_ == Stage::Starting || stage_ == Stage::Tunneling) {
        fail(sshFailure(serveSsh_, code, tr("the agent")));
    } else if (stage_ == Stage::Ready) {
        stop();
        emit ended(tr("the agent on %1 ended (exit %2)").arg(target_.destination).arg(code));
    }
}

void RemoteAgentLauncher::onServing(const QString& endpoint, const QString& token) {
    static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{64}$"));
    AgentTarget where;
    if (!AgentTarget::parseHostPort(endpoint, where) || !hex.match(token).hasMatch()) {
        fail(tr("the agent on %1 announced no valid endpoint and token").arg(target_.destination));
        return;
    }
    remoteEndpoint_ = endpoint;
    const int port = freeLoopbackPort();
    if (port == 0) {
        fail(tr("no free port on 127.0.0.1 for the tunnel"));
        return;
    }
    agent_ = AgentTarget{QStringLiteral("127.0.0.1"), port, QString(), token};
    stage_ = Stage::Tunneling;
    emit progress(tr("Agent serving at %1 on %2; opening the ssh tunnel to it…")
                      .arg(endpoint, target_.destination));
    tunnelSsh_ = newSsh(target_.tunnelArguments(port, where.host, where.port));
    tunnelSsh_->closeWriteChannel();
    connect(tunnelSsh_, &QProcess::finished, this, &RemoteAgentLauncher::onTunnelFinished);
    probe_->setProperty("since", secondsSinceStart());
    probe_->start();
}

void RemoteAgentLauncher::probeTunnel() {
    if (stage_ != Stage::Tunneling) {
        probe_->stop();
        return;
    }
    if (secondsSinceStart() - probe_->property("since").toDouble() > kTunnelTimeoutS) {
        fail(tr("the ssh tunnel to %1 did not open in %2 s").arg(target_.destination).arg(30));
        return;
    }
    if (findChild<QTcpSocket*>()) {
        return; // the last probe is still connecting
    }
    auto* socket = new QTcpSocket(this);
    connect(socket, &QTcpSocket::connected, this, [this, socket] {
        socket->abort();
        socket->deleteLater();
        if (stage_ == Stage::Tunneling) {
            stage_ = Stage::Ready;
            probe_->stop();
            emit ready(agent_);
        }
    });
    connect(socket, &QTcpSocket::errorOccurred, socket, &QObject::deleteLater);
    socket->connectToHost(QHostAddress::LocalHost, static_cast<quint16>(agent_.port));
}

void RemoteAgentLauncher::onTunnelFinished(int code) {
    if (stage_ == Stage::Tunneling) {
        fail(sshFailure(tunnelSsh_, code, tr("the ssh tunnel")));
    } else if (stage_ == Stage::Ready) {
        stop();
        emit ended(tr("the ssh tunnel to %1 closed (exit %2)").arg(target_.destination).arg(code));
    }
}

QString RemoteAgentLauncher::sshFailure(QProcess* process, int code, const QString& what) const {
    QStringList words = lastLines_;
    if (process) {
        QByteArray rest = process->readAllStandardError();
        rest += '\n';
        for (const QString& line : completeLines(rest)) {
            if (!line.isEmpty()) {
                words << line;
            }
        }
    }
    while (words.size() > kQuotedLines) {
        words.removeFirst();
    }
    const QString said = words.isEmpty() ? tr("(it said nothing)") : words.join('\n');
    // 255 is ssh's own failure (connection, authentication, host key); anything else is the
    // remote command's exit status.
    if (code == 255) {
        return tr("ssh to %1 failed:\n%2").arg(target_.destination, said);
    }
    return tr("%1 on %2 failed (exit %3):\n%4").arg(what, target_.destination).arg(code).arg(said);
}

void RemoteAgentLauncher::fail(const QString& why) {
    const bool wasFailed = stage_ == Stage::Failed;
    stop();
    stage_ = Stage::Failed;
    if (!wasFailed) {
        emit failed(why);
    }
}

void RemoteAgentLauncher::endProcess(QProcess*& process) {
    if (!process) {
        return;
    }
    QProcess* p = process;
    process = nullptr;
    disconnect(p, nullptr, this, nullptr);
    if (p->state() != QProcess::NotRunning) {
        // SIGTERM: ssh closes its connection, the host's serve sees its input end and stops
        // the relaunch; a hung ssh gets SIGKILL (the host notices the dropped connection).
        p->closeWriteChannel();
        p->terminate();
        if (!p->waitForFinished(kEndWaitMs)) {
            p->kill();
            p->waitForFinished(kEndWaitMs);
        }
    }
    p->deleteLater();
}

void RemoteAgentLauncher::stop() {
    probe_->stop();
    endProcess(planSsh_);
    endProcess(tunnelSsh_);
    endProcess(serveSsh_);
    if (stage_ != Stage::Idle && stage_ != Stage::Failed) {
        stage_ = Stage::Stopped;
    }
}

} // namespace ttrace::ui
