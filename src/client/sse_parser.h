// Incremental server-sent-events parser: the WHATWG HTML "event stream interpretation" rules
// (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation),
// fed bytes in whatever pieces the transport delivers.
//
// What it does, rule by rule:
//   - one leading UTF-8 BOM (EF BB BF) is skipped at stream start, also when split across feeds;
//   - lines end in LF, CR or CRLF; a CR ending one feed and an LF starting the next are ONE line
//   end.
//     An event is dispatched as soon as its terminating line end arrives (a lone CR is enough), so
//     arrival timestamps are never delayed waiting for a possible LF;
//   - a line starting with ':' is a comment: ignored, counted;
//   - otherwise the field name runs to the first ':' and one leading space is removed from the
//   value;
//     a line without ':' is a field with an empty value;
//   - `data` appends the value plus LF to the data buffer; `event` sets the event type; `id` sets
//   the
//     last event ID unless the value contains NUL; `retry` sets the reconnection time when the
//     value is ASCII digits only; other fields are ignored;
//   - an empty line dispatches: an empty data buffer dispatches nothing (but resets the event
//   type);
//     otherwise the one trailing LF is removed and the event goes to the sink. The last event ID is
//     NOT reset by dispatch (the spec keeps it until the server sets it again);
//   - at end of stream an unterminated event is discarded; has_partial_event() tells the caller the
//     stream was cut mid-event.
// One deliberate difference: bytes are not UTF-8 decoded (no U+FFFD replacement); payloads pass
// through as bytes and invalid UTF-8 is left to the JSON layer, which rejects it.
//
// Cost: after warm-up no allocation per event (buffers are reused; capacity only grows). Lines
// wholly inside one feed are not copied except into the data buffer. Thread rules: none inside; one
// parser belongs to one stream on one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tokperf {

// One dispatched event. The views point into the parser's buffers and are valid only during
// SseSink::on_event; copy what must outlive the call.
struct SseEvent {
  std::string_view type;  // the `event` field, "message" when none was given
  std::string_view data;  // data lines joined by LF, without the final LF
  std::string_view id;    // the last event ID seen on this stream so far ("" if none)
};

class SseSink {
 public:
  virtual ~SseSink() = default;
  // Called once per dispatched event, synchronously from SseParser::feed. Must not call back into
  // the parser that is dispatching.
  virtual void on_event(const SseEvent& event) = 0;
};

class SseParser {
 public:
  // The sink is not owned and must outlive the parser (or the next reset()).
  explicit SseParser(SseSink* sink);

  SseParser(const SseParser&) = delete;
  SseParser& operator=(const SseParser&) = delete;

  // Consumes the next bytes of the stream; dispatches every event they complete.
  void feed(std::string_view bytes);

  // True when the stream so far ends inside an event: an unterminated line, or field lines not yet
  // followed by the empty line that dispatches them. Call at end of stream to detect truncation.
  bool has_partial_event() const;

  // Starts a new stream with the same sink (counters, id, retry and BOM state cleared); keeps the
  // buffers' capacity so a reused parser does not allocate.
  void reset();

  // Reconnection time from the last valid `retry` field, in milliseconds; -1 if none. Values too
  // large for int64 saturate.
  int64_t retry_ms() const { return retry_ms_; }
  std::string_view last_event_id() const { return id_; }

  uint64_t bytes_fed() const { return bytes_fed_; }  // every byte passed to feed(), BOM included
  uint64_t events_dispatched() const { return events_; }  // calls made to the sink
  uint64_t comments() const { return comments_; }         // comment lines (':' first)

 private:
  void feed_lines(std::string_view bytes);
  void process_line(std::string_view line);
  void process_field(std::string_view name, std::string_view value);
  void dispatch();

  SseSink* sink_;
  std::string line_;        // an unterminated line carried over from earlier feeds
  std::string data_;        // data buffer: each data line's value followed by LF
  std::string event_type_;  // event type buffer
  std::string id_;          // last event ID buffer
  int64_t retry_ms_ = -1;
  uint8_t bom_matched_ = 0;  // BOM bytes matched so far while still at stream start
  bool at_stream_start_ = true;
  bool skip_lf_ = false;         // the previous byte was a CR that ended a line
  bool fields_pending_ = false;  // a field line was seen since the last empty line
  uint64_t bytes_fed_ = 0;
  uint64_t events_ = 0;
  uint64_t comments_ = 0;
};

}  // namespace tokperf
