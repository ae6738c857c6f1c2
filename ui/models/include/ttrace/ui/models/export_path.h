#pragma once
// Where an export goes by default: next to the bundles (the folder holding the candidate,
// where a bug report's other files are), under a name that says what it is and when it was
// made, so a second export never overwrites the first.
#include <QDateTime>
#include <QString>

namespace ttrace::ui {

// `<candidate's parent>/ttrace-<what>-<yyyyMMdd-HHmmss>.<suffix>`; the home folder when no
// bundle is open.
[[nodiscard]] QString defaultExportPath(const QString& candidateDir, const QString& what,
                                        const QString& suffix, const QDateTime& when);

} // namespace ttrace::ui
