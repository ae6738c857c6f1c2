#pragma once
// Filter and sort proxy of the layer tree: a case-insensitive search on the canonical module name
// and the module type ("attn", "RMSNorm"), as plain text or as a regular expression, and a
// "divergent only" switch. Filtering is recursive, so a match deep in the tree keeps its
// ancestors visible; sorting uses SortRole (execution order on the name column, ratio elsewhere).
#include <QRegularExpression>
#include <QSortFilterProxyModel>

namespace ttrace::ui {

class LayerFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit LayerFilterProxy(QObject* parent = nullptr);

    void setSearchText(const QString& text) { setSearch(text, false); }
    // `regex`: the text is a regular expression (case-insensitive, anywhere in the name or the
    // type); an invalid one matches nothing and says why in searchError().
    void setSearch(const QString& text, bool regex);
    [[nodiscard]] const QString& searchText() const { return text_; }
    [[nodiscard]] QString searchError() const;
    // Whether a module name or type matches the search (true when there is none).
    [[nodiscard]] bool matches(const QString& name, const QString& type) const;
    void setDivergentOnly(bool divergentOnly);
    [[nodiscard]] bool divergentOnly() const { return divergentOnly_; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    bool divergentOnly_ = false;
    QString text_;
    bool regex_ = false;
    QRegularExpression pattern_;
};

} // namespace ttrace::ui
