#pragma once
// One sentence that ends a localize run in the headline: the guilty module(s) or phase, or why
// the run stopped, with how many replays it took.
#include "ttrace/replay/localize_result.h"

#include <QString>

namespace ttrace::ui {

QString localizeConclusion(const replay::LocalizeResult& result);

} // namespace ttrace::ui
