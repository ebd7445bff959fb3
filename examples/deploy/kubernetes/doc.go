// Package kubernetes holds a deployment of a Relay fleet on Kubernetes (relay.yaml): three
// replicas of examples/everything behind a Service, sharing a state key from a Secret and a
// Redis. It is a module of its own, so that Relay's module does not take the Kubernetes API
// types its test decodes the manifest into.
package kubernetes
