// Package deploy holds a deployment of Relay behind a real load balancer: nginx.conf puts
// nginx in front of three instances, and the test starts all four on loopback and checks
// how requests are spread, pinned and streamed. kubernetes/ (a module of its own) holds a
// fleet on Kubernetes.
package deploy
