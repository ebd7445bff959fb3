package httpx

import "net/http"

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
