package mcp_test

import (
	"testing"

	"github.com/relayrt/relay/internal/storetest"
	"github.com/relayrt/relay/mcp"
)

// TestMemoryTaskStore: the memory store passes the suite every TaskStore passes (package
// fleet's Redis store runs it too).
func TestMemoryTaskStore(t *testing.T) {
	storetest.TaskStore(t, func(_ *testing.T, o storetest.TaskOptions) storetest.Tasks {
		st := mcp.NewMemoryTaskStore(&mcp.MemoryTaskStoreOptions{
			MaxTasks: o.MaxTasks, MaxPerPrincipal: o.MaxPerPrincipal, MaxBytes: o.MaxBytes, Now: o.Now})
		return storetest.Tasks{Store: st, Len: st.Len}
	})
}

func TestTaskStatus_Terminal(t *testing.T) {
	for s, want := range map[mcp.TaskStatus]bool{mcp.TaskWorking: false, mcp.TaskInputRequired: false,
		mcp.TaskCompleted: true, mcp.TaskFailed: true, mcp.TaskCancelled: true} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", s, !want)
		}
	}
}
