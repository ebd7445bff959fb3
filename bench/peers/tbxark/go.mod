// TBXark/mcp-proxy, a peer of BenchmarkGatewayHTTP (bench/gateway_test.go), which builds it
// with `go build github.com/TBXark/mcp-proxy` in this directory. It is a module of its own so
// that the proxy is built with the requirements it was released with (mcp-go v0.43.2): in
// bench/peers' module graph it would get that module's newer mcp-go. go.sum pins every hash.
module github.com/relayrt/relay/bench/peers/tbxark

go 1.24.0

tool github.com/TBXark/mcp-proxy

require (
	github.com/TBXark/mcp-proxy v0.43.2 // indirect
	github.com/TBXark/optional-go v0.0.1 // indirect
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.1 // indirect
	github.com/go-sphere/confstore v0.0.4 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/invopop/jsonschema v0.13.0 // indirect
	github.com/mailru/easyjson v0.9.0 // indirect
	github.com/mark3labs/mcp-go v0.43.2 // indirect
	github.com/spf13/cast v1.9.2 // indirect
	github.com/wk8/go-ordered-map/v2 v2.1.8 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/sync v0.19.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
