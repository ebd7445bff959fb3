package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/relayrt/relay/mcp"
)

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

// A server with one tool, called in memory by a 2026-07-28 client.
func ExampleAddTool() {
	s := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Say hello."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
			return mcp.TextResult("hello, " + in.Name), nil
		})

	ctx := context.Background()
	conn := s.Runtime().Connect(ctx) // in memory; stdio.ServeStdio(ctx, s.Runtime()) serves a process
	defer conn.Close()
	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	reply, _ := conn.Receive(ctx)
	fmt.Println(string(reply))
	// Output: {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"greeter","version":"1.0.0"}},"content":[{"type":"text","text":"hello, Ada"}]}}
}

// The same server answers a client of the initialize generation.
func ExampleServer_legacy() {
	s := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	ctx := context.Background()
	conn := s.Runtime().Connect(ctx)
	defer conn.Close()
	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`))
	reply, _ := conn.Receive(ctx)
	fmt.Println(string(reply))
	// Output: {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"logging":{}},"serverInfo":{"name":"greeter","version":"1.0.0"}}}
}

// A server that publishes a skill (the Skills extension, SEP-2640): skills/list gives its
// SKILL.md's frontmatter and a manifest of its files, each with a digest and a size the host
// checks what it reads against; every file reads with resources/read.
func ExampleServer_AddSkill() {
	s := mcp.NewServer(mcp.Implementation{Name: "billing", Version: "1.0.0"}, nil)
	err := s.AddSkill(&mcp.Skill{Path: "acme/refunds", Files: map[string][]byte{
		"SKILL.md":          []byte("---\nname: refunds\ndescription: Refund an order per policy.\n---\nCheck the order is under 30 days old.\n"),
		"examples/email.md": []byte("Your refund is on its way.\n"),
	}})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	conn := s.Runtime().Connect(ctx)
	defer conn.Close()
	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"skills/list","params":{`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	reply, _ := conn.Receive(ctx)
	var r struct {
		Result struct {
			Skills []struct {
				URI         string
				Frontmatter map[string]string
				Resources   []struct {
					URI    string
					Digest string
					Size   int
				}
			}
		}
	}
	json.Unmarshal(reply, &r)
	for _, sk := range r.Result.Skills {
		fmt.Println(sk.URI, "-", sk.Frontmatter["name"]+":", sk.Frontmatter["description"])
		for _, f := range sk.Resources {
			fmt.Println(" ", f.URI, f.Size, "bytes", f.Digest[:15]+"…")
		}
	}
	// Output:
	// skill://acme/refunds/SKILL.md - refunds: Refund an order per policy.
	//   skill://acme/refunds/SKILL.md 101 bytes sha256:c10a1c1f…
	//   skill://acme/refunds/examples/email.md 27 bytes sha256:649027fa…
}

// A tool whose calls run as tasks: the client that declares the tasks extension gets a task
// handle at once, and polls tasks/get for the result.
func ExampleAsTask() {
	s := mcp.NewServer(mcp.Implementation{Name: "reports", Version: "1.0.0"}, nil)
	defer s.Close() // stops the tasks still running
	mcp.AddTool(s, &mcp.Tool{Name: "report", Description: "Build the monthly report."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			time.Sleep(20 * time.Millisecond) // the work
			return mcp.TextResult("the report is ready"), nil
		}, mcp.AsTask(mcp.TaskOptional))

	ctx := context.Background()
	conn := s.Runtime().Connect(ctx)
	defer conn.Close()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	call := func(id int, method, params string) (res struct {
		ResultType, TaskID, Status string
		Result                     json.RawMessage
	}) {
		conn.Send(ctx, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)))
		reply, _ := conn.Receive(ctx)
		var frame struct{ Result json.RawMessage }
		json.Unmarshal(reply, &frame)
		json.Unmarshal(frame.Result, &res)
		return res
	}

	task := call(1, "tools/call", `{"name":"report",`+meta+`}`)
	fmt.Println("tools/call:", task.ResultType, task.Status)
	for id := 2; ; id++ {
		got := call(id, "tasks/get", `{"taskId":"`+task.TaskID+`",`+meta+`}`)
		if got.Status == "completed" {
			fmt.Println("tasks/get:", got.Status, string(got.Result))
			break
		}
		time.Sleep(5 * time.Millisecond) // a client honours pollIntervalMs
	}
	// Output:
	// tools/call: task working
	// tasks/get: completed {"content":[{"type":"text","text":"the report is ready"}]}
}
