package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/relayrt/relay/httpx"
)

// SessionStore runs the SessionStore suite. open returns a new, empty store; the suite waits
// out short TTLs in real time (they are a few hundred milliseconds).
func SessionStore(t *testing.T, open func(t *testing.T) httpx.SessionStore) {
	t.Run("PutThenGet", func(t *testing.T) { sessionsPutThenGet(t, open(t)) })
	t.Run("NeverHad", func(t *testing.T) { sessionsNeverHad(t, open(t)) })
	t.Run("Delete", func(t *testing.T) { sessionsDelete(t, open(t)) })
	t.Run("ExpiresUnused", func(t *testing.T) { sessionsExpire(t, open(t)) })
	t.Run("GetKeepsItAlive", func(t *testing.T) { sessionsGetKeepsAlive(t, open(t)) })
}

func get(t *testing.T, s httpx.SessionStore, id string, ttl time.Duration) string {
	t.Helper()
	rec, err := s.Get(context.Background(), id, ttl)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	if rec == nil {
		return "<none>"
	}
	return string(rec)
}

func put(t *testing.T, s httpx.SessionStore, id, rec string, ttl time.Duration) {
	t.Helper()
	if err := s.Put(context.Background(), id, []byte(rec), ttl); err != nil {
		t.Fatalf("Put(%q): %v", id, err)
	}
}

func sessionsPutThenGet(t *testing.T, s httpx.SessionStore) {
	put(t, s, "a", `{"n":1}`, time.Minute)
	put(t, s, "b", `{"n":2}`, time.Minute)
	if got := get(t, s, "a", time.Minute); got != `{"n":1}` {
		t.Fatalf("a: %s", got)
	}
	put(t, s, "a", `{"n":3}`, time.Minute) // a later Put replaces the record
	if got := get(t, s, "a", time.Minute); got != `{"n":3}` {
		t.Fatalf("a after its second Put: %s", got)
	}
	if got := get(t, s, "b", time.Minute); got != `{"n":2}` {
		t.Fatalf("b: %s", got)
	}
}

func sessionsNeverHad(t *testing.T, s httpx.SessionStore) {
	if got := get(t, s, "never", time.Minute); got != "<none>" {
		t.Fatalf("a session never put: %s", got)
	}
	if err := s.Delete(context.Background(), "never"); err != nil {
		t.Fatalf("deleting a session never put: %v", err)
	}
}

func sessionsDelete(t *testing.T, s httpx.SessionStore) {
	put(t, s, "a", "1", time.Minute)
	put(t, s, "b", "2", time.Minute)
	if err := s.Delete(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "a", time.Minute); got != "<none>" {
		t.Fatalf("a deleted: %s", got)
	}
	if got := get(t, s, "b", time.Minute); got != "2" {
		t.Fatalf("b, beside a deleted one: %s", got)
	}
}

func sessionsExpire(t *testing.T, s httpx.SessionStore) {
	put(t, s, "a", "1", 200*time.Millisecond)
	put(t, s, "b", "2", time.Minute)
	time.Sleep(400 * time.Millisecond)
	if got := get(t, s, "a", time.Minute); got != "<none>" {
		t.Fatalf("a, unused past its TTL: %s", got)
	}
	if got := get(t, s, "b", time.Minute); got != "2" {
		t.Fatalf("b: %s", got)
	}
}

func sessionsGetKeepsAlive(t *testing.T, s httpx.SessionStore) {
	put(t, s, "a", "1", 300*time.Millisecond)
	for range 4 { // 600 ms in all, each Get well within the TTL it renews
		time.Sleep(150 * time.Millisecond)
		if got := get(t, s, "a", 300*time.Millisecond); got != "1" {
			t.Fatalf("a, used within its TTL: %s", got)
		}
	}
}
