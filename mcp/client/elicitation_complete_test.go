package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// MCP 2025-11-25, Client Features › Elicitation › URL mode: the server tells the client
// that the interaction at the URL is over with notifications/elicitation/complete, naming
// the elicitation's id; WithElicitationComplete hears it, over every transport.
func TestElicitationCompleteReachesItsHandler(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			asked := make(chan string, 1)
			completed := make(chan string, 1)
			c, err := client.Connect(ctx, tr.open(t), client.WithVersion(mcp.Version20251125),
				client.WithURLElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
					asked <- p.ElicitationID
					return &mcp.ElicitResult{Action: "accept"}, nil
				}),
				client.WithElicitationComplete(func(elicitationID string) { completed <- elicitationID }))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := c.CallTool(ctx, "visitdone", map[string]any{})
			if err != nil || res.IsError {
				t.Fatalf("visitdone: %v %#v", err, res)
			}
			id := <-asked
			select {
			case got := <-completed:
				if got != id || id == "" {
					t.Fatalf("completed %q, want the elicitation's id %q", got, id)
				}
			case <-ctx.Done():
				t.Fatal("notifications/elicitation/complete never reached the handler")
			}
		})
	}
}
