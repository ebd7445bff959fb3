package telemetry_test

import (
	"context"
	"fmt"
	"log"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/telemetry"
)

// A server that exports spans and metrics when OTEL_EXPORTER_OTLP_ENDPOINT is set, and runs
// without telemetry (a nil *Telemetry) when it is not, as here.
func ExampleFromEnv() {
	tel, err := telemetry.FromEnv(context.Background(), "my-server")
	if err != nil {
		log.Fatal(err)
	}
	defer tel.Shutdown(context.Background()) // flushes the last spans before the program exits

	s := mcp.NewServer(mcp.Implementation{Name: "my-server", Version: "1.0.0"}, nil)
	srv := s.Runtime(tel.Option(telemetry.MCP)) // serve it: stdio.ServeStdio(ctx, srv)
	fmt.Println(srv != nil, tel == nil)
	// Output: true true
}
