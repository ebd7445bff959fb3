package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/relayrt/relay/httpx"
)

// SessionStore runs the SessionStore suite. open returns a new, empty store; the suite waits
// out short TTLs in real time (a second at most).
func SessionStore(t *testing.T, open func(t *testing.T) httpx.SessionStore) {
	t.Run("PutThenGet", func(t *testing.T) { sessionsPutThenGet(t, open(t)) })
	t.Run("NeverHad", func(t *testing.T) { sessionsNeverHad(t, open(t)) })
	t.Run("Delete", func(t *testing.T) { sessionsDelete(t, open(t)) })
	t.Run("ExpiresUnused", func(t *testing.T) { sessionsExpire(t, open(t)) })
	t.Run("GetKeepsItAlive", func(t *testing.T) { sessionsGetKeepsAlive(t, open(t)) })
	t.Run("EachRevisionOverTheOneBefore", func(t *testing.T) { sessionsRevisions(t, open(t)) })
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

// put keeps rec as the next revision of id (the one after what the store has).
func put(t *testing.T, s httpx.SessionStore, id, rec string, ttl time.Duration) {
	t.Helper()
	for rev := uint64(1); rev < 100; rev++ {
		ok, err := s.Put(context.Background(), id, rev, []byte(rec), ttl)
		if err != nil {
			t.Fatalf("Put(%q, %d): %v", id, rev, err)
		}
		if ok {
			return
		}
	}
	t.Fatalf("Put(%q): no revision taken", id)
}

func putRev(t *testing.T, s httpx.SessionStore, id string, rev uint64, rec string) bool {
	t.Helper()
	ok, err := s.Put(context.Background(), id, rev, []byte(rec), time.Minute)
	if err != nil {
		t.Fatalf("Put(%q, %d): %v", id, rev, err)
	}
	return ok
}

// sessionsRevisions: a revision is kept only over the one before it, so that of two saves
// made at once one fails, and a record deleted is not written back.
func sessionsRevisions(t *testing.T, s httpx.SessionStore) {
	if putRev(t, s, "a", 2, "r2") {
		t.Fatal("revision 2 of a session the store does not have was kept")
	}
	if !putRev(t, s, "a", 1, "r1") {
		t.Fatal("revision 1 of a new session was refused")
	}
	if putRev(t, s, "a", 1, "again") {
		t.Fatal("revision 1 was kept over revision 1")
	}
	if !putRev(t, s, "a", 2, "r2") {
		t.Fatal("revision 2 over revision 1 was refused")
	}
	if putRev(t, s, "a", 2, "r2-elsewhere") || putRev(t, s, "a", 4, "r4") {
		t.Fatal("a revision kept over another than the one before it")
	}
	if got := get(t, s, "a", time.Minute); got != "r2" {
		t.Fatalf("record: %s, want r2", got)
	}
	if err := s.Delete(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if putRev(t, s, "a", 3, "r3") {
		t.Fatal("a deleted session's next revision was kept: it would be served again")
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
	put(t, s, "a", "1", time.Second)
	for range 4 { // 1.6 s in all, past the first TTL, each Get well within the TTL it renews
		time.Sleep(400 * time.Millisecond)
		if got := get(t, s, "a", time.Second); got != "1" {
			t.Fatalf("a, used within its TTL: %s", got)
		}
	}
}
