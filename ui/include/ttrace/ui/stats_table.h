#pragma once
// The selected tensor's statistics as a two-column table that can be copied: Ctrl+C copies the
// selection (or everything when nothing is selected), the context menu offers both.
#include <QTableView>

namespace ttrace::ui {

class StatsTableModel;

class StatsTable : public QTableView {
    Q_OBJECT
public:
    explicit StatsTable(StatsTableModel* model, QWidget* parent = nullptr);

    [[nodiscard]] StatsTableModel* statsModel() const { return model_; }
    // Puts the selected rows (or all rows) on the clipboard as tab-separated text.
    void copySelection();
    void copyAll();

protected:
    void contextMenuEvent(QContextMenuEvent* event) override;

private:
    StatsTableModel* model_;
};

} // namespace ttrace::ui
