package httpx

import (
	"net/http"
	"time"
)

// HeldBodyBytes reports the bytes of request bodies a handler holds of its BodyBudget.
func HeldBodyBytes(h http.Handler) int64 {
	switch h := h.(type) {
	case *MCPHandler:
		return h.bodies.Load()
	case *RCPHandler:
		return h.bodies.Load()
	}
	panic("HeldBodyBytes: not an MCPHandler or RCPHandler")
}

// SetEventStoreClock makes a MemoryEventStore read the time from now.
func SetEventStoreClock(m *MemoryEventStore, now func() time.Time) { m.now = now }

// ParseJWK reads one key of a JWK set, as a TokenVerifier does.
var ParseJWK = parseJWK

// SetClock makes f the clock by which v times its fetches of the issuer's keys.
func (v *TokenVerifier) SetClock(f func() time.Time) {
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	v.now = f
}
