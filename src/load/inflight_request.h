// One request on the wire: its timeline, its stream recorder and the transport callbacks that fill
// them, and the classification of how it ended (docs/metrics.md, "errors"). Reused for request after
// request by the runner (one per concurrent slot), so steady-state requests allocate little.
//
// Thread rules: the transport's loop thread only.
#pragma once

#include <functional>
#include <string>

#include "client/openai_adapter.h"
#include "client/stream_recorder.h"
#include "client/transport.h"
#include "metrics/request_record.h"

namespace tokperf {

class InflightRequest final : public StreamHandler {
 public:
  // on_done runs once per request, after the timeline is complete (error kind included).
  InflightRequest(ChunkClassifier* classifier, std::function<void(InflightRequest*)> on_done)
      : recorder_(classifier), on_done_(std::move(on_done)) {}

  // Stamps the send time immediately before handing the request to the transport. keep_reply:
  // keep the reply's visible text (a session turn; reply_text()).
  void start(RequestTimeline timeline, const StreamRequest& request, Transport& transport,
             bool keep_reply = false);

  RequestTimeline& timeline() { return tl_; }
  uint64_t transfer_id() const { return transfer_id_; }
  uint64_t stream_events() const { return recorder_.events(); }
  const std::string& reply_text() const { return recorder_.reply_text(); }

  void on_headers(int http_status, std::string_view content_type, int64_t t_ns) override;
  bool on_body(std::string_view bytes, int64_t t_ns) override;
  void on_complete(const TransferResult& result, int64_t t_ns) override;

 private:
  bool is_event_stream() const;
  void fail(ErrorKind kind, std::string message);
  void classify_outcome(const TransferResult& r);

  StreamRecorder recorder_;
  std::function<void(InflightRequest*)> on_done_;
  RequestTimeline tl_;
  std::string error_body_;
  std::string content_type_;
  int status_ = 0;
  uint64_t transfer_id_ = 0;
};

}  // namespace tokperf
