// Package storetest holds the behavioural tests that every implementation of the state a
// Relay server keeps, or a fleet of them shares, must pass: httpx.EventStore,
// httpx.SessionStore, mcp.TaskStore and mcp.Bus. The memory implementations and the Redis
// ones run the same suites, so that switching a server to a shared store changes where its
// state lives, not how it behaves.
package storetest
