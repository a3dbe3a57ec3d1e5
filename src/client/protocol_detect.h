// Recognising a server that answers in another protocol than --api asked for (NDJSON to an SSE
// client, SSE to an NDJSON client, Anthropic events to a chat client, an HTML page from a proxy),
// so the first request fails with a message naming what arrived and the --api that would fit,
// instead of recording empty successes. Cold path only (after a request that made no sense).
#pragma once

#include <string>
#include <string_view>

#include "client/openai_adapter.h"

namespace tokperf {

// True when a response of this content type can carry the protocol's stream framing. An empty
// content type fits (some servers send none).
bool content_type_fits(ApiKind api, std::string_view content_type);

// The --api name whose events look like this one JSON object ("" when it is none of them, or only
// an error object).
std::string guess_api_of_event(std::string_view json);

// A message for a response to `expected` that yielded nothing usable: what arrived (content type,
// framing, protocol, an excerpt of `head`, the body's first bytes) and which --api to try. Empty
// when the bytes look like the expected protocol after all (the caller keeps its own message).
std::string describe_foreign_stream(ApiKind expected, std::string_view content_type,
                                    std::string_view head);

}  // namespace tokperf
