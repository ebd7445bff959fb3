// Package deploy holds a deployment of Relay behind a real load balancer: nginx.conf puts
// nginx in front of three instances, and the test starts all four on loopback and checks
// how requests are spread, pinned and streamed. fleet/ holds a fleet that needs no affinity:
// nginx round-robin over three instances sharing one Redis (fleet.sh starts one by hand).
// kubernetes/ (a module of its own) holds a fleet on Kubernetes.
package deploy
