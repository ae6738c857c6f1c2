#pragma once
// The localize run asked for on the command line (`--localize MODULE|all`): started once the
// comparison has finished and the agent is connected, in whichever order they come; `done`
// reports its end exactly once per comparison, so screenshots wait for the verdicts.
#include <QObject>
#include <QString>

namespace ttrace::ui {

class LocalizeUi;

class StartupLocalize : public QObject {
    Q_OBJECT
public:
    explicit StartupLocalize(LocalizeUi* localize, QObject* parent = nullptr);

    // A module name, "all", or empty for none.
    void setRequest(const QString& what) { what_ = what; }
    // The comparison ended (`ok`: the bundles could be compared).
    void onLoaded(bool ok);

signals:
    // `ok`: loaded, and the requested run (if any) ended without problems or cancel.
    void done(bool ok);

private:
    void runWhenConnected();
    void run();

    LocalizeUi* localize_;
    QString what_;
};

} // namespace ttrace::ui
