// Incremental newline-delimited JSON framing (https://github.com/ndjson/ndjson-spec; Ollama's
// /api/chat and /api/generate streams), fed bytes in whatever pieces the transport delivers — the
// NDJSON counterpart of client/sse_parser.h.
//
// Rules:
//   - one leading UTF-8 BOM (EF BB BF) is skipped at stream start, also when split across feeds;
//   - a record ends at LF; one CR right before the LF is dropped (CRLF tolerated). A lone CR is
//     part of the line (NDJSON has no CR line ends);
//   - a record is dispatched as soon as its LF arrives, so arrival times are never delayed;
//   - lines that are empty or whitespace only are skipped and counted (blank_lines), never
//     dispatched;
//   - at end of stream an unterminated line is not dispatched; has_partial_event() says whether
//     one (with any non-whitespace byte) is pending, i.e. the stream was cut mid-record.
// The record's bytes are not validated here; the classifier (client/openai_adapter.h) parses them.
// Each record reaches the sink as an SseEvent with type "message", data = the line without its
// line end, id "", so one StreamRecorder serves both framings.
//
// Cost: lines wholly inside one feed are passed without copying; buffers are reused. Thread rules:
// none inside; one parser per stream.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/sse_parser.h"

namespace tokperf {

class NdjsonParser {
 public:
  // The sink is not owned and must outlive the parser.
  explicit NdjsonParser(SseSink* sink) : sink_(sink) {}

  NdjsonParser(const NdjsonParser&) = delete;
  NdjsonParser& operator=(const NdjsonParser&) = delete;

  // Consumes the next bytes of the stream; dispatches every record they complete.
  void feed(std::string_view bytes);
  // True when the bytes so far end inside a record (non-whitespace bytes after the last LF).
  bool has_partial_event() const;
  // Starts a new stream with the same sink; keeps buffer capacity.
  void reset();

  uint64_t bytes_fed() const { return bytes_fed_; }
  uint64_t events_dispatched() const { return events_; }
  uint64_t blank_lines() const { return blank_lines_; }

 private:
  void line(std::string_view l);

  SseSink* sink_;
  std::string line_;  // an unterminated line carried over from earlier feeds
  uint8_t bom_matched_ = 0;
  bool at_stream_start_ = true;
  uint64_t bytes_fed_ = 0;
  uint64_t events_ = 0;
  uint64_t blank_lines_ = 0;
};

}  // namespace tokperf
