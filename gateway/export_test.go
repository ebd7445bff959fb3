package gateway

// TaskIDFor returns the task id the gateway hands out to the host principal for the task
// own of the upstream named name, for tests that name a task no upstream ever made.
func (g *Gateway) TaskIDFor(principal, name, own string) string {
	return g.taskID(principal, name, own)
}
