#pragma once
// Recently opened (reference, candidate) pairs, most recent first, kept in QSettings.
#include <QList>
#include <QString>

class QSettings;

namespace ttrace::ui {

struct BundlePair {
    QString reference;
    QString candidate;
    bool operator==(const BundlePair&) const = default;
};

class RecentBundles {
public:
    static constexpr int kMaxEntries = 8;

    // Uses `settings` when given (tests), the application's QSettings otherwise.
    explicit RecentBundles(QSettings* settings = nullptr);

    [[nodiscard]] QList<BundlePair> pairs() const;
    // Puts the pair first, removing an older copy and the oldest entries beyond kMaxEntries.
    void add(const BundlePair& pair);
    void clear();

private:
    void store(const QList<BundlePair>& pairs);

    QSettings* settings_;
};

} // namespace ttrace::ui
