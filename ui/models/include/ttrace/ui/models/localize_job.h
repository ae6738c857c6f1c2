#pragma once
// One localize run for the explorer: the core's use case (ttrace/replay/localize_session.h),
// the same one `ttrace localize` runs, so both say the same things in the same words. Runs on
// the caller's thread (a worker's) and blocks on the agent.
#include "ttrace/replay/localize_session.h"

namespace ttrace::ui {

using replay::expectedReplays;
using LocalizeRequest = replay::LocalizeRequest;
using LocalizeCallbacks = replay::LocalizeCallbacks;

// replay::localize: never throws; transport failures, a reference bundle that cannot be opened
// and a diff with errors end up in LocalizeResult::problems, a cancel in
// LocalizeResult::cancelled.
replay::LocalizeResult runLocalize(replay::AgentClient& client, const replay::AgentInfo& agent,
                                   const LocalizeRequest& request,
                                   const replay::CancelToken& cancel,
                                   const LocalizeCallbacks& callbacks);

} // namespace ttrace::ui
