#pragma once
// The terminal output of `ttrace localize`: one row per judged module as it is reached, then
// what holds the bug.
#include "ttrace/compare/diff_result.h"
#include "ttrace/replay/agent_info.h"
#include "ttrace/replay/localize_result.h"

#include <ostream>
#include <string>

namespace ttrace::cli {

class LocalizeTable {
public:
    explicit LocalizeTable(std::ostream& out)
        : out_(out) {}
    void agentLine(const replay::AgentInfo& agent, const std::string& address);
    void diffLine(const DiffResult& diff);
    void row(const replay::ModuleVerdict& verdict);
    void conclusion(const replay::LocalizeResult& result);

private:
    void header();
    std::ostream& out_;
    bool headerShown_ = false;
};

} // namespace ttrace::cli
