#include "ttrace/ui/models/recent_bundles.h"

#include <QSettings>

namespace ttrace::ui {
namespace {

constexpr auto kGroup = "recentBundles";

template <typename Fn> auto withSettings(QSettings* given, Fn fn) {
    if (given) {
        return fn(*given);
    }
    QSettings settings;
    return fn(settings);
}

} // namespace

RecentBundles::RecentBundles(QSettings* settings)
    : settings_(settings) {}

QList<BundlePair> RecentBundles::pairs() const {
    return withSettings(settings_, [](QSettings& s) {
        QList<BundlePair> out;
        const int n = s.beginReadArray(kGroup);
        for (int i = 0; i < n; ++i) {
            s.setArrayIndex(i);
            BundlePair p{s.value("reference").toString(), s.value("candidate").toString()};
            if (!p.reference.isEmpty() && !p.candidate.isEmpty()) {
                out << p;
            }
        }
        s.endArray();
        return out;
    });
}

void RecentBundles::add(const BundlePair& pair) {
    auto list = pairs();
    list.removeAll(pair);
    list.prepend(pair);
    while (list.size() > kMaxEntries) {
        list.removeLast();
    }
    store(list);
}

void RecentBundles::clear() {
    store({});
}

void RecentBundles::store(const QList<BundlePair>& pairs) {
    withSettings(settings_, [&pairs](QSettings& s) {
        s.remove(kGroup);
        s.beginWriteArray(kGroup, static_cast<int>(pairs.size()));
        for (int i = 0; i < pairs.size(); ++i) {
            s.setArrayIndex(i);
            s.setValue("reference", pairs[i].reference);
            s.setValue("candidate", pairs[i].candidate);
        }
        s.endArray();
        s.sync();
        return 0;
    });
}

} // namespace ttrace::ui
