package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/relayrt/relay/httpx"
)

// EventStore runs the EventStore suite. open returns a new, empty store that keeps at most
// events events of one stream (a memory store's bound is across all streams, which the
// suite's single-stream bound tests cannot tell apart).
func EventStore(t *testing.T, open func(t *testing.T, events int) httpx.EventStore) {
	t.Run("ReplaysInOrder", func(t *testing.T) { eventsReplayInOrder(t, open(t, 100)) })
	t.Run("NeverHad", func(t *testing.T) { eventsNeverHad(t, open(t, 100)) })
	t.Run("StreamsAndSessionsApart", func(t *testing.T) { eventsApart(t, open(t, 100)) })
	t.Run("AGapEndsWhatCameBefore", func(t *testing.T) { eventsGap(t, open(t, 100)) })
	t.Run("BoundedInEvents", func(t *testing.T) { eventsBounded(t, open(t, 3)) })
	t.Run("Forget", func(t *testing.T) { eventsForget(t, open(t, 100)) })
	t.Run("ForgottenEventsDoNotCount", func(t *testing.T) { eventsForgottenDoNotCount(t, open(t, 3)) })
}

// after calls After and fails the test on an error.
func after(t *testing.T, s httpx.EventStore, session, stream string, seq uint64) ([][]byte, bool) {
	t.Helper()
	frames, ok, err := s.After(context.Background(), session, stream, seq)
	if err != nil {
		t.Fatalf("After(%q, %q, %d): %v", session, stream, seq, err)
	}
	return frames, ok
}

func appendAll(t *testing.T, s httpx.EventStore, session, stream string, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := s.Append(context.Background(), session, stream, i, fmt.Appendf(nil, "%s/%s/%d", session, stream, i)); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
}

func want(session, stream string, seqs ...uint64) [][]byte {
	var frames [][]byte
	for _, i := range seqs {
		frames = append(frames, fmt.Appendf(nil, "%s/%s/%d", session, stream, i))
	}
	return frames
}

func sameFrames(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}

func eventsReplayInOrder(t *testing.T, s httpx.EventStore) {
	appendAll(t, s, "s", "p1", 1, 5)
	if frames, ok := after(t, s, "s", "p1", 0); !ok || !sameFrames(frames, want("s", "p1", 1, 2, 3, 4, 5)) {
		t.Errorf("After 0 = %q %v, want events 1 to 5", frames, ok)
	}
	if frames, ok := after(t, s, "s", "p1", 3); !ok || !sameFrames(frames, want("s", "p1", 4, 5)) {
		t.Errorf("After 3 = %q %v, want 4 5", frames, ok)
	}
	if frames, ok := after(t, s, "s", "p1", 5); !ok || len(frames) != 0 {
		t.Errorf("After the last = %q %v, want nothing, resumable", frames, ok)
	}
	// Binary frames come back byte for byte.
	bin := []byte{0, 1, 0xff, '\n', '\r', 0}
	if err := s.Append(context.Background(), "s", "p1", 6, bin); err != nil {
		t.Fatal(err)
	}
	if frames, ok := after(t, s, "s", "p1", 5); !ok || len(frames) != 1 || string(frames[0]) != string(bin) {
		t.Errorf("a binary frame came back as %q %v", frames, ok)
	}
}

func eventsNeverHad(t *testing.T, s httpx.EventStore) {
	if frames, ok := after(t, s, "nobody", "p1", 0); ok || len(frames) != 0 {
		t.Errorf("an unknown session: %q %v, want not resumable", frames, ok)
	}
	appendAll(t, s, "s", "p1", 1, 2)
	if _, ok := after(t, s, "s", "p2", 0); ok {
		t.Error("a stream the session never had is resumable")
	}
}

