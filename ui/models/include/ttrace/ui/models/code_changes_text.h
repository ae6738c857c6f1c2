#pragma once
// What an agent says of the code it runs, in the command line's words (`ttrace localize`'s
// "code" line): a replay judges the code it runs, not the code that was captured, so the
// explorer shows this for every agent before any verdict.
#include "ttrace/replay/agent_info.h"

#include <QString>

namespace ttrace::ui {

// "relaunched from the bundles; the same code as captured", "…; CHANGED since capture …",
// or empty for a live job's agent (it runs the captured code itself).
QString codeChangesLine(const replay::AgentInfo& info);
// The line, then one line per changed file or version.
QString codeChangesDetail(const replay::AgentInfo& info);
// The agent's relaunch runs other code than the capture's.
inline bool codeChanged(const replay::AgentInfo& info) {
    return info.relaunched && !info.codeChanges.empty();
}

} // namespace ttrace::ui
