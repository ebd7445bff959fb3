package httpx

import (
	"net/http"
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

func (s *sseWriter) event(frame []byte) error {
	buf := make([]byte, 0, len(frame)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, frame...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
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
