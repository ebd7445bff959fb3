package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// greeter is a tiny protocol: one method, "hello", answered by a request actor.
type greeter struct{}

func (greeter) Route(req *runtime.Request) runtime.Route {
	if req.Method != "hello" {
		return runtime.Route{Err: jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: "+req.Method)}
	}
	return runtime.Route{Handler: func(ctx context.Context, r *runtime.Request) (any, error) {
		var p struct{ Name string }
		json.Unmarshal(r.Params, &p)
		return "hello, " + p.Name, nil
	}}
}

func (greeter) Notification(string, json.RawMessage) {}

func ExampleServer_Connect() {
	srv := runtime.NewServer(runtime.Profile{
		NewSession: func(*runtime.Peer) runtime.Session { return greeter{} },
	})
	ctx := context.Background()
	conn := srv.Connect(ctx)
	defer conn.Close()

	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"hello","params":{"Name":"Ada"}}`))
	frame, _ := conn.Receive(ctx)
	fmt.Println(string(frame))
	// Output: {"jsonrpc":"2.0","id":1,"result":"hello, Ada"}
}
