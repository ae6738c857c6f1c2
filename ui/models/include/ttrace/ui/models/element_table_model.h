#pragma once
// The element view's table: the worst elements of the inspected tensor, one row each (index,
// reference, candidate, |error|, element tolerance, error / tolerance), worst first.
#include "ttrace/compare/element_errors.h"

#include <QAbstractTableModel>

namespace ttrace::ui {

class ElementTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        IndexColumn,
        ReferenceColumn,
        CandidateColumn,
        ErrorColumn,
        ToleranceColumn,
        RatioColumn,
        ColumnCount
    };
    explicit ElementTableModel(QObject* parent = nullptr);

    void setReport(const ElementReport& report);
    void clear();
    [[nodiscard]] const std::vector<ElementError>& elements() const { return elements_; }

    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation,
                                      int role) const override;

private:
    std::vector<ElementError> elements_;
};

} // namespace ttrace::ui
