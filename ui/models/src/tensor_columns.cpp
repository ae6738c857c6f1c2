#include "ttrace/ui/models/tensor_columns.h"

#include <QCoreApplication>

#include <array>

namespace ttrace::ui {
namespace {

constexpr std::array<TensorKind, kKindColumnCount> kColumnKinds{
    TensorKind::ForwardOutput,  TensorKind::ForwardInput, TensorKind::OutputGrad,
    TensorKind::InputGrad,      TensorKind::ParamGrad,    TensorKind::MainGrad,
    TensorKind::ParamAfterStep,
};

QString tr(const char* text) {
    return QCoreApplication::translate("TensorColumns", text);
}

} // namespace

std::optional<TensorKind> kindOfColumn(int column) {
    const int k = column - kFirstKindColumn;
    if (k < 0 || k >= kKindColumnCount) {
        return std::nullopt;
    }
    return kColumnKinds[static_cast<std::size_t>(k)];
}

std::optional<int> columnOfKind(TensorKind kind) {
    for (std::size_t i = 0; i < kColumnKinds.size(); ++i) {
        if (kColumnKinds[i] == kind) {
            return kFirstKindColumn + static_cast<int>(i);
        }
    }
    return std::nullopt;
}

QString kindTitle(TensorKind kind) {
    switch (kind) {
    case TensorKind::ForwardInput: return tr("fwd input");
    case TensorKind::ForwardOutput: return tr("fwd output");
    case TensorKind::OutputGrad: return tr("output grad");
    case TensorKind::InputGrad: return tr("input grad");
    case TensorKind::Parameter: return tr("parameter");
    case TensorKind::ParamGrad: return tr("param grad");
    case TensorKind::MainGrad: return tr("main grad");
    case TensorKind::ParamAfterStep: return tr("param after step");
    case TensorKind::OptimizerState: return tr("optimizer state");
    }
    return {};
}

QString columnTitle(int column) {
    if (column == kNameColumn) {
        return tr("Module");
    }
    if (column == kWorstColumn) {
        return tr("Worst");
    }
    // Short titles keep the heat columns narrow; the header tooltip has the full name.
    static const std::array<const char*, kKindColumnCount> kShort{
        QT_TRANSLATE_NOOP("TensorColumns", "fwd out"),
        QT_TRANSLATE_NOOP("TensorColumns", "fwd in"),
        QT_TRANSLATE_NOOP("TensorColumns", "out grad"),
        QT_TRANSLATE_NOOP("TensorColumns", "in grad"),
        QT_TRANSLATE_NOOP("TensorColumns", "param grad"),
        QT_TRANSLATE_NOOP("TensorColumns", "main grad"),
        QT_TRANSLATE_NOOP("TensorColumns", "after step"),
    };
    const int k = column - kFirstKindColumn;
    return k >= 0 && k < kKindColumnCount ? tr(kShort[static_cast<std::size_t>(k)]) : QString();
}

QString columnDescription(int column) {
    if (column == kNameColumn) {
        return tr("Module hierarchy in execution order");
    }
    if (column == kWorstColumn) {
        return tr("Worst error/tolerance ratio over the module's tensors");
    }
    const auto kind = kindOfColumn(column);
    if (!kind) {
        return {};
    }
    return tr("%1: error / tolerance of the worst tensor (index and step)").arg(kindTitle(*kind));
}

} // namespace ttrace::ui
