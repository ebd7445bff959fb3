package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp/client"
	"github.com/relayrt/relay/runtime"
)

// A task the gateway hands out is its host's (mcp.TaskPrincipal: the principal the
// transport authenticated): another host that presents its id is told it does not know it,
// as a server that binds tasks to their principal answers, although both reach the upstream
// as the gateway.
func TestGateway_ATaskIsFollowedOnlyByTheHostThatStartedIt(t *testing.T) {
	f := twoServers(t, "")
	url := serveAuthenticated(t, f)
	as := func(who string) *client.Client {
		return connect(t, &client.HTTPTransport{URL: url, Header: http.Header{"Authorization": {"Bearer " + who}}})
	}
	alice, bob := as("alice"), as("bob")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	task, err := alice.StartTool(ctx, "ev__slow_compute", map[string]float64{"seconds": 0.2})
	if err != nil {
		t.Fatal(err)
	}
	var je *jsonrpc.Error
	if _, err := bob.GetTask(ctx, task.ID); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("another host's tasks/get of alice's task: %v, want -32602 unknown task", err)
	}
	if _, err := bob.Call(ctx, "tasks/cancel", mustParams(map[string]string{"taskId": task.ID})); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("another host's tasks/cancel of alice's task: %v, want -32602 unknown task", err)
	}
	if r, err := task.Wait(ctx); err != nil || r.IsError || text(r) == "" {
		t.Errorf("alice follows her task to its end: %+v %v", r, err)
	}
}

func mustParams(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// serveAuthenticated serves the gateway over Streamable HTTP on 127.0.0.1, where a bearer
// token is the principal's name.
func serveAuthenticated(t *testing.T, f *fixture) string {
	return serveHTTPWith(t, f.g.Server(), &httpx.MCPOptions{
		Authenticator: func(r *http.Request) (*runtime.Principal, error) {
			who, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok {
				return nil, errors.New("no token")
			}
			return &runtime.Principal{ID: who}, nil
		}})
}
