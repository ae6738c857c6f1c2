#include "ttrace/ui/models/localize_job.h"

namespace ttrace::ui {

replay::LocalizeResult runLocalize(replay::AgentClient& client, const replay::AgentInfo& agent,
                                   const LocalizeRequest& request,
                                   const replay::CancelToken& cancel,
                                   const LocalizeCallbacks& callbacks) {
    return replay::localize(client, agent, request, cancel, callbacks);
}

} // namespace ttrace::ui
