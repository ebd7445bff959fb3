module github.com/relayrt/relay

go 1.26

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/oklog/run v1.2.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
)

require (
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
