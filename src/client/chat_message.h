// One message of a conversation: a dataset's chat history or a multi-turn session's turns.
#pragma once

#include <string>

namespace tokperf {

// role: "system", "user", "assistant", ... as the source gives it.
struct ChatMessage {
  std::string role;
  std::string content;
};

}  // namespace tokperf
