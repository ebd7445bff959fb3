package httpx

import (
	"fmt"
	"net/http"
	"time"
)

// sseWriter writes a Server-Sent Events stream, one JSON-RPC message per event, flushed at
// once.
type sseWriter struct {
	w http.ResponseWriter
	f *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no") // nginx and its kind: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, f: http.NewResponseController(w)}
	s.f.Flush()
	return s
}

func (s *sseWriter) event(frame []byte) error { return s.eventWithID(frame, "") }

// eventWithID writes frame as an event with the id given ("": none).
func (s *sseWriter) eventWithID(frame []byte, id string) error {
	buf := make([]byte, 0, len(frame)+len(id)+32)
	if id != "" {
		buf = append(buf, "id: "...)
		buf = append(buf, id...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, frame...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	return s.f.Flush()
}

// retryAfterClose is the reconnection delay a resumable stream tells its client (the SSE
// retry field): how long to wait before resuming a stream that closed before its answer.
const retryAfterClose = 500 * time.Millisecond

// prime writes a resumable stream's priming event: its id, the retry interval, and no data
// (MCP 2025-11-25, Transports › Streamable HTTP: a client records the id and dispatches
// nothing).
func (s *sseWriter) prime(id string) error {
	if _, err := fmt.Fprintf(s.w, "id: %s\nretry: %d\ndata: \n\n", id, retryAfterClose.Milliseconds()); err != nil {
		return err
	}
	return s.f.Flush()
}

func (s *sseWriter) comment(text string) error {
	if _, err := s.w.Write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return s.f.Flush()
}
