package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

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
