package main

import (
	"context"
	"fmt"
	"time"

	"github.com/relayrt/relay/mcp"
)

// The tools of the 0.2 suite's tasks-* scenarios (the io.modelcontextprotocol/tasks
// extension, SEP-2663). A 2026-07-28 client that declares the extension gets a task handle
// from the task-supporting ones and polls tasks/get; any other client gets their result in
// the request (slow_compute, confirm_delete, multi_input, protocol_error_job) or -32021
// (failing_job and test_tool_with_task, which require tasks). The handlers are plain tools:
// mcp.AsTask runs them as tasks unchanged, their questions to the client becoming the task's
// inputRequests.

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type slowArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to work, in seconds (0: at once)"`
	Label   string  `json:"label,omitempty" jsonschema:"a label to tell calls apart"`
}

type deleteArgs struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

// confirmDeleteSchema asks whether to go ahead.
var confirmDeleteSchema = objectSchema("confirm", "boolean")

func addTaskTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone, at once (never a task)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
			return mcp.TextResult("Hello, " + in.Name + "!"), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "slow_compute",
		Description: "Works for the given number of seconds, then answers; a task for clients that support tasks."},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, error) {
			if err := sleep(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
				return nil, err // cancelled: the task is cancelled, not failed
			}
			return mcp.TextResult(fmt.Sprintf("Computed %q in %gs", in.Label, in.Seconds)), nil
		}, mcp.AsTask(mcp.TaskOptional))

	mcp.AddTool(s, &mcp.Tool{Name: "failing_job",
		Description: "Works for a second, then fails with a tool error; runs only as a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			return mcp.ErrorResult("The job failed: the data it needed was not there."), nil
		}, mcp.AsTask(mcp.TaskRequired))

	mcp.AddTool(s, &mcp.Tool{Name: "protocol_error_job",
		Description: "Panics: its task fails with a JSON-RPC internal error, not a tool error."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			panic("protocol_error_job always panics")
		}, mcp.AsTask(mcp.TaskOptional))

	mcp.AddTool(s, &mcp.Tool{Name: "confirm_delete",
		Description: "Asks the user to confirm (elicitation), then deletes the file, or not. Nothing is deleted."},
		func(ctx context.Context, req *mcp.CallToolRequest, in deleteArgs) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Delete " + in.Filename + "?",
				RequestedSchema: confirmDeleteSchema}, mcp.InputKey("confirm_delete"))
			if err != nil {
				return nil, err
			}
			if res.Action != "accept" || res.Content["confirm"] != true {
				return mcp.TextResult("Kept " + in.Filename + " (" + res.Action + ")."), nil
			}
			return mcp.TextResult("Deleted " + in.Filename + "."), nil
		}, mcp.AsTask(mcp.TaskOptional))

	mcp.AddTool(s, &mcp.Tool{Name: "multi_input",
		Description: "Asks two questions at once (a name and a confirmation), then answers with both."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			name, errN := req.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema},
				mcp.InputKey("multi_name"))
			ok, errC := req.Elicit(ctx, &mcp.ElicitParams{Message: "Shall I go on?", RequestedSchema: confirmDeleteSchema},
				mcp.InputKey("multi_confirm"))
			if err := firstAskError(errN, errC); err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("Name: %s; confirmed: %s", field(name, "name"), field(ok, "confirm"))), nil
		}, mcp.AsTask(mcp.TaskOptional))

	// MRTR, then a task: the name is asked in the request (input_required rounds), and only
	// the work after it runs as a task.
	mcp.AddTool(s, &mcp.Tool{Name: "test_tool_with_task",
		Description: "Asks the user's name (input_required), then greets them from a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema},
				mcp.InputKey("user_name"))
			if err != nil {
				return nil, err
			}
			hello := greet(res)
			return req.StartTask(ctx, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if err := sleep(ctx, 200*time.Millisecond); err != nil {
					return nil, err
				}
				return hello, nil
			})
		}, mcp.StartsTask(mcp.TaskRequired))
}

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
