#pragma once
// The corrupt fixture bundles and the phrase each one's message must contain, as listed in
// `<fixtures>/broken/EXPECTED.txt` by `python -m ttrace_testing.fixtures`. Shared by the core and
// the explorer tests so both check the same cases.
#include <QFile>
#include <QList>
#include <QPair>
#include <QString>

namespace ttrace::testing {

// (case directory, expected phrase) pairs; empty when the list cannot be read.
inline QList<QPair<QString, QString>> brokenFixtureCases() {
    const QString root = qEnvironmentVariable("TTRACE_FIXTURES_DIR") + "/broken";
    QList<QPair<QString, QString>> cases;
    QFile list(root + "/EXPECTED.txt");
    if (!list.open(QIODevice::ReadOnly)) {
        return cases;
    }
    while (!list.atEnd()) {
        const auto line = QString::fromUtf8(list.readLine()).trimmed();
        const auto tab = line.indexOf('\t');
        if (!line.isEmpty() && tab > 0) {
            cases.append({root + "/" + line.left(tab), line.mid(tab + 1)});
        }
    }
    return cases;
}

} // namespace ttrace::testing