func eventsApart(t *testing.T, s httpx.EventStore) {
	appendAll(t, s, "s", "p1", 1, 3)
	appendAll(t, s, "s", "p2", 1, 2)
	appendAll(t, s, "t", "p1", 1, 1)
	// Names that run together when joined must still be apart.
	appendAll(t, s, "s:p", "1", 1, 1)
	for _, c := range []struct {
		session, stream string
		seqs            []uint64
	}{{"s", "p1", []uint64{1, 2, 3}}, {"s", "p2", []uint64{1, 2}}, {"t", "p1", []uint64{1}}, {"s:p", "1", []uint64{1}}} {
		if frames, ok := after(t, s, c.session, c.stream, 0); !ok || !sameFrames(frames, want(c.session, c.stream, c.seqs...)) {
			t.Errorf("%s/%s: After 0 = %q %v", c.session, c.stream, frames, ok)
		}
	}
}

func eventsGap(t *testing.T, s httpx.EventStore) {
	appendAll(t, s, "s", "p1", 1, 2)
	appendAll(t, s, "s", "p1", 4, 5) // 3 never came
	if _, ok := after(t, s, "s", "p1", 0); ok {
		t.Error("resumed from before a gap")
	}
	if _, ok := after(t, s, "s", "p1", 2); ok {
		t.Error("resumed across the missing event 3")
	}
	if frames, ok := after(t, s, "s", "p1", 3); !ok || !sameFrames(frames, want("s", "p1", 4, 5)) {
		t.Errorf("After 3 = %q %v, want 4 5", frames, ok)
	}
}

// eventsBounded: the store keeps at most its events; a stream whose early events went
// cannot be resumed from before them.
func eventsBounded(t *testing.T, s httpx.EventStore) {
	ctx := context.Background()
	for i := 1; i <= 5; i++ {
		s.Append(ctx, "s", "p1", uint64(i), []byte{byte('0' + i)})
	}
	if _, ok := after(t, s, "s", "p1", 0); ok {
		t.Error("resumed from before the events the count bound let go")
	}
	frames, ok := after(t, s, "s", "p1", 2)
	if !ok || len(frames) != 3 || string(frames[0]) != "3" || string(frames[2]) != "5" {
		t.Errorf("After 2 = %q %v, want 3 4 5", frames, ok)
	}
}

func eventsForget(t *testing.T, s httpx.EventStore) {
	appendAll(t, s, "s", "p1", 1, 4)
	appendAll(t, s, "s", "GET", 1, 2)
	appendAll(t, s, "other", "p1", 1, 2)
	if err := s.Forget(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	if _, ok := after(t, s, "s", "p1", 3); ok {
		t.Error("a forgotten session's stream is still resumable")
	}
	if _, ok := after(t, s, "s", "GET", 0); ok {
		t.Error("a forgotten session's second stream is still resumable")
	}
	if frames, ok := after(t, s, "other", "p1", 0); !ok || !sameFrames(frames, want("other", "p1", 1, 2)) {
		t.Errorf("another session lost its events with the forgotten one: %q %v", frames, ok)
	}
	if err := s.Forget(context.Background(), "never"); err != nil {
		t.Errorf("forgetting an unknown session: %v", err)
	}
	// A session id may come back (a client's guess, or a store outliving a restart): it
	// starts afresh.
	appendAll(t, s, "s", "p1", 1, 1)
	if frames, ok := after(t, s, "s", "p1", 0); !ok || !sameFrames(frames, want("s", "p1", 1)) {
		t.Errorf("a forgotten session's stream begun again: %q %v", frames, ok)
	}
}

// eventsForgottenDoNotCount: a forgotten session's events no longer count against the
// bounds, even while older events of others are kept.
func eventsForgottenDoNotCount(t *testing.T, f httpx.EventStore) {
	ctx := context.Background()
	f.Append(ctx, "live", "p1", 1, []byte("1"))
	f.Append(ctx, "gone", "p1", 1, []byte("a"))
	f.Append(ctx, "gone", "p1", 2, []byte("b"))
	f.Forget(ctx, "gone")
	f.Append(ctx, "live", "p1", 2, []byte("2"))
	f.Append(ctx, "live", "p1", 3, []byte("3"))
	if frames, ok := after(t, f, "live", "p1", 0); !ok || len(frames) != 3 {
		t.Errorf("after a Forget: After 0 = %q %v, want the live session's three events", frames, ok)
	}
}
