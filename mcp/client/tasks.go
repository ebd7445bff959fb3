package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// Tasks (io.modelcontextprotocol/tasks, SEP-2663): under 2026-07-28 the client declares the
// extension, so a server may answer a tools/call with a task instead of its result. CallTool
// then waits for the task as if the call had lasted that long; StartTool hands the task
// over instead, for a caller that wants to poll it itself, or leave it running.

// Task is a tool call the server runs as a task. Its fields are what the server said of it
// last: Refresh asks again.
type Task struct {
	ID            string
	Status        string // "working", "input_required", "completed", "failed" or "cancelled"
	StatusMessage string
	// PollInterval is how often the server suggests asking, held within minPollInterval
	// (50 ms) and maxPollInterval (30 s): Wait's pace (0, when the server suggests nothing:
	// one second).
	PollInterval time.Duration

	c             *Client
	result        json.RawMessage // completed: the tool's result
	failure       *jsonrpc.Error  // failed: why
	inputRequests map[string]inputRequest
}

// ErrTaskCancelled is what waiting for a cancelled task returns.
var ErrTaskCancelled = errors.New("mcp/client: the task was cancelled")

// taskWire is a task on the wire: a CreateTaskResult's members, or tasks/get's.
type taskWire struct {
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage"`
	PollIntervalMs int64                   `json:"pollIntervalMs"`
	InputRequests  map[string]inputRequest `json:"inputRequests"`
	Result         json.RawMessage         `json:"result"`
	Error          *jsonrpc.Error          `json:"error"`
}

func (t *Task) take(raw json.RawMessage) error {
	var w taskWire
	if err := json.Unmarshal(raw, &w); err != nil || w.TaskID == "" {
		return fmt.Errorf("mcp/client: a task that does not decode (%v): %.200s", err, raw)
	}
	t.ID, t.Status, t.StatusMessage = w.TaskID, w.Status, w.StatusMessage
	t.PollInterval = pollInterval(w.PollIntervalMs)
	t.result, t.failure, t.inputRequests = w.Result, w.Error, w.InputRequests
	return nil
}

// The range a server's suggested poll interval is held within. Below 50 ms a client polls a
// server (and its task store) twenty times a second or more for one task, for results that
// take a person or a model seconds to produce; above 30 s, Wait learns of a task's end up
// to that long after it, and an absurd suggestion (hours, or pollIntervalMs past what a
// time.Duration holds) would hold it indefinitely. Within them, the server's word is kept.
const (
	minPollInterval = 50 * time.Millisecond
	maxPollInterval = 30 * time.Second
)

// pollInterval is the interval pollIntervalMs suggests, held within the range; 0 when the
// server suggests nothing.
func pollInterval(ms int64) time.Duration {
	switch {
	case ms <= 0:
		return 0
	case ms >= maxPollInterval.Milliseconds():
		return maxPollInterval
	}
	return max(time.Duration(ms)*time.Millisecond, minPollInterval)
}

// StartTool calls the tool name as a task and returns it without waiting. A server that
// runs the call at once (the tool does not support tasks) gives a task already completed.
func (c *Client) StartTool(ctx context.Context, name string, args any, opts ...CallOption) (*Task, error) {
	res, err := c.callTool(ctx, name, args, opts, nil)
	if err != nil {
		return nil, err
	}
	t := &Task{c: c}
	if rt, _ := resultType(res); rt != "task" {
		t.Status, t.result = "completed", res
		return t, nil
	}
	return t, t.take(res)
}

// GetTask asks the server for the task id (tasks/get), as the caller that made it.
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	t := &Task{ID: id, c: c}
	return t, t.Refresh(ctx)
}

// Refresh asks the server for the task's state (tasks/get).
func (t *Task) Refresh(ctx context.Context) error {
	res, err := t.c.call(ctx, request{method: "tasks/get", params: map[string]any{"taskId": t.ID}, name: t.ID})
	if err != nil {
		return err
	}
	return t.take(res)
}

// Cancel asks the server to stop the task (tasks/cancel).
func (t *Task) Cancel(ctx context.Context) error {
	_, err := t.c.call(ctx, request{method: "tasks/cancel", params: map[string]any{"taskId": t.ID}, name: t.ID})
	return err
}

// Wait polls the task, at the pace the server suggests, until it ends, and returns the
// tool's result. What the task asks of the client meanwhile (input_required) is answered
// through the client's handlers with tasks/update. A failed task is its error (a
// *jsonrpc.Error), a cancelled one ErrTaskCancelled. When ctx ends first, Wait returns
// ctx's error and the task goes on.
func (t *Task) Wait(ctx context.Context) (*mcp.CallToolResult, error) {
	res, err := t.wait(ctx)
	if err != nil {
		return nil, err
	}
	return decodeToolResult(res)
}

// wait is Wait, returning the tool's raw result.
func (t *Task) wait(ctx context.Context) (json.RawMessage, error) {
	for {
		switch t.Status {
		case "completed":
			return t.result, nil
		case "failed":
			if t.failure != nil {
				return nil, t.failure
			}
			return nil, fmt.Errorf("mcp/client: task %s failed: %s", t.ID, t.StatusMessage)
		case "cancelled":
			return nil, ErrTaskCancelled
		case "input_required":
			if err := t.answer(ctx); err != nil {
				return nil, err
			}
		default:
			pace := t.PollInterval
			if pace <= 0 {
				pace = time.Second
			}
			timer := time.NewTimer(pace)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return nil, ctx.Err()
			}
		}
		if err := t.Refresh(ctx); err != nil {
			return nil, err
		}
	}
}

// answer answers the task's questions through the client's handlers (tasks/update).
func (t *Task) answer(ctx context.Context) error {
	answers := make(map[string]json.RawMessage, len(t.inputRequests))
	for key, q := range t.inputRequests {
		a, err := t.c.answerOne(ctx, q)
		if err != nil {
			return err
		}
		answers[key] = a
	}
	_, err := t.c.call(ctx, request{method: "tasks/update", params: map[string]any{"taskId": t.ID, "inputResponses": answers}, name: t.ID})
	return err
}

// waitOrCancel waits for a task CallTool was answered with, as if the call lasted that long:
// when ctx ends first the task is cancelled, as the call's cancellation would have been.
func (t *Task) waitOrCancel(ctx context.Context) (*mcp.CallToolResult, error) {
	res, err := t.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		t.Cancel(cctx)
		cancel()
	}
	return res, err
}
