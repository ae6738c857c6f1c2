#pragma once
// The JSON document behind a ReplyHeader, shared by the files that read its parts.
#include "json_fields.h"
#include "ttrace/replay/reply_parser.h"

namespace ttrace::replay {

struct ReplyHeader::Json {
    json::Json value;
};

} // namespace ttrace::replay
