package ratelog_test

import (
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/internal/ratelog"
)

func Example() {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	log := zap.NewExample() // JSON on stdout, no timestamps
	l := ratelog.New(log, &ratelog.Options{PerSecond: 2, MaxBytes: 8, Now: func() time.Time { return now }})
	for range 1000 {
		l.Warn("dropped a malformed line", []byte("y y y y y y y y"))
	}
	l.Flush() // the owner, at its end
	// Output:
	// {"level":"warn","msg":"dropped a malformed line","frame":"y y y y ","frameLength":15}
	// {"level":"warn","msg":"dropped a malformed line","frame":"y y y y ","frameLength":15}
	// {"level":"warn","msg":"998 more like this in the last second","like":"dropped a malformed line","more":998,"since":"2026-12-01T00:00:00.000Z"}
}
